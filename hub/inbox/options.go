package inbox

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"roomhub/hub"
	"roomhub/hub/delivery"
)

// Options are what a publish says of its recipients' inbox items.
type Options struct {
	Severity  string     `json:"severity,omitempty"`  // low, normal (""), high, critical
	Tags      []string   `json:"tags,omitempty"`      // at most MaxTags distinct
	ExpiresAt *time.Time `json:"expiresAt,omitempty"` // the item leaves lists and counts then
	// GroupKey makes the event join the recipient's open group of the key
	// (see lua/inbox_add.lua), GroupWindowSecs after the group's first event
	// (default 3600).
	GroupKey        string `json:"groupKey,omitempty"`
	GroupWindowSecs int    `json:"groupWindowSecs,omitempty"`
	// Delivery beyond the tab: the publish's rules, dedupe key and window.
	delivery.Options
}

// groupKeyRE is what a groupKey may look like.
var groupKeyRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// Group window bounds, in seconds.
const (
	DefaultGroupWindowSecs = 3600
	MaxGroupWindowSecs     = 86400
)

// MaxRecipients bounds recipientIds: distinct users one publish notifies.
const MaxRecipients = 10000

// MaxTags bounds the distinct tags of one item.
const MaxTags = 8

// set reports whether any option is given.
func (o Options) set() bool {
	return o.Severity != "" || len(o.Tags) > 0 || o.ExpiresAt != nil || o.GroupKey != "" || o.GroupWindowSecs != 0 ||
		o.Options.Set()
}

// check validates o (the retention bounds expiresAt) and returns it with its
// tags distinct, in the order given.
func (o Options) check(retention time.Duration) (Options, error) {
	if o.Severity != "" {
		if err := checkSeverity(o.Severity); err != nil {
			return o, err
		}
	}
	var tags []string
	for _, t := range o.Tags {
		if err := checkTag(t); err != nil {
			return o, err
		}
		if slices.Contains(tags, t) {
			continue
		}
		// Refused at the first tag too many: the search above stays over
		// MaxTags entries, so any number of tags costs linear time.
		if len(tags) == MaxTags {
			return o, fmt.Errorf("%w: at most %d distinct tags", hub.ErrInvalid, MaxTags)
		}
		tags = append(tags, t)
	}
	o.Tags = tags
	switch {
	case o.GroupKey == "" && o.GroupWindowSecs != 0:
		return o, fmt.Errorf("%w: groupWindowSecs goes with groupKey", hub.ErrInvalid)
	case o.GroupKey != "" && !groupKeyRE.MatchString(o.GroupKey):
		return o, fmt.Errorf("%w: groupKey is 1 to 64 bytes of [A-Za-z0-9_.:-]", hub.ErrInvalid)
	case o.GroupWindowSecs < 0 || o.GroupWindowSecs > MaxGroupWindowSecs:
		return o, fmt.Errorf("%w: groupWindowSecs must be 1 to %d", hub.ErrInvalid, MaxGroupWindowSecs)
	}
	if o.ExpiresAt != nil {
		now := time.Now()
		if !o.ExpiresAt.After(now) || !o.ExpiresAt.Before(now.Add(retention)) {
			return o, fmt.Errorf("%w: expiresAt must lie in the future, before the inbox retention ends", hub.ErrInvalid)
		}
	}
	return o, nil
}

// fields are the options as lua/inbox_add.lua takes them: severity, tags
// (comma separated) and expiresAt ("" when none).
func (o Options) fields() (sev, tags, exp string) {
	sev = o.Severity
	if sev == "" {
		sev = "normal"
	}
	if o.ExpiresAt != nil {
		exp = o.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return sev, strings.Join(o.Tags, ","), exp
}

// plain reports whether o asks nothing of an item but the defaults: no
// severity but normal, no tags, expiry or group (inbox_add_plain.lua).
func (o Options) plain() bool {
	return (o.Severity == "" || o.Severity == "normal") && len(o.Tags) == 0 && o.ExpiresAt == nil && o.GroupKey == ""
}

// body is the options as part of a publish's idempotency body; "" when none
// is set, so that a publish without them hashes as it always did.
func (o Options) body() string {
	if !o.set() {
		return ""
	}
	b, _ := json.Marshal(o)
	return "\x00" + string(b)
}
