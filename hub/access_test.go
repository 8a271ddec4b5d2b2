package hub_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// roomRoutes are the four routes room access guards, for room r.
func roomRoutes(r int64) [][2]string {
	p := fmt.Sprintf("/api/v1/rooms/%d", r)
	return [][2]string{{http.MethodGet, p + "/stream"}, {http.MethodGet, p + "/events?since=0"},
		{http.MethodGet, p + "/presence"}, {http.MethodPost, p + "/presence/heartbeat"}}
}

func TestAccess_ClaimMode(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.RoomAuth = hub.RoomAuthClaim })
	sign := func(rooms ...any) string {
		tok, err := th.Tokens.Sign(7, time.Hour, rooms...)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	listed := sign([]any{42, "43"})
	for _, c := range []struct {
		name  string
		token string
		room  int64
		code  int
	}{
		{"listed as a number", listed, 42, 200}, {"listed as a string", listed, 43, 200},
		{"not listed", listed, 44, 403}, {"star", sign("*"), 44, 200}, {"no claim", sign(), 42, 403},
	} {
		for _, r := range roomRoutes(c.room) {
			if code, env := th.TryRoute(t, r[0], r[1], c.token); code != c.code || (code == 403 && env != "COMMON403") {
				t.Errorf("%s: %s %s → %d %s, want %d", c.name, r[0], r[1], code, env, c.code)
			}
		}
	}
	// A denied stream answers before any SSE byte and makes nobody present.
	if code, _ := th.TryRoute(t, http.MethodGet, "/api/v1/rooms/45/stream", listed); code != 403 {
		t.Fatalf("stream of an unlisted room: %d", code)
	}
	if _, env := th.Get(t, "/api/v1/rooms/45/presence", sign("*")); !strings.Contains(fmt.Sprint(env.Result), "count:0") {
		t.Fatalf("a denied stream left presence: %+v", env.Result)
	}
	for _, bad := range []any{"all", map[string]int{"a": 1}, []any{0}, []any{"x"}, []any{-3}, 5} {
		if code, env := th.TryRoute(t, http.MethodGet, "/api/v1/rooms/42/presence", sign(bad)); code != 401 || env != "AUTH4001" {
			t.Errorf("rooms claim %v: %d %s, want 401", bad, code, env)
		}
	}
}

func TestAccess_ProxyMode(t *testing.T) {
	backend := testhub.StartAuthBackend(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.Start(t, testredis.Start(t).Addr(), testhub.ProxyMode(backend.URL, time.Minute))
	backend.Set(7, 42, true)
	for _, r := range roomRoutes(42) {
		if code, env := th.TryRoute(t, r[0], r[1], th.Token(t, 7)); code != 200 {
			t.Errorf("allowed: %s → %d %s", r[1], code, env)
		}
	}
	if n := backend.Calls.Load(); n != 1 {
		t.Fatalf("%d backend calls for four requests, want 1 (cached)", n)
	}
	for _, r := range roomRoutes(43) {
		if code, env := th.TryRoute(t, r[0], r[1], th.Token(t, 7)); code != 403 || env != "COMMON403" {
			t.Errorf("denied: %s → %d %s", r[1], code, env)
		}
	}
	backend.Status.Store(404)
	if code, _ := th.TryRoute(t, http.MethodGet, "/api/v1/rooms/44/events?since=0", th.Token(t, 7)); code != 403 {
		t.Errorf("backend 404: %d, want 403", code)
	}
	backend.Status.Store(500)
	if code, env := th.TryRoute(t, http.MethodGet, "/api/v1/rooms/45/stream", th.Token(t, 7)); code != 503 || env != "AUTH5031" {
		t.Errorf("backend 500: %d %s, want 503 AUTH5031", code, env)
	}
	backend.Status.Store(0)
	backend.Delay.Store(int64(5 * time.Second))
	if code, env := th.TryRoute(t, http.MethodGet, "/api/v1/rooms/46/presence", th.Token(t, 7)); code != 503 || env != "AUTH5031" {
		t.Errorf("slow backend: %d %s, want 503 AUTH5031", code, env)
	}
	backend.Delay.Store(0)
	if backend.BadReq.Load() != 0 {
		t.Fatalf("%d backend requests lacked the internal key or the body", backend.BadReq.Load())
	}
	// 50 concurrent first requests for one (user, room): one backend call.
	backend.Set(8, 47, true)
	before := backend.Calls.Load()
	backend.Delay.Store(int64(200 * time.Millisecond))
	var wg sync.WaitGroup
	codes := make([]int, 50)
	tok8 := th.Token(t, 8)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			codes[i], _, _ = th.TryDo(http.MethodGet, "/api/v1/rooms/47/events?since=0", map[string]string{"Authorization": "Bearer " + tok8}, "")
		}(i)
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("request %d: %d", i, c)
		}
	}
	if n := backend.Calls.Load() - before; n != 1 {
		t.Fatalf("50 concurrent opens made %d backend calls, want 1", n)
	}
}

// Re-checks in proxy mode: an allowed stream survives them, a backend error
// keeps the stream (asked again next time), and a revocation ends only the
// revoked user's stream.
func TestAccess_RevokedWhileStreamingEndsTheStream(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	backend := testhub.StartAuthBackend(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.Start(t, testredis.Start(t).Addr(), testhub.ProxyMode(backend.URL, 300*time.Millisecond))
	backend.Set(9, 48, true)
	backend.Set(10, 48, true)
	revoked, kept := th.OpenStream(t, 48, 9, ""), th.OpenStream(t, 48, 10, "")
	bothGet := func(when string) {
		t.Helper()
		res := th.Publish(t, 48, "comment.created", map[string]any{})
		for _, c := range []*testhub.SSEClient{revoked, kept} {
			if f := c.NextMatching(t, testhub.Wait, func(f testhub.Frame) bool { return f.Event == "comment.created" }); f.ID != res.StreamID {
				t.Fatalf("%s: got %+v, want %s", when, f, res.StreamID)
			}
		}
	}
	rechecked := func(what string) {
		t.Helper()
		calls := backend.Calls.Load()
		testhub.Eventually(t, 10*time.Second, what, func() bool { return backend.Calls.Load() >= calls+2 })
	}
	bothGet("opened")
	rechecked("both streams re-checked while allowed")
	bothGet("after a re-check that allowed them")
	backend.Status.Store(500)
	rechecked("both streams re-checked while the backend fails")
	backend.Status.Store(0)
	bothGet("after a re-check the backend could not answer")
	backend.Set(9, 48, false)
	rest := revoked.Ended(t, 10*time.Second)
	var last testhub.Frame
	for _, f := range rest {
		if f.Event != "" {
			last = f
		}
	}
	if last.Event != hub.EvictedEventType || last.Data != `{"reason":"access revoked"}` {
		t.Fatalf("stream ended with %+v, want system.evicted access revoked", last)
	}
	rechecked("the kept stream re-checked after the revocation")
	res := th.Publish(t, 48, "comment.created", map[string]any{})
	if f := kept.NextMatching(t, testhub.Wait, func(f testhub.Frame) bool { return f.Event == "comment.created" }); f.ID != res.StreamID {
		t.Fatalf("the allowed stream after the revocation: %+v", f)
	}
}

// A slow backend (1 s an answer) and many stream-rooms: the re-checks run
// concurrently and apart from the presence refresh, so presence stays right
// and a revocation lands within the cache time and a few seconds. The answer
// takes half the hub's 2 s bound on one question: at 1.9 s (as first
// written) a busy machine pushed answers past the bound, every re-check
// failed open, and the revocation never landed; one at a time (the bug this
// guards), 512 re-checks of 1 s would take minutes. make test
// runs 512 stream-rooms (16 page streams of 32 rooms; under -race, beside
// the other packages); ROOMHUB_SLOW_BACKEND_USERS=63 runs the 2,016.
func TestAccess_SlowBackendKeepsPresenceAndRevokesInTime(t *testing.T) {
	backend := testhub.StartAuthBackend(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) {
		testhub.ProxyMode(backend.URL, 2*time.Second)(c)
		c.PresenceUserTTL, c.PresenceHashTTL, c.MaxConnectionsPerUser = 3*time.Second, 6*time.Second, 0
	})
	users, rooms := 16, 32
	if n, err := strconv.Atoi(os.Getenv("ROOMHUB_SLOW_BACKEND_USERS")); err == nil && n > 5 {
		users = n
	}
	var ids []string
	for r := 0; r < rooms; r++ {
		ids = append(ids, strconv.Itoa(600+r))
	}
	for u := 0; u < users; u++ {
		for r := 0; r < rooms; r++ {
			backend.Set(int64(1000+u), int64(600+r), true)
		}
	}
	// The test reads presence as a user the backend answers at once: its own
	// reads must not wait on the slow answers under test.
	const reader = 999
	backend.Prompt.Store(reader)
	for r := 0; r < rooms; r++ {
		backend.Set(reader, int64(600+r), true)
	}
	streams := make([]*testhub.SSEClient, users)
	for u := range streams {
		streams[u] = th.PageStream(t, int64(1000+u), "rooms="+strings.Join(ids, ","), "")
	}
	backend.Delay.Store(int64(time.Second))
	revokedAt := time.Now()
	backend.Set(1005, 610, false)
	rest := streams[5].Ended(t, 20*time.Second) // 2 s of cache, a round under way, then one of 1 s answers
	if len(rest) == 0 || rest[len(rest)-1].Event != hub.EvictedEventType || !strings.Contains(rest[len(rest)-1].Data, `"roomId":610`) {
		t.Fatalf("user 1005's stream ended with %+v, want system.evicted for room 610", rest)
	}
	t.Logf("revocation landed %v after it was made", time.Since(revokedAt).Round(100*time.Millisecond))
	// Presence was refreshed meanwhile: everyone else is still online, well
	// past PRESENCE_USER_TTL_SECS (3 s) of slow re-checks.
	tok := th.Token(t, reader)
	onlineIn := func(room int) int {
		code, env := th.Get(t, fmt.Sprintf("/api/v1/rooms/%d/presence", room), tok)
		var l hub.PresenceList
		testhub.Remarshal(t, env.Result, &l)
		if code != 200 {
			t.Fatalf("presence of room %d: %d %+v", room, code, env)
		}
		return l.Count
	}
	for _, room := range []int{600, 601, 631} {
		testhub.Eventually(t, testhub.Wait, fmt.Sprintf("the revoked user's leave from room %d", room), func() bool { return onlineIn(room) == users-1 })
	}
	// Two more rounds of slow re-checks (well past PRESENCE_USER_TTL_SECS):
	// nobody else dropped out.
	calls := backend.Calls.Load()
	testhub.Eventually(t, 30*time.Second, "two more re-check rounds", func() bool { return backend.Calls.Load() >= calls+int32(2*(users-1)*rooms) })
	for _, room := range []int{600, 601, 631} {
		if n := onlineIn(room); n != users-1 {
			t.Fatalf("room %d lists %d online, want %d: presence fell behind the slow re-checks", room, n, users-1)
		}
	}
}

// Access checks the cache cannot answer have a budget of their own per user
// (ROOM_AUTH_MISS_*): past it, a new room is 429 COMMON429 with Retry-After
// and the backend is not asked, while rooms already answered still work; a
// page stream spends one token for each room not yet answered.
func TestAccess_BackendMissesHaveTheirOwnBudget(t *testing.T) {
	backend := testhub.StartAuthBackend(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.StartWith(t, testredis.Start(t).Addr(), testhub.ProxyMode(backend.URL, time.Minute), func(c *api.Config) {
		c.AuthMisses = api.Budget{PerSec: 0.001, Burst: 4} // no token back, however slow the machine
	})
	const u = 77
	for r := int64(700); r < 710; r++ {
		backend.Set(u, r, true)
	}
	tok := th.Token(t, u)
	presence := func(room int) (int, api.Envelope) {
		t.Helper()
		return th.Get(t, fmt.Sprintf("/api/v1/rooms/%d/presence", room), tok)
	}
	for r := 700; r < 704; r++ { // the burst: four rooms the backend answers
		if code, env := presence(r); code != 200 {
			t.Fatalf("room %d within the budget: %d %+v", r, code, env)
		}
	}
	calls := backend.Calls.Load()
	if code, env := presence(704); code != 429 || env.Code != "COMMON429" {
		t.Fatalf("a fifth new room: %d %+v, want 429 COMMON429", code, env)
	}
	if n := backend.Calls.Load(); n != calls {
		t.Fatalf("the backend was asked %d times past the budget", n-calls)
	}
	if code, env := presence(701); code != 200 {
		t.Fatalf("a room already answered, past the budget: %d %+v", code, env)
	}
	// A page stream of rooms not yet answered spends a token for each: with
	// none back, three new rooms are refused at once.
	req, _ := http.NewRequest(http.MethodGet, th.URL+"/api/v1/stream?rooms=705,706,707", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := testhub.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a page stream of three new rooms past the budget: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := backend.Calls.Load(); n != calls {
		t.Fatalf("the backend was asked %d times for a refused page stream", n-calls)
	}
}

// Backend calls never follow a redirect: the internal key would go along to
// its target, and the target's 2xx would count as the backend's. The room
// access check fails closed (503 AUTH5031); the read sink tries again later.
func TestHardening_BackendRedirectsAreNotFollowed(t *testing.T) {
	var hits, keys atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("X-Internal-Key") != "" {
			keys.Add(1)
		}
	}))
	t.Cleanup(target.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) {
		testhub.ProxyMode(redirector.URL, time.Minute)(c)
		c.Inbox.ReadSinkURL, c.Inbox.WriteBehindInterval = redirector.URL, 0
	})
	if code, env := th.TryRoute(t, http.MethodGet, "/api/v1/rooms/301/events?since=0", th.Token(t, 70)); code != 503 || env != "AUTH5031" {
		t.Fatalf("access through a redirect: %d %s, want 503 AUTH5031", code, env)
	}
	id := th.NotifyWith(t, 301, "", 70)
	if code, _ := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+id+"/read", 70, ""); code != 200 {
		t.Fatalf("read: %d", code)
	}
	if st, err := th.Inbox.FlushReads(t.Context()); err != nil || !st.Failed || st.Flushed != 0 || st.Dead != 0 {
		t.Fatalf("a sink that redirects: %+v %v, want a temporary failure", st, err)
	}
	if hits.Load() != 0 || keys.Load() != 0 {
		t.Fatalf("the redirect's target was called %d times (%d with the internal key)", hits.Load(), keys.Load())
	}
}
