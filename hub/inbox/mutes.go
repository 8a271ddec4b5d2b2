package inbox

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// mutedControl is the control message key that says a user's muted types
// changed: {"muted":7}.
const mutedControl = "muted"

// mutes caches the muted event types of users with local streams, so that the
// room fan-out path checks them without Redis: an atomic load and, when the
// user muted nothing, a nil check. A change on any instance reaches every
// instance through the core's control channel ({"muted":user}).
type mutes struct {
	mu sync.Mutex
	m  map[int64]*muteSet
}

// muteSet is one user's muted types, shared by their local streams.
type muteSet struct {
	refs  int
	types atomic.Pointer[map[string]bool] // nil: nothing muted
}

var (
	_ hub.Mutes   = (*Inbox)(nil)
	_ hub.MuteSet = (*muteSet)(nil)
)

// Has reports whether typ is muted.
func (m *muteSet) Has(typ string) bool {
	t := m.types.Load()
	return t != nil && (*t)[typ]
}

// Acquire returns the user's muted types for a stream, loading them on first
// use. A failed load is logged and mutes nothing until the next change.
func (ib *Inbox) Acquire(ctx context.Context, user int64) hub.MuteSet {
	ib.mutes.mu.Lock()
	ms := ib.mutes.m[user]
	fresh := ms == nil
	if fresh {
		ms = &muteSet{}
		ib.mutes.m[user] = ms
	}
	ms.refs++
	ib.mutes.mu.Unlock()
	if fresh {
		ib.loadMutes(ctx, user, ms)
	}
	return ms
}

// Release drops a stream's hold on the user's muted types.
func (ib *Inbox) Release(user int64) {
	ib.mutes.mu.Lock()
	defer ib.mutes.mu.Unlock()
	if ms := ib.mutes.m[user]; ms != nil {
		if ms.refs--; ms.refs == 0 {
			delete(ib.mutes.m, user)
		}
	}
}

// localMutes returns the user's muted types if they have local streams, else nil.
func (ib *Inbox) localMutes(user int64) *muteSet {
	ib.mutes.mu.Lock()
	defer ib.mutes.mu.Unlock()
	return ib.mutes.m[user]
}

// onMutedControl re-reads a user's muted types if they have local streams.
// The listener calls it: the Redis read runs in a goroutine of its own, so
// that no room's fan-out waits for it.
func (ib *Inbox) onMutedControl(value json.RawMessage) {
	var user int64
	if json.Unmarshal(value, &user) != nil || user <= 0 {
		return
	}
	if ms := ib.localMutes(user); ms != nil {
		ib.core.Go(func(ctx context.Context) { ib.loadMutes(ctx, user, ms) })
	}
}

func (ib *Inbox) loadMutes(ctx context.Context, user int64, ms *muteSet) {
	types, err := ib.mutedTypes(ctx, user)
	if err != nil {
		ib.log.Warn("loading muted event types", "user", user, "err", err)
		return
	}
	ms.set(types)
}

// set replaces the muted types.
func (m *muteSet) set(types []string) {
	if len(types) == 0 {
		m.types.Store(nil)
		return
	}
	set := make(map[string]bool, len(types))
	for _, t := range types {
		set[t] = true
	}
	m.types.Store(&set)
}

// mutedTypes reads the user's muted types from Redis.
func (ib *Inbox) mutedTypes(ctx context.Context, user int64) ([]string, error) {
	return hub.Call(ib.rdb, ctx, ib.rdb.B().Smembers().Key(MutedKey(user)).Build(), rueidis.RedisResult.AsStrSlice)
}

// announceMutes tells every instance that the user's muted types are now
// types; this one takes them at once, without reading them back.
func (ib *Inbox) announceMutes(ctx context.Context, user int64, types []string) {
	if ms := ib.localMutes(user); ms != nil {
		ms.set(types)
	}
	if err := ib.core.Control(ctx, mutedControl, user); err != nil {
		ib.log.Warn("announcing muted event types", "user", user, "err", err)
	}
}
