package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Room access modes (ROOM_AUTH).
const (
	RoomAuthOpen  = "open"  // any authenticated user
	RoomAuthClaim = "claim" // the token's rooms claim lists the room (or is "*")
	RoomAuthProxy = "proxy" // the backend answers POST ROOM_AUTH_URL
)

// Access errors: the API answers 403 COMMON403 and 503 AUTH5031.
var (
	ErrForbidden         = errors.New("no access to this room")
	ErrAccessUnavailable = errors.New("room authorization backend unreachable")
)

// Grant is what a user's token says about rooms (the rooms claim): every room,
// or the listed ones. The zero Grant grants nothing.
type Grant struct {
	All   bool
	Rooms map[int64]bool
}

// allows reports whether the grant covers room.
func (g Grant) allows(room int64) bool { return g.All || g.Rooms[room] }

// roomAuthTimeout bounds one question to the proxy backend.
const roomAuthTimeout = 2 * time.Second

// accessCacheMax bounds the proxy answers kept in memory.
const accessCacheMax = 100_000

// access decides who may use a room (ROOM_AUTH). In proxy mode it keeps the
// backend's answers (allow and deny) for ROOM_AUTH_CACHE_SECS, bounded in
// size, and many concurrent first questions for one (user, room) make one
// backend call.
type access struct {
	mode   string
	url    string
	key    string
	ttl    time.Duration
	client *http.Client
	calls  singleflight.Group

	mu    sync.Mutex
	cache map[accessKey]accessAnswer
}

type accessKey struct{ user, room int64 }

type accessAnswer struct {
	allowed bool
	until   time.Time
}

func newAccess(cfg Config) *access {
	return &access{mode: cfg.RoomAuth, url: cfg.RoomAuthURL, key: cfg.InternalAPIKey, ttl: cfg.RoomAuthCache,
		client: &http.Client{Timeout: roomAuthTimeout}, cache: map[accessKey]accessAnswer{}}
}

// CheckRoom returns nil when user may use room, ErrForbidden when not, and
// ErrAccessUnavailable when the proxy backend cannot answer (fail closed).
func (h *Hub) CheckRoom(ctx context.Context, user int64, g Grant, room int64) error {
	allowed, err := h.access.allowed(ctx, user, g, room, h.metrics)
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err() // the client left; nobody waits for the answer
	case err != nil:
		h.metrics.accessDecision("error")
		h.log.Warn("room authorization backend failed", "user", user, "room", room, "err", err)
		return fmt.Errorf("%w: %w", ErrAccessUnavailable, err)
	case !allowed:
		h.metrics.accessDecision("deny")
		return fmt.Errorf("%w: room %d", ErrForbidden, room)
	}
	h.metrics.accessDecision("allow")
	return nil
}

// AnswerCached reports whether CheckRoom can answer for user and room
// without asking the proxy backend (always, outside proxy mode).
func (h *Hub) AnswerCached(user int64, room int64) bool {
	if h.access.mode != RoomAuthProxy {
		return true
	}
	_, ok := h.access.cached(accessKey{user, room})
	return ok
}

// cached is the proxy backend's answer for k while it is fresh.
func (a *access) cached(k accessKey) (allowed, ok bool) {
	a.mu.Lock()
	ans, ok := a.cache[k]
	a.mu.Unlock()
	if !ok || !time.Now().Before(ans.until) {
		return false, false
	}
	return ans.allowed, true
}

// RecheckEvery is how often an open stream asks again whether its user may
// still use the room: when a proxy answer expires; 0 in the other modes,
// whose answer cannot change while the token lives.
func (h *Hub) RecheckEvery() time.Duration {
	if h.access.mode == RoomAuthProxy {
		return h.access.ttl
	}
	return 0
}

func (a *access) allowed(ctx context.Context, user int64, g Grant, room int64, m *Metrics) (bool, error) {
	switch a.mode {
	case RoomAuthClaim:
		return g.allows(room), nil
	case RoomAuthProxy:
	default:
		return true, nil
	}
	k := accessKey{user, room}
	if allowed, ok := a.cached(k); ok {
		return allowed, nil
	}
	ch := a.calls.DoChan(fmt.Sprintf("%d:%d", user, room), func() (any, error) {
		// A call that ended between this caller's look at the cache and
		// here left its answer there: the backend is asked once.
		if allowed, ok := a.cached(k); ok {
			return allowed, nil
		}
		// Not the first caller's context: its disconnect must not fail the others.
		start := time.Now()
		allowed, err := a.ask(context.WithoutCancel(ctx), user, room)
		m.accessBackend.UpdateDuration(start)
		if err == nil {
			a.remember(k, allowed)
		}
		return allowed, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return false, r.Err
		}
		return r.Val.(bool), nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// ask POSTs {"userId","roomId"} to the backend: 2xx allows, 403 and 404 deny,
// anything else (or nothing within roomAuthTimeout) is an error.
func (a *access) ask(ctx context.Context, user, room int64) (bool, error) {
	c, err := PostInternal(ctx, a.client, a.url, a.key, map[string]int64{"userId": user, "roomId": room})
	if err != nil {
		return false, err
	}
	switch {
	case c >= 200 && c < 300:
		return true, nil
	case c == http.StatusForbidden || c == http.StatusNotFound:
		return false, nil
	default:
		return false, fmt.Errorf("backend answered %d", c)
	}
}

// remember caches an answer; a full cache first drops what expired, then, if
// still full, an arbitrary tenth.
func (a *access) remember(k accessKey, allowed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= accessCacheMax {
		now := time.Now()
		for k, v := range a.cache {
			if now.After(v.until) {
				delete(a.cache, k)
			}
		}
		for k := range a.cache {
			if len(a.cache) < accessCacheMax*9/10 {
				break
			}
			delete(a.cache, k)
		}
	}
	a.cache[k] = accessAnswer{allowed: allowed, until: time.Now().Add(a.ttl)}
}
