package inbox

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"roomhub/hub"
)

// Item states a filter selects. unread, unseen and read select among the
// visible items: neither archived nor snoozed (nor expired or deleted,
// which are gone).
const (
	StateVisible  = "visible"
	StateUnread   = "unread"
	StateUnseen   = "unseen"
	StateRead     = "read"
	StateArchived = "archived"
	StateSnoozed  = "snoozed"
	StateAll      = "all"
)

var states = []string{StateVisible, StateUnread, StateUnseen, StateRead, StateArchived, StateSnoozed, StateAll}

// Severities an item may have; "normal" when a publish gives none.
var Severities = []string{"low", "normal", "high", "critical"}

// tagRE is what a tag may look like: safe inside JSON quotes and Redis fields.
var tagRE = regexp.MustCompile(`^[a-z0-9_.:-]{1,32}$`)

func checkTag(t string) error {
	if !tagRE.MatchString(t) {
		return fmt.Errorf("%w: a tag is 1 to 32 bytes of [a-z0-9_.:-]", hub.ErrInvalid)
	}
	return nil
}

func checkSeverity(s string) error {
	if !slices.Contains(Severities, s) {
		return fmt.Errorf("%w: severity must be one of %s", hub.ErrInvalid, strings.Join(Severities, ", "))
	}
	return nil
}

// maxFilterValues bounds the tags (or severities) one filter names.
const maxFilterValues = 32

// Filter selects items of a user's inbox: all of its fields must hold; an
// empty one holds for every item.
type Filter struct {
	State      string   `json:"state,omitempty"`    // default visible
	Tags       []string `json:"tags,omitempty"`     // any of them
	Severities []string `json:"severity,omitempty"` // any of them
	EventType  string   `json:"eventType,omitempty"`
	RoomID     int64    `json:"roomId,omitempty"`
}

// Check validates f and fills in its default state.
func (f *Filter) Check() error {
	if f.State == "" {
		f.State = StateVisible
	}
	if !slices.Contains(states, f.State) {
		return fmt.Errorf("%w: state must be one of %s", hub.ErrInvalid, strings.Join(states, ", "))
	}
	if len(f.Tags) > maxFilterValues || len(f.Severities) > maxFilterValues {
		return fmt.Errorf("%w: a filter names at most %d tags and %d severities", hub.ErrInvalid, maxFilterValues, maxFilterValues)
	}
	for _, t := range f.Tags {
		if err := checkTag(t); err != nil {
			return err
		}
	}
	for _, s := range f.Severities {
		if err := checkSeverity(s); err != nil {
			return err
		}
	}
	if f.EventType != "" && !hub.ValidEventTypeName(f.EventType) {
		return fmt.Errorf("%w: eventType is lowercase [a-z0-9_.-], at most 64 bytes", hub.ErrInvalid)
	}
	if f.RoomID < 0 {
		return fmt.Errorf("%w: roomId must be a positive integer", hub.ErrInvalid)
	}
	return nil
}

// args are the filter as the inbox scripts take it (see filter_at in
// lua/inbox_filter.lua).
func (f Filter) args() []string {
	room := ""
	if f.RoomID > 0 {
		room = strconv.FormatInt(f.RoomID, 10)
	}
	return []string{f.State, strings.Join(f.Tags, ","), strings.Join(f.Severities, ","), f.EventType, room}
}

// json is the filter as notification.updated names it when it changed too
// many items to list.
func (f Filter) json() string {
	b, _ := json.Marshal(f)
	return string(b)
}
