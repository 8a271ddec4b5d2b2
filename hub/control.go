package hub

import (
	"context"
	"encoding/json"
	"fmt"
)

// The control channel (hub:control) carries orders between instances: the
// core's own ({"evict":[connection ids]}, the listener's probes) and those of
// the packages built on it, each under a key of its own ({"muted":7}).

// OnControl makes f receive the value of every control message that carries
// key, on every instance. Call it before Start; f runs on the listener's
// goroutine and must not block (start work with Go).
func (h *Hub) OnControl(key string, f func(value json.RawMessage)) {
	h.controls[key] = f
}

// Control sends {key: value} to every instance's OnControl handler of key,
// this one's included.
func (h *Hub) Control(ctx context.Context, key string, value any) error {
	msg, err := json.Marshal(map[string]any{key: value})
	if err != nil {
		return fmt.Errorf("%w: control message: %w", ErrInvalid, err)
	}
	_, err = Call(h.rdb, ctx, h.rdb.B().Publish().Channel(UserControlChannel).Message(string(msg)).Build(), NoReply)
	return err
}

// onControl handles one message of the control channel.
func (h *Hub) onControl(payload string) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		h.invalidMessage(UserControlChannel, "not a control message")
		return
	}
	for key, value := range m {
		if key == "evict" {
			var ids []string
			if json.Unmarshal(value, &ids) == nil {
				h.evict(ids)
			}
			continue
		}
		if f := h.controls[key]; f != nil {
			f(value)
		}
	}
}

// Mutes says which event types a user's room streams leave out (the inbox
// keeps them, and tells through the control channel when they change).
// Without Mutes nothing is muted.
type Mutes interface {
	// Acquire returns the user's muted types for a stream that is joining,
	// held until Release.
	Acquire(ctx context.Context, user int64) MuteSet
	// Release drops one stream's hold.
	Release(user int64)
}

// MuteSet is one user's muted event types. Has runs on the fan-out path,
// under a topic's lock: it must not block.
type MuteSet interface {
	Has(eventType string) bool
}

// UseMutes makes streams leave out what m says their users muted. Call it
// before Start.
func (h *Hub) UseMutes(m Mutes) { h.mutes = m }
