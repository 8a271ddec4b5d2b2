package testhub

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"roomhub/hub"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// AuthBackend is a real HTTP room authorization backend: it allows what
// allowed says, answers status when set, and counts the questions.
type AuthBackend struct {
	URL     string
	mu      sync.Mutex
	allowed map[[2]int64]bool
	Status  atomic.Int32 // what it answers (200 unless set)
	Delay   atomic.Int64 // ns before it answers
	Prompt  atomic.Int64 // a user the delay spares (0: none)
	Calls   atomic.Int32 // calls so far
	BadReq  atomic.Int32 // calls without the internal key or with a bad body
	Trace   atomic.Value // the last call's traceparent and tracestate, "traceparent|tracestate"
}

// StartAuthBackend starts a room access backend (ROOM_AUTH=proxy) that
// expects key in X-Internal-Key and allows what Set allowed.
func StartAuthBackend(t testing.TB, key string) *AuthBackend {
	a := &AuthBackend{allowed: map[[2]int64]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.Calls.Add(1)
		a.Trace.Store(r.Header.Get("traceparent") + "|" + r.Header.Get("tracestate"))
		var q struct{ UserID, RoomID int64 }
		if r.Header.Get("X-Internal-Key") != key || json.NewDecoder(r.Body).Decode(&q) != nil || q.UserID == 0 || q.RoomID == 0 {
			a.BadReq.Add(1)
		}
		if d := time.Duration(a.Delay.Load()); d > 0 && q.UserID != a.Prompt.Load() {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				panic(http.ErrAbortHandler) // no answer: the hub gave up, and an answer now could still reach it
			}
		}
		if s := a.Status.Load(); s != 0 {
			w.WriteHeader(int(s))
			return
		}
		a.mu.Lock()
		ok := a.allowed[[2]int64{q.UserID, q.RoomID}]
		a.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// Set makes the backend allow (ok) or deny user in room.
func (a *AuthBackend) Set(user, room int64, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.allowed[[2]int64{user, room}] = ok
}

// ProxyMode configures ROOM_AUTH=proxy with the backend at url, its
// answers kept for cache.
func ProxyMode(url string, cache time.Duration) func(*Configs) {
	return func(c *Configs) { c.RoomAuth, c.RoomAuthURL, c.RoomAuthCache = hub.RoomAuthProxy, url, cache }
}
