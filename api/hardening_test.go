package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/testredis"
)

func TestHardening_DevRoutesOnlyWithTheDevSecret(t *testing.T) {
	rs := testredis.Start(t)
	real := startHubWith(t, rs.Addr(), nil, func(c *Config) { c.JWTSecret = testSecret })
	for _, r := range [][2]string{{http.MethodGet, "/dev/token?userId=1"}, {http.MethodPost, "/dev/publish"}} {
		if code, env := real.do(t, r[0], r[1], nil, "{}"); code != 404 || env.Code != "COMMON404" {
			t.Errorf("%s %s with a real secret: %d %s, want 404", r[0], r[1], code, env.Code)
		}
	}
	dev := startHub(t, rs.Addr(), func(c *hub.Config) { c.RoomAuth = hub.RoomAuthClaim })
	code, env := dev.do(t, http.MethodGet, "/dev/token?userId=1&rooms=5,6", nil, "")
	if code != 200 {
		t.Fatalf("dev token with the dev secret: %d", code)
	}
	tok := env.Result.(map[string]any)["token"].(string)
	for room, want := range map[int]int{5: 200, 6: 200, 7: 403} {
		if code, _ := dev.get(t, fmt.Sprintf("/api/v1/rooms/%d/events?since=0", room), tok); code != want {
			t.Errorf("dev token with rooms=5,6 on room %d: %d, want %d", room, code, want)
		}
	}
	if code, _ := dev.do(t, http.MethodGet, "/dev/token?userId=1&rooms=x", nil, ""); code != 400 {
		t.Errorf("rooms=x: %d, want 400", code)
	}
}

// httpSeries counts the series of the HTTP metrics: requests by method, route
// and status, and duration histograms by route (their buckets apart, which are
// bounded by the histogram itself).
func httpSeries(t *testing.T, th *testHub) int {
	t.Helper()
	resp, err := httpClient.Get(th.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "http_requests_total{") || strings.HasPrefix(l, "http_request_duration_seconds_count{") {
			n++
		}
	}
	return n
}

func TestHardening_RandomMethodsAndPathsDoNotGrowMetrics(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	send := func(method, path string) {
		req, _ := http.NewRequest(method, th.URL+path, nil)
		if resp, err := httpClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	send("RANDOM0", "/x0")
	send("RANDOM0", "/health")
	send(http.MethodGet, "/api/v1/rooms/1000/events?since=0")
	httpSeries(t, th) // GET /metrics itself is a series
	before := httpSeries(t, th)
	for i := 1; i < 50; i++ {
		send(fmt.Sprintf("RANDOM%d", i), fmt.Sprintf("/x%d/%d", i, i))
		send(fmt.Sprintf("M%d", i), "/health")
		send(http.MethodGet, fmt.Sprintf("/api/v1/rooms/%d/events?since=0", i))
	}
	if after := httpSeries(t, th); after != before {
		t.Fatalf("the HTTP metrics went from %d to %d series with random methods and paths", before, after)
	}
}

func TestHardening_ForgedPubSubMessagesDoNotStopDelivery(t *testing.T) {
	rs := testredis.Start(t)
	th := startHub(t, rs.Addr(), nil)
	c := th.openStream(t, 120, 1, "")
	first := th.publish(t, 120, "comment.created", map[string]any{"n": 1})
	if f := c.next(t, wait); f.ID != first.StreamID {
		t.Fatalf("got %+v", f)
	}
	rdb := testredis.Client(t, rs.Addr())
	// On the backends' channel id and seq are ignored: delivered raw.
	testredis.Do(t, rdb, "PUBLISH", "room:120", `{"id":"99999999999999-0","seq":2,"eventType":"comment.created","data":{"forged":1}}`)
	if f := c.next(t, wait); f.ID != "" || !strings.Contains(f.Data, "forged") {
		t.Fatalf("forged raw message delivered as %+v", f)
	}
	// On the hub's own channel an id far in the future is refused.
	testredis.Do(t, rdb, "PUBLISH", "room:{120}", `{"id":"99999999999999-0","seq":2,"eventType":"comment.created","data":{}}`)
	next := th.publish(t, 120, "comment.created", map[string]any{"n": 2})
	if f := c.next(t, wait); f.ID != next.StreamID {
		t.Fatalf("after forged messages got %+v, want %s", f, next.StreamID)
	}
	if n := th.Hub.Metrics().InvalidMessages.Get(); n != 1 {
		t.Fatalf("invalid messages = %d, want 1", n)
	}
}

func TestHardening_PositionsRedisCannotRangeFromAre400(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	max := "18446744073709551615-18446744073709551615"
	if code, env := th.get(t, "/api/v1/rooms/1/events?since="+max, th.token(t, 1)); code != 400 || env.Code != "COMMON400" {
		t.Fatalf("since=max: %d %+v", code, env)
	}
	for _, path := range []string{"/api/v1/rooms/1/stream", "/api/v1/notifications/stream"} {
		code, env := th.do(t, http.MethodGet, path, map[string]string{"Authorization": "Bearer " + th.token(t, 1), "Last-Event-ID": max}, "")
		if code != 400 || env.Code != "COMMON400" {
			t.Fatalf("%s Last-Event-ID max: %d %+v", path, code, env)
		}
	}
}

func TestHardening_HistoryExpiresAfterTheLastPublish(t *testing.T) {
	rs := testredis.Start(t)
	th := startHub(t, rs.Addr(), func(c *hub.Config) { c.HistoryRetention = time.Hour })
	rdb := testredis.Client(t, rs.Addr())
	th.publish(t, 121, "comment.created", map[string]any{})
	// A room that only ever saw a heartbeat: its presence.update is history
	// too, kept as long as its presence (PRESENCE_HASH_TTL_SECS), not an hour.
	if code, _ := th.userDo(t, http.MethodPost, "/api/v1/rooms/122/presence/heartbeat", 1, ""); code != 200 {
		t.Fatal("heartbeat")
	}
	presenceTTL := int64(th.Cfg.PresenceHashTTL / time.Second)
	for room, want := range map[int64][2]int64{121: {3500, 3600}, 122: {1, presenceTTL}} {
		for _, key := range []string{hub.EventsKey(room), hub.RoomSeqKey(room)} {
			eventually(t, wait, key+" has its TTL", func() bool {
				ttl, _ := testredis.Do(t, rdb, "TTL", key).AsInt64()
				return ttl >= want[0] && ttl <= want[1]
			})
		}
	}
	// A backend event in the heartbeat's room gives it the retention, and
	// presence does not shorten it.
	th.publish(t, 122, "comment.created", map[string]any{})
	if code, _ := th.userDo(t, http.MethodPost, "/api/v1/rooms/122/presence/heartbeat", 2, ""); code != 200 {
		t.Fatal("heartbeat")
	}
	eventually(t, wait, "the presence.update of user 2", func() bool {
		n, _ := testredis.Do(t, rdb, "XLEN", hub.EventsKey(122)).AsInt64()
		return n == 3
	})
	if ttl, _ := testredis.Do(t, rdb, "TTL", hub.EventsKey(122)).AsInt64(); ttl < 3500 {
		t.Fatalf("a presence.update after a real event cut the room's history TTL to %d s", ttl)
	}
}

// Presence alone creates no long-lived history: streams to 1,000 fresh rooms
// leave no room key behind once they closed and PRESENCE_HASH_TTL_SECS passed.
func TestHardening_PresenceAloneLeavesNoRoomKeys(t *testing.T) {
	t.Parallel() // it mostly waits: see helpers_test.go
	rs := testredis.Start(t)
	th := startHub(t, rs.Addr(), func(c *hub.Config) {
		c.PresenceUserTTL, c.PresenceHashTTL, c.MaxConnectionsPerUser, c.PresenceBroadcast = time.Second, 2*time.Second, 0, 0
	})
	rdb := testredis.Client(t, rs.Addr())
	const rooms, perStream = 1000, 25
	for first := 1; first <= rooms; first += perStream {
		var ids []string
		for r := first; r < first+perStream; r++ {
			ids = append(ids, strconv.Itoa(500000+r))
		}
		c := th.pageStream(t, int64(first%7+1), "rooms="+strings.Join(ids, ","), "")
		c.nextMatching(t, wait, func(f frame) bool { return f.Event == hub.PresenceEventType })
		c.Close()
	}
	count := func() int {
		keys, _ := testredis.Do(t, rdb, "KEYS", "room:*").AsStrSlice()
		return len(keys)
	}
	if n := count(); n == 0 {
		t.Fatal("no room key was created: the test proves nothing")
	}
	eventually(t, 30*time.Second, "every presence-only room's keys expired", func() bool { return count() == 0 })
}

func TestHardening_RateLimitsAnswer429WithRetryAfter(t *testing.T) {
	th := startHubWith(t, testredis.Start(t).Addr(), nil, func(c *Config) {
		// Budgets that refill too slowly to matter: what is tested is the
		// burst, however long the machine takes to spend it.
		c.StreamOpens, c.Heartbeats = Budget{PerSec: 0.001, Burst: 2}, Budget{PerSec: 0.001, Burst: 3}
	})
	tok := th.token(t, 5)
	check := func(what string, call func() *http.Response, ok int) {
		t.Helper()
		for i := 0; i < ok; i++ {
			resp := call()
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%s %d: %d", what, i, resp.StatusCode)
			}
		}
		resp := call()
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != 429 || !strings.Contains(string(b), `"COMMON429"`) || err != nil || secs < 1 {
			t.Fatalf("%s over budget: %d %s Retry-After %q", what, resp.StatusCode, b, resp.Header.Get("Retry-After"))
		}
	}
	check("heartbeat", func() *http.Response {
		req, _ := http.NewRequest(http.MethodPost, th.URL+"/api/v1/rooms/123/presence/heartbeat", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}, 3)
	check("stream open", func() *http.Response {
		req, _ := http.NewRequest(http.MethodGet, th.URL+"/api/v1/rooms/123/stream", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := (&http.Client{}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp // closing the body ends the stream
	}, 2)
	// Another user has a budget of their own.
	if code, _ := th.userDo(t, http.MethodPost, "/api/v1/rooms/123/presence/heartbeat", 6, ""); code != 200 {
		t.Fatalf("another user's heartbeat: %d", code)
	}
}

func TestHardening_EventsPagesAreBoundedInBytes(t *testing.T) {
	t.Parallel()
	th := startHub(t, testredis.Start(t).Addr(), nil)
	big := strings.Repeat("x", 60000)
	var ids []string
	for i := 0; i < 30; i++ {
		ids = append(ids, th.publish(t, 124, "comment.created", map[string]any{"n": i, "pad": big}).StreamID)
	}
	since, got := "0", 0
	for pages := 0; ; pages++ {
		code, env := th.get(t, "/api/v1/rooms/124/events?count=500&since="+since, th.token(t, 1))
		var p hub.EventsPage
		remarshal(t, env.Result, &p)
		if code != 200 || len(p.Events) > 18 {
			t.Fatalf("page %d: %d, %d events of 60 KB", pages, code, len(p.Events))
		}
		for _, e := range p.Events {
			if e.ID != ids[got] {
				t.Fatalf("event %d is %s, want %s", got, e.ID, ids[got])
			}
			got++
		}
		if !p.HasMore {
			break
		}
		since = *p.LastID
	}
	if got != 30 {
		t.Fatalf("paged through %d of 30 events", got)
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
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) {
		proxyMode(redirector.URL, time.Minute)(c)
		c.ReadSinkURL, c.WriteBehindInterval = redirector.URL, 0
	})
	if code, env := th.tryRoute(t, http.MethodGet, "/api/v1/rooms/301/events?since=0", th.token(t, 70)); code != 503 || env != "AUTH5031" {
		t.Fatalf("access through a redirect: %d %s, want 503 AUTH5031", code, env)
	}
	id := th.notifyWith(t, 301, "", 70)
	if code, _ := th.userDo(t, http.MethodPatch, "/api/v1/notifications/"+id+"/read", 70, ""); code != 200 {
		t.Fatalf("read: %d", code)
	}
	if st, err := th.Inbox.FlushReads(t.Context()); err != nil || !st.Failed || st.Flushed != 0 || st.Dead != 0 {
		t.Fatalf("a sink that redirects: %+v %v, want a temporary failure", st, err)
	}
	if hits.Load() != 0 || keys.Load() != 0 {
		t.Fatalf("the redirect's target was called %d times (%d with the internal key)", hits.Load(), keys.Load())
	}
}

// Every HTML answer carries the CSP with frame-ancestors 'none', the demo
// page under /static/ too.
func TestHardening_EveryHTMLAnswerHasTheCSP(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	for _, path := range []string{"/", "/static/", "/static/index.html", "/static/roomhub.js"} {
		resp, err := http.Get(th.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != 200 || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: %d, CSP %q", path, resp.StatusCode, csp)
		}
	}
}

// CSRF: a change authenticated by the access_token cookie must come from
// the hub's own origin or an allowed one. A cross-site form or fetch
// carries the cookie too.
func TestHardening_CookieWritesNeedAnAllowedOrigin(t *testing.T) {
	th := startHubWith(t, testredis.Start(t).Addr(), nil, func(c *Config) { c.AllowedOrigins = []string{"https://app.test"} })
	tok := th.token(t, 71)
	send := func(method, path, origin, site, body string, bearer bool) int {
		t.Helper()
		req, _ := http.NewRequest(method, th.URL+path, strings.NewReader(body))
		if bearer {
			req.Header.Set("Authorization", "Bearer "+tok)
		} else {
			req.AddCookie(&http.Cookie{Name: "access_token", Value: tok})
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	self := th.URL // the hub's own origin
	for _, tc := range []struct {
		method, path, origin, site string
		bearer                     bool
		want                       int
	}{
		{"POST", "/api/v1/notifications/read-all", "https://evil.test", "cross-site", false, 403},
		{"POST", "/api/v1/notifications/read-all", "", "", false, 403}, // no Origin, no Sec-Fetch-Site
		{"POST", "/api/v1/notifications/read-all", "", "cross-site", false, 403},
		{"POST", "/api/v1/rooms/5/presence/heartbeat", "https://evil.test", "", false, 403},
		{"POST", "/api/v1/notifications/read-all", "https://app.test", "", false, 200}, // allowed
		{"POST", "/api/v1/notifications/read-all", self, "", false, 200},               // same origin
		{"POST", "/api/v1/notifications/read-all", "", "same-origin", false, 200},
		{"POST", "/api/v1/notifications/read-all", "https://evil.test", "", true, 200}, // a bearer token is no ambient authority
		{"GET", "/api/v1/notifications/unread", "https://evil.test", "", false, 200},   // reads are CORS's business
	} {
		if got := send(tc.method, tc.path, tc.origin, tc.site, "", tc.bearer); got != tc.want {
			t.Errorf("%s %s Origin %q Sec-Fetch-Site %q bearer %v: %d, want %d", tc.method, tc.path, tc.origin, tc.site, tc.bearer, got, tc.want)
		}
	}
}

// JWT_ISSUER and JWT_AUDIENCE are checked when set; STREAM_MAX_LIFETIME_SECS
// ends a stream whose token lives longer, as its expiry would.
func TestHardening_TokenIssuerAudienceAndStreamLifetime(t *testing.T) {
	th := startHubWith(t, testredis.Start(t).Addr(), nil, func(c *Config) {
		c.JWTIssuer, c.JWTAudience, c.StreamLifetime = "https://auth.test", "roomhub", time.Second
	})
	for name, v := range map[string]*TokenVerifier{
		"no iss or aud":  NewTokenVerifier(th.HTTP.JWTSecret),
		"another issuer": NewTokenVerifier(th.HTTP.JWTSecret).Expect("https://other.test", "roomhub"),
		"another aud":    NewTokenVerifier(th.HTTP.JWTSecret).Expect("https://auth.test", "other"),
	} {
		tok, _ := v.Sign(80, time.Hour)
		if code, env := th.get(t, "/api/v1/notifications/unread", tok); code != 401 || env.Code != "AUTH4001" {
			t.Errorf("a token with %s: %d %s, want 401 AUTH4001", name, code, env.Code)
		}
	}
	tok, _ := th.tokens.Sign(80, time.Hour)
	if code, _ := th.get(t, "/api/v1/notifications/unread", tok); code != 200 {
		t.Fatalf("the right iss and aud: %d", code)
	}
	opened := time.Now()
	c := openSSE(t, th.URL+"/api/v1/rooms/310/stream", tok, "")
	for _, f := range c.ended(t, 15*time.Second) {
		if strings.HasPrefix(f.Event, "system.") {
			t.Fatalf("the stream ended with %s, not at its lifetime", f.Event)
		}
	}
	if lived := time.Since(opened); lived < time.Second {
		t.Fatalf("the stream ended after %v, before STREAM_MAX_LIFETIME_SECS", lived)
	}
}

// Debug and monitoring exposure: pprof on loopback unless explicitly
// allowed; /metrics apart on METRICS_ADDR when set; /health asks Redis at
// most once a second however often it is asked.
func TestHardening_DebugMetricsAndHealthExposure(t *testing.T) {
	var ce *hub.ConfigError
	for addr, ok := range map[string]bool{"0.0.0.0:6060": false, ":6060": false, "10.0.0.5:6060": false,
		"127.0.0.1:6060": true, "[::1]:6060": true, "localhost:6060": true} {
		_, err := LoadConfig(lookup(map[string]string{"DEBUG_ADDR": addr}))
		if ok != (err == nil) || (!ok && (!errors.As(err, &ce) || ce.Var != "DEBUG_ADDR")) {
			t.Errorf("DEBUG_ADDR=%s: %v", addr, err)
		}
	}
	if _, err := LoadConfig(lookup(map[string]string{"DEBUG_ADDR": "0.0.0.0:6060", "DEBUG_ADDR_ALLOW_PUBLIC": "true"})); err != nil {
		t.Errorf("explicitly allowed: %v", err)
	}
	if _, err := LoadConfig(lookup(map[string]string{"METRICS_ADDR": "nonsense"})); !errors.As(err, &ce) || ce.Var != "METRICS_ADDR" {
		t.Errorf("METRICS_ADDR=nonsense: %v", err)
	}

	rs := testredis.Start(t)
	th := startHubWith(t, rs.Addr(), nil, func(c *Config) { c.MetricsAddr = "127.0.0.1:9" })
	resp, err := http.Get(th.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("/metrics on the main port with METRICS_ADDR set: %d, want 404", resp.StatusCode)
	}
	apart := httptest.NewServer(th.api.MetricsHandler())
	t.Cleanup(apart.Close)
	resp, err = http.Get(apart.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "events_published_total") {
		t.Fatalf("/metrics apart: %d %.100s", resp.StatusCode, b)
	}

	rdb := testredis.Client(t, rs.Addr())
	pings := func() int64 {
		info, _ := testredis.Do(t, rdb, "INFO", "commandstats").ToString()
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "cmdstat_ping:calls="); ok {
				n, _ := strconv.ParseInt(strings.Split(v, ",")[0], 10, 64)
				return n
			}
		}
		return 0
	}
	before, start := pings(), time.Now()
	for range 50 {
		if code, _ := th.get(t, "/health", ""); code != 200 {
			t.Fatalf("health: %d", code)
		}
	}
	if n, took := pings()-before, time.Since(start); n > int64(took/time.Second)+2 {
		t.Fatalf("50 /health calls in %v pinged Redis %d times, want at most one a second", took, n)
	}
}

// Every user route has a per-user budget; requests that fail
// authentication have one per client address (from the trusted proxy
// header only when one is configured), checked before the token is.
func TestHardening_EveryUserRouteIsRateLimited(t *testing.T) {
	th := startHubWith(t, testredis.Start(t).Addr(), nil, func(c *Config) {
		// Refilling too slowly to matter, however slow the machine.
		c.UserRequests, c.IPRequests, c.TrustedProxy = Budget{PerSec: 0.001, Burst: 3}, Budget{PerSec: 0.001, Burst: 2}, "X-Forwarded-For"
	})
	tok := th.token(t, 90)
	send := func(path string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, th.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	call := func(path, token, forwarded string) *http.Response {
		t.Helper()
		hdr := map[string]string{}
		if token != "" {
			hdr["Authorization"] = "Bearer " + token
		}
		if forwarded != "" {
			hdr["X-Forwarded-For"] = forwarded
		}
		return send(path, hdr)
	}
	paths := []string{"/api/v1/notifications/counts", "/api/v1/notifications", "/api/v1/rooms/5/events?since=0"}
	for i, p := range paths { // the burst, spread over routes: one budget per user
		if resp := call(p, tok, ""); resp.StatusCode != 200 {
			t.Fatalf("request %d (%s): %d", i, p, resp.StatusCode)
		}
	}
	resp := call("/api/v1/notifications/unread", tok, "")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("past the user's budget: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := call("/api/v1/notifications/unread", th.token(t, 91), ""); resp.StatusCode != 200 {
		t.Fatalf("another user: %d", resp.StatusCode)
	}
	// Unauthenticated, per client address as the trusted proxy says.
	for i := 0; i < 2; i++ {
		if resp := call("/api/v1/notifications/unread", "bad", "203.0.113.7"); resp.StatusCode != 401 {
			t.Fatalf("bad token %d: %d", i, resp.StatusCode)
		}
	}
	if resp := call("/api/v1/notifications/unread", "bad", "203.0.113.7"); resp.StatusCode != 429 {
		t.Fatalf("a client that keeps failing: %d, want 429", resp.StatusCode)
	}
	if resp := call("/api/v1/notifications/unread", "bad", "198.51.100.1, 203.0.113.8"); resp.StatusCode != 401 {
		t.Fatalf("another client behind the proxy: %d, want 401", resp.StatusCode)
	}
	// A valid token from the address that keeps failing (behind a proxy,
	// every browser may have it) is never refused by the address's budget.
	for _, p := range []string{"/api/v1/notifications/unread", "/api/v1/rooms/5/stream"} {
		if resp := call(p, th.token(t, 92), "203.0.113.7"); resp.StatusCode != 200 {
			t.Fatalf("a valid token from a spent address, %s: %d, want 200", p, resp.StatusCode)
		}
	}
	// Wrong internal keys, per client address too, on a budget of their own
	// (203.0.113.7 spent its user-route one above): past it a wrong key is
	// 429; the right key from that address still passes.
	internal := func(key, forwarded string) *http.Response {
		t.Helper()
		return send("/api/v1/internal/deliveries/dead", map[string]string{"X-Internal-Key": key, "X-Forwarded-For": forwarded})
	}
	for i := 0; i < 2; i++ {
		if resp := internal("guess", "203.0.113.7"); resp.StatusCode != 401 {
			t.Fatalf("wrong internal key %d: %d, want 401", i, resp.StatusCode)
		}
	}
	if resp := internal("guess", "203.0.113.7"); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("an address that keeps guessing internal keys: %d, Retry-After %q, want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := internal(th.Cfg.InternalAPIKey, "203.0.113.7"); resp.StatusCode != 200 {
		t.Fatalf("the right key from a spent address: %d, want 200", resp.StatusCode)
	}
	if resp := internal(th.Cfg.InternalAPIKey, "198.51.100.2"); resp.StatusCode != 200 {
		t.Fatalf("the backend from its own address: %d, want 200", resp.StatusCode)
	}
}

// Every JSON body the hub reads refuses a field it does not know, at any
// depth, with 400 COMMON400 naming it: a typo must never widen (or quietly
// drop) what a request does. Each body is otherwise valid: without the typo
// it is accepted.
func TestHardening_UnknownFieldsAreRefusedEverywhere(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) { c.DeliveryChannels = []string{"push"} })
	nid := th.notifyWith(t, 5, "", 1)
	user := map[string]string{"Authorization": "Bearer " + th.token(t, 1), "Content-Type": "application/json"}
	internal := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}
	const pub = `"roomId":5,"eventType":"comment.created","data":{"a":1}`
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		good, typo   string
		field        string
	}{
		{"POST", "/api/v1/notifications/publish", internal, `{` + pub + `,"recipientIds":[1]}`, `{` + pub + `,"recipients":[1]}`, "recipients"},
		{"POST", "/api/v1/notifications/publish", internal, `{` + pub + `,"recipientIds":[1],"delivery":{"push":{"afterSecs":60}}}`,
			`{` + pub + `,"recipientIds":[1],"delivery":{"push":{"afterSec":60}}}`, "afterSec"},
		{"POST", "/api/v1/notifications/publish/batch", internal, `{"events":[{` + pub + `}]}`, `{"event":[{` + pub + `}]}`, "event"},
		{"PATCH", "/api/v1/notifications/" + nid + "/snooze", user, `{"until":"` + soon + `"}`, `{"until":"` + soon + `","for":1}`, "for"},
		{"POST", "/api/v1/notifications/bulk", user, `{"action":"seen","filter":{"state":"unread"}}`, `{"action":"seen","filter":{"stat":"unread"}}`, "stat"},
		{"POST", "/api/v1/notifications/bulk", user, `{"action":"seen","notificationIds":["` + nid + `"]}`, `{"action":"seen","ids":["` + nid + `"]}`, "ids"},
		{"POST", "/api/v1/notifications/read-all", user, `{"upTo":"` + nid + `"}`, `{"before":"` + nid + `"}`, "before"},
		{"PUT", "/api/v1/notifications/settings", user, `{"mutedEventTypes":[]}`, `{"mutedEventTypes":[],"muted":["like.toggled"]}`, "muted"},
		{"PUT", "/api/v1/notifications/settings", user, `{"mutedEventTypes":[],"channels":{"push":{"enabled":true}}}`,
			`{"mutedEventTypes":[],"channels":{"push":{"enable":false}}}`, "enable"},
		{"POST", "/api/v1/internal/deliveries/redrive", internal, `{"userId":1}`, `{"userIds":[1]}`, "userIds"},
	} {
		code, env := th.do(t, c.method, c.path, c.hdr, c.typo)
		if code != 400 || env.Code != "COMMON400" || !strings.Contains(env.Message, c.field) {
			t.Errorf("%s %s %s: %d %+v, want 400 COMMON400 naming %q", c.method, c.path, c.typo, code, env, c.field)
		}
		if code, env := th.do(t, c.method, c.path, c.hdr, c.good); code != 200 {
			t.Errorf("%s %s %s: %d %+v, want 200", c.method, c.path, c.good, code, env)
		}
	}
}

// A stream the cookie authenticates is refused (403, before it counts
// toward the cap or presence) when another site or a top-level navigation
// opens it: five cross-site navigations used to evict the user's real
// stream and mark them present. An EventSource (Sec-Fetch-Mode: cors) of
// the same site, or a bearer token, still opens one.
func TestHardening_CrossSiteNavigationsCannotOpenCookieStreams(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) { c.MaxConnectionsPerUser = 2 })
	const u = 72
	tok := th.token(t, u)
	real := th.openStream(t, 5, u, "")
	open := func(path string, hdr map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, th.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: "access_token", Value: tok})
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // an opened stream ends here
		resp, err := (&http.Client{}).Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/api/v1/rooms/6/stream", "/api/v1/notifications/stream", "/api/v1/stream?rooms=6"} {
		for _, hdr := range []map[string]string{
			{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
			{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"},
			{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"},
			{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"},                                // typed into the address bar
			{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}, // an <img> on a sibling subdomain
			{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"},
			{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "script"},
		} {
			if code := open(path, hdr); code != 403 {
				t.Fatalf("%s with the cookie and %v: %d, want 403", path, hdr, code)
			}
		}
	}
	code, env := th.get(t, "/api/v1/rooms/6/presence", th.token(t, 1))
	var l hub.PresenceList
	remarshal(t, env.Result, &l)
	if code != 200 || l.Count != 0 {
		t.Fatalf("room 6 after refused opens: %d, %d online, want nobody", code, l.Count)
	}
	res := th.publish(t, 5, "comment.created", map[string]any{})
	if f := real.next(t, wait); f.ID != res.StreamID {
		t.Fatalf("the user's real stream after the refused opens: %+v, want the event (not evicted)", f)
	}
	// The site's own EventSource, and a bearer token, still open streams.
	if code := open("/api/v1/rooms/7/stream", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}); code != 200 {
		t.Fatalf("a same-origin EventSource with the cookie: %d, want 200", code)
	}
	if code := open("/api/v1/rooms/8/stream", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}); code != 200 {
		t.Fatalf("an allowed sibling site's EventSource with the cookie: %d, want 200", code)
	}
}

// HEAD on the static files answers as GET without the body (a CDN, a
// service worker's update check; issue 43, 8).
func TestStatic_HeadAnswers(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	req, _ := http.NewRequest(http.MethodHead, th.URL+"/static/roomhub-sw.js", nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "javascript") {
		t.Fatalf("HEAD /static/roomhub-sw.js: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
