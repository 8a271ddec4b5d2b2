package hub

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// mutes caches the muted event types of users with local streams, so that the
// room fan-out path checks them without Redis: an atomic load and, when the
// user muted nothing, a nil check. A change on any instance reaches every
// instance through the control channel ({"muted":user}).
type mutes struct {
	mu sync.Mutex
	m  map[int64]*muteSet
}

// muteSet is one user's muted types, shared by their local streams.
type muteSet struct {
	refs  int
	types atomic.Pointer[map[string]bool] // nil: nothing muted
}

// has reports whether typ is muted.
func (m *muteSet) has(typ string) bool {
	t := m.types.Load()
	return t != nil && (*t)[typ]
}

// acquireMutes returns the user's muted types for a stream, loading them on
// first use. A failed load is logged and mutes nothing until the next change.
func (h *Hub) acquireMutes(ctx context.Context, user int64) *muteSet {
	h.mutes.mu.Lock()
	ms := h.mutes.m[user]
	fresh := ms == nil
	if fresh {
		ms = &muteSet{}
		h.mutes.m[user] = ms
	}
	ms.refs++
	h.mutes.mu.Unlock()
	if fresh {
		h.loadMutes(ctx, user, ms)
	}
	return ms
}

// releaseMutes drops a stream's hold on the user's muted types.
func (h *Hub) releaseMutes(user int64) {
	h.mutes.mu.Lock()
	defer h.mutes.mu.Unlock()
	if ms := h.mutes.m[user]; ms != nil {
		if ms.refs--; ms.refs == 0 {
			delete(h.mutes.m, user)
		}
	}
}

// localMutes returns the user's muted types if they have local streams, else nil.
func (h *Hub) localMutes(user int64) *muteSet {
	h.mutes.mu.Lock()
	defer h.mutes.mu.Unlock()
	return h.mutes.m[user]
}

// reloadMutes re-reads a user's muted types if they have local streams. The
// listener calls it: the Redis read runs in a goroutine of its own, so that
// no room's fan-out waits for it.
func (h *Hub) reloadMutes(user int64) {
	if ms := h.localMutes(user); ms != nil {
		h.goOwned(func(ctx context.Context) { h.loadMutes(ctx, user, ms) })
	}
}

func (h *Hub) loadMutes(ctx context.Context, user int64, ms *muteSet) {
	types, err := h.mutedTypes(ctx, user)
	if err != nil {
		h.log.Warn("loading muted event types", "user", user, "err", err)
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
func (h *Hub) mutedTypes(ctx context.Context, user int64) ([]string, error) {
	return call(h, ctx, h.rdb.B().Smembers().Key(MutedKey(user)).Build(), rueidis.RedisResult.AsStrSlice)
}

// announceMutes tells every instance that the user's muted types are now
// types; this one takes them at once, without reading them back.
func (h *Hub) announceMutes(ctx context.Context, user int64, types []string) {
	if ms := h.localMutes(user); ms != nil {
		ms.set(types)
	}
	msg := `{"muted":` + strconv.FormatInt(user, 10) + `}`
	if _, err := call(h, ctx, h.rdb.B().Publish().Channel(UserControlChannel).Message(msg).Build(), done); err != nil {
		h.log.Warn("announcing muted event types", "user", user, "err", err)
	}
}
