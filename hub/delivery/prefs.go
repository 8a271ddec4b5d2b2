package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"
	_ "time/tzdata" // quiet hours in any IANA zone, in a distroless image too

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// ChannelPrefs are a user's preferences for one channel.
type ChannelPrefs struct {
	Enabled         bool     `json:"enabled"`
	MutedEventTypes []string `json:"mutedEventTypes"`
}

// QuietHours are when a user is not to be reached (but for severity
// critical): from start to end, local times in their zone; start after end
// spans midnight.
type QuietHours struct {
	Start    string `json:"start"`
	End      string `json:"end"`
	TimeZone string `json:"timeZone"`
}

// Prefs are a user's delivery preferences: every configured channel, and
// quiet hours (nil when none).
type Prefs struct {
	Channels   map[string]ChannelPrefs `json:"channels"`
	QuietHours *QuietHours             `json:"quietHours"`
}

// quietField is the settings hash's field of the quiet hours.
const quietField = "quiet"

// clockRE is a local time of day, "HH:MM".
var clockRE = regexp.MustCompile(`^([01][0-9]|2[0-3]):([0-5][0-9])$`)

// minutes reads "HH:MM" as minutes after midnight.
func minutes(s string) (int, bool) {
	m := clockRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	h, _ := strconv.Atoi(m[1])
	mm, _ := strconv.Atoi(m[2])
	return h*60 + mm, true
}

// check validates q and returns its zone.
func (q QuietHours) check() (*time.Location, error) {
	s, ok1 := minutes(q.Start)
	e, ok2 := minutes(q.End)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: quietHours start and end are HH:MM", hub.ErrInvalid)
	}
	if s == e {
		return nil, fmt.Errorf("%w: quietHours start and end must differ", hub.ErrInvalid)
	}
	if q.TimeZone == "" || q.TimeZone == "Local" {
		return nil, fmt.Errorf("%w: quietHours timeZone is an IANA zone, e.g. Asia/Seoul", hub.ErrInvalid)
	}
	loc, err := time.LoadLocation(q.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("%w: quietHours timeZone %q is not an IANA zone", hub.ErrInvalid, q.TimeZone)
	}
	return loc, nil
}

// EndAfter returns when the quiet hours that hold at now end, or the zero
// time when now is outside them. Times are wall clock in the zone: across a
// DST change the hours keep their local times.
func (q QuietHours) EndAfter(now time.Time) time.Time {
	loc, err := q.check()
	if err != nil {
		return time.Time{}
	}
	s, _ := minutes(q.Start)
	e, _ := minutes(q.End)
	t := now.In(loc)
	m := t.Hour()*60 + t.Minute()
	at := func(day time.Time, mins int) time.Time {
		return time.Date(day.Year(), day.Month(), day.Day(), mins/60, mins%60, 0, 0, loc)
	}
	switch {
	case s < e && m >= s && m < e:
		return at(t, e)
	case s > e && m >= s:
		return at(t.AddDate(0, 0, 1), e)
	case s > e && m < e:
		return at(t, e)
	}
	return time.Time{}
}

// quietEnd is the end of user's quiet hours as the claim takes it (ms), or
// "" when now is outside them.
func (d *Delivery) quietEnd(ctx context.Context, user int64, now time.Time) (string, error) {
	raw, err := hub.Call(d.rdb, ctx, d.rdb.B().Hget().Key(ChannelSettingsKey(user)).Field(quietField).Build(), stringOrEmpty)
	if err != nil || raw == "" {
		return "", err
	}
	var q QuietHours
	if json.Unmarshal([]byte(raw), &q) != nil {
		return "", nil
	}
	end := q.EndAfter(now)
	if end.IsZero() {
		return "", nil
	}
	return itoa(end.UnixMilli()), nil
}

// stringOrEmpty reads a string reply, "" for a nil one.
func stringOrEmpty(r rueidis.RedisResult) (string, error) {
	s, err := r.ToString()
	if rueidis.IsRedisNil(err) {
		return "", nil
	}
	return s, err
}

// Prefs returns user's delivery preferences: every configured channel (a
// channel never set is enabled, nothing muted).
func (d *Delivery) Prefs(ctx context.Context, user int64) (Prefs, error) {
	all, err := hub.Call(d.rdb, ctx, d.rdb.B().Hgetall().Key(ChannelSettingsKey(user)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return Prefs{}, err
	}
	p := Prefs{Channels: map[string]ChannelPrefs{}}
	for _, ch := range d.cfg.Channels {
		c := ChannelPrefs{Enabled: true, MutedEventTypes: []string{}}
		if raw, ok := all[ch]; ok {
			_ = json.Unmarshal([]byte(raw), &c)
			if c.MutedEventTypes == nil {
				c.MutedEventTypes = []string{}
			}
		}
		p.Channels[ch] = c
	}
	if raw, ok := all[quietField]; ok {
		var q QuietHours
		if json.Unmarshal([]byte(raw), &q) == nil {
			p.QuietHours = &q
		}
	}
	return p, nil
}

// ChannelUpdate is a PUT's preferences for one channel; enabled left out
// means enabled.
type ChannelUpdate struct {
	Enabled         *bool    `json:"enabled"`
	MutedEventTypes []string `json:"mutedEventTypes"`
}

// PrefsUpdate is a PUT's delivery part: each field given replaces the
// stored one (channels: each channel given; quietHours: null clears).
type PrefsUpdate struct {
	Channels       map[string]ChannelUpdate
	QuietHours     *QuietHours
	QuietHoursSet  bool // quietHours was in the body (null clears)
	MaxMutedPerOne int  // bound of each channel's muted types
}

// CheckPrefs validates u without applying it.
func (d *Delivery) CheckPrefs(u PrefsUpdate) error {
	_, err := d.prefsCommands(0, u)
	return err
}

// SetPrefs applies u to user's preferences and returns them all.
func (d *Delivery) SetPrefs(ctx context.Context, user int64, u PrefsUpdate) (Prefs, error) {
	cmds, err := d.prefsCommands(user, u)
	if err != nil {
		return Prefs{}, err
	}
	if len(cmds) > 0 {
		ctx, cancel := hub.Detach(ctx)
		defer cancel()
		if err := hub.CallMany(d.rdb, ctx, cmds); err != nil {
			return Prefs{}, err
		}
	}
	return d.Prefs(ctx, user)
}

// prefsCommands validates u and returns the writes that apply it.
func (d *Delivery) prefsCommands(user int64, u PrefsUpdate) (rueidis.Commands, error) {
	key := ChannelSettingsKey(user)
	var cmds rueidis.Commands
	for ch, c := range u.Channels {
		if !d.cfg.On(ch) {
			return nil, fmt.Errorf("%w: channel %q is not one of DELIVERY_CHANNELS", hub.ErrInvalid, ch)
		}
		seen := map[string]bool{}
		types := []string{}
		for _, t := range c.MutedEventTypes {
			if !d.coreCfg.Publishable(t) {
				return nil, fmt.Errorf("%w: %q is not a publishable event type", hub.ErrBadEventType, t)
			}
			if !seen[t] {
				seen[t] = true
				types = append(types, t)
			}
		}
		if u.MaxMutedPerOne > 0 && len(types) > u.MaxMutedPerOne {
			return nil, fmt.Errorf("%w: at most %d muted event types per channel", hub.ErrInvalid, u.MaxMutedPerOne)
		}
		b, _ := json.Marshal(ChannelPrefs{Enabled: c.Enabled == nil || *c.Enabled, MutedEventTypes: types})
		cmds = append(cmds, d.rdb.B().Hset().Key(key).FieldValue().FieldValue(ch, string(b)).Build())
	}
	if u.QuietHoursSet {
		if u.QuietHours == nil {
			cmds = append(cmds, d.rdb.B().Hdel().Key(key).Field(quietField).Build())
		} else {
			if _, err := u.QuietHours.check(); err != nil {
				return nil, err
			}
			b, _ := json.Marshal(u.QuietHours)
			cmds = append(cmds, d.rdb.B().Hset().Key(key).FieldValue().FieldValue(quietField, string(b)).Build())
		}
	}
	return cmds, nil
}
