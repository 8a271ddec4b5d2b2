package delivery

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"roomhub/hub"
	"roomhub/internal/strictjson"
)

// Rule says when one channel reaches a recipient of an event.
type Rule struct {
	AfterSecs     int    `json:"afterSecs"`               // wait this long after the event (0..604800)
	Unless        string `json:"unless,omitempty"`        // seen, read or none (""): canceled if the item gets there first
	OnlyIfOffline bool   `json:"onlyIfOffline,omitempty"` // skipped if the user has any stream open when due
	DigestSecs    int    `json:"digestSecs,omitempty"`    // deliveries due within this window go out as one (0..86400)
}

// Rules are the rules of one event type, by channel.
type Rules map[string]Rule

// Bounds of a rule's numbers, in seconds.
const (
	MaxAfterSecs        = 604800
	MaxDigestSecs       = 86400
	DefaultDedupeWindow = 86400
	MaxDedupeWindow     = 604800
)

// dedupeKeyRE is what a dedupeKey may look like.
var dedupeKeyRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// check validates rules against the configured channels.
func (rs Rules) check(cfg Config) error {
	for ch, r := range rs {
		if !cfg.On(ch) {
			return fmt.Errorf("channel %q is not in DELIVERY_CHANNELS", ch)
		}
		switch r.Unless {
		case "", "none", "seen", "read":
		default:
			return fmt.Errorf("%s: unless must be seen, read or none", ch)
		}
		if r.AfterSecs < 0 || r.AfterSecs > MaxAfterSecs {
			return fmt.Errorf("%s: afterSecs must be 0 to %d", ch, MaxAfterSecs)
		}
		if r.DigestSecs < 0 || r.DigestSecs > MaxDigestSecs {
			return fmt.Errorf("%s: digestSecs must be 0 to %d", ch, MaxDigestSecs)
		}
	}
	return nil
}

// ParseRules reads DELIVERY_RULES (JSON text, or @path to a file): event
// type → channel → rule. Every channel must be on in cfg, every event type
// publishable in core.
func ParseRules(text string, cfg Config, core hub.Config) (map[string]Rules, error) {
	if text == "" {
		return map[string]Rules{}, nil
	}
	b := []byte(text)
	if path, ok := strings.CutPrefix(text, "@"); ok {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	}
	var all map[string]Rules
	if err := strictjson.Decode(b, &all); err != nil {
		return nil, fmt.Errorf("not the rules' JSON: %v", err)
	}
	for typ, rs := range all {
		if typ != AnyType && !core.Publishable(typ) {
			return nil, fmt.Errorf("event type %q is not publishable (EVENT_TYPES)", typ)
		}
		if err := rs.check(cfg); err != nil {
			return nil, fmt.Errorf("%s: %v", typ, err)
		}
	}
	return all, nil
}

// AnyType is the DELIVERY_RULES key whose rules are those of every event
// type without an entry of its own.
const AnyType = "*"

// rulesOf is eventType's rules: its own entry, else "*"'s.
func (d *Delivery) rulesOf(eventType string) Rules {
	if rs, ok := d.rules[eventType]; ok {
		return rs
	}
	return d.rules[AnyType]
}

// unselected is the channels on that no rule selects: nothing goes out on
// them unless a publish's own delivery field names them.
func unselected(rules map[string]Rules, channels []string) []string {
	var out []string
	for _, ch := range channels {
		selected := false
		for _, rs := range rules {
			if _, ok := rs[ch]; ok {
				selected = true
				break
			}
		}
		if !selected {
			out = append(out, ch)
		}
	}
	return out
}

// Cap bounds hand-offs per user and channel in sliding windows (0: none).
type Cap struct {
	PerHour int `json:"perHour"`
	PerDay  int `json:"perDay"`
}

// ParseCaps reads DELIVERY_CAPS: channel → cap.
func ParseCaps(text string, cfg Config) (map[string]Cap, error) {
	caps := map[string]Cap{}
	if text == "" {
		return caps, nil
	}
	if err := strictjson.Decode([]byte(text), &caps); err != nil {
		return nil, fmt.Errorf("not the caps' JSON: %v", err)
	}
	for ch, c := range caps {
		if !cfg.On(ch) {
			return nil, fmt.Errorf("channel %q is not in DELIVERY_CHANNELS", ch)
		}
		if c.PerHour < 0 || c.PerDay < 0 {
			return nil, fmt.Errorf("%s: perHour and perDay must not be negative", ch)
		}
	}
	return caps, nil
}

// Options are what a publish says of its recipients' deliveries.
type Options struct {
	// Delivery replaces the configured rules of the event type for this
	// publish (nil: the configured ones; {}: none).
	Delivery         *Rules `json:"delivery,omitempty"`
	DedupeKey        string `json:"dedupeKey,omitempty"`
	DedupeWindowSecs int    `json:"dedupeWindowSecs,omitempty"`
}

// Set reports whether any option is given.
func (o Options) Set() bool {
	return o.Delivery != nil || o.DedupeKey != "" || o.DedupeWindowSecs != 0
}

// ParseOverride reads a publish's delivery field (one event type's entry).
func ParseOverride(raw json.RawMessage) (Rules, error) {
	var rs Rules
	if err := strictjson.Decode(raw, &rs); err != nil || rs == nil {
		return nil, fmt.Errorf("%w: delivery must be an object of channel → {afterSecs, unless, onlyIfOffline, digestSecs}", hub.ErrInvalid)
	}
	return rs, nil
}

// Plan is what lua/delivery_schedule.lua takes to schedule a publish's
// deliveries (ScheduleArgs): the rules as JSON, the dedupe key and its
// window, and the channels in order. An empty plan schedules nothing.
type Plan struct {
	JSON         string
	DedupeKey    string
	DedupeWindow int
	Channels     []string
	keysTTL      string // how long the delivery keys live after a write, ms
}

// ScheduleKeys are a recipient's keys as lua/delivery_schedule.lua takes
// them, after the recipient's inbox keys in lua/inbox_add.lua.
func ScheduleKeys(user int64) []string {
	return []string{RecordsKey(user), DueKey(user)}
}

// ScheduleArgs are the arguments lua/delivery_schedule.lua takes (its
// schedule_plan), for a publish whose trace is traceparent ("" when not
// sampled): an empty plan's first is "".
func (p Plan) ScheduleArgs(traceparent string) []string {
	if p.Empty() {
		return []string{"", "", "0", "", ""}
	}
	return []string{p.JSON, p.DedupeKey, strconv.Itoa(p.DedupeWindow), p.keysTTL, traceparent}
}

// Empty reports whether the plan schedules nothing.
func (p Plan) Empty() bool { return len(p.Channels) == 0 }

// Plan returns the deliveries a publish of eventType with o schedules for
// each recipient, or an error wrapping hub.ErrInvalid for bad options.
func (d *Delivery) Plan(eventType string, o Options) (Plan, error) {
	if o.DedupeKey == "" && o.DedupeWindowSecs != 0 {
		return Plan{}, fmt.Errorf("%w: dedupeWindowSecs goes with dedupeKey", hub.ErrInvalid)
	}
	if o.DedupeKey != "" && !dedupeKeyRE.MatchString(o.DedupeKey) {
		return Plan{}, fmt.Errorf("%w: dedupeKey is 1 to 128 bytes of [A-Za-z0-9_.:-]", hub.ErrInvalid)
	}
	if o.DedupeWindowSecs < 0 || o.DedupeWindowSecs > MaxDedupeWindow {
		return Plan{}, fmt.Errorf("%w: dedupeWindowSecs must be 1 to %d", hub.ErrInvalid, MaxDedupeWindow)
	}
	rules := d.rulesOf(eventType)
	if o.Delivery != nil {
		if err := o.Delivery.check(d.cfg); err != nil {
			return Plan{}, fmt.Errorf("%w: delivery: %v", hub.ErrInvalid, err)
		}
		rules = *o.Delivery
	}
	p := Plan{DedupeKey: o.DedupeKey, DedupeWindow: o.DedupeWindowSecs, keysTTL: d.keysTTLArg}
	if p.DedupeWindow == 0 {
		p.DedupeWindow = DefaultDedupeWindow
	}
	if len(rules) == 0 {
		return p, nil
	}
	type step struct {
		C string `json:"c"`
		A int    `json:"a"`
		U string `json:"u"`
		O int    `json:"o"`
		D int    `json:"d"`
	}
	steps := make([]step, 0, len(rules))
	for ch, r := range rules {
		s := step{C: ch, A: r.AfterSecs, U: r.Unless, D: r.DigestSecs}
		if s.U == "" {
			s.U = "none"
		}
		if r.OnlyIfOffline {
			s.O = 1
		}
		steps = append(steps, s)
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].C < steps[j].C })
	for _, s := range steps {
		p.Channels = append(p.Channels, s.C)
	}
	b, _ := json.Marshal(steps)
	p.JSON = string(b)
	return p, nil
}
