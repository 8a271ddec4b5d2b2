package inbox

import (
	"context"
	"fmt"
	"sort"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// Settings are a user's notification settings.
type Settings struct {
	MutedEventTypes []string `json:"mutedEventTypes"`
}

// MaxMutedTypes bounds a user's muted event types.
const MaxMutedTypes = 64

// Settings returns the user's notification settings.
func (ib *Inbox) Settings(ctx context.Context, user int64) (Settings, error) {
	types, err := ib.mutedTypes(ctx, user)
	if err != nil {
		return Settings{}, err
	}
	sort.Strings(types)
	return Settings{MutedEventTypes: types}, nil
}

// SetSettings replaces the user's muted types. Each must be publishable. Every
// instance hears of the change at once (the control channel) and applies it
// to the user's open streams.
func (ib *Inbox) SetSettings(ctx context.Context, user int64, s Settings) (Settings, error) {
	set := map[string]bool{}
	for _, t := range s.MutedEventTypes {
		if !ib.coreCfg.Publishable(t) {
			return Settings{}, fmt.Errorf("%w: %q is not a publishable event type", hub.ErrBadEventType, t)
		}
		set[t] = true
	}
	if len(set) > MaxMutedTypes {
		return Settings{}, fmt.Errorf("%w: at most %d muted event types", hub.ErrInvalid, MaxMutedTypes)
	}
	types := make([]string, 0, len(set))
	for t := range set {
		types = append(types, t)
	}
	sort.Strings(types)
	ctx, cancel := hub.Detach(ctx)
	defer cancel()
	cmds := rueidis.Commands{ib.rdb.B().Del().Key(MutedKey(user)).Build()}
	if len(types) > 0 {
		cmds = append(cmds, ib.rdb.B().Sadd().Key(MutedKey(user)).Member(types...).Build())
	}
	if err := hub.CallMany(ib.rdb, ctx, cmds); err != nil {
		return Settings{}, err
	}
	ib.announceMutes(ctx, user, types)
	return Settings{MutedEventTypes: types}, nil
}
