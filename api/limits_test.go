package api_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestStream_EndsWhenTokenExpires(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	tok, err := th.Tokens.Sign(4, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	u, err := th.Tokens.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	c := testhub.OpenSSE(t, th.URL+"/api/v1/rooms/80/stream", tok, "")
	res := th.Publish(t, 80, "comment.created", map[string]any{})
	if f := c.NextMatching(t, testhub.Wait, func(f testhub.Frame) bool { return f.Event == "comment.created" }); f.ID != res.StreamID {
		t.Fatalf("the stream before its token expired: %+v", f)
	}
	rest := c.Ended(t, 15*time.Second) // a revoked user does not listen forever
	if now := time.Now(); now.Before(u.Expires) {
		t.Fatalf("the stream ended %v before its token expired", u.Expires.Sub(now))
	}
	for _, f := range rest {
		if strings.HasPrefix(f.Event, "system.") {
			t.Fatalf("the stream ended with %s, not at its token's expiry", f.Event)
		}
	}
}

func TestStream_KeepaliveComments(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.KeepAlive = time.Second })
	c := th.OpenStream(t, 81, 1, "")
	for {
		f, ok := c.NextAny(t, 5*time.Second)
		if !ok {
			t.Fatal("stream ended")
		}
		if f.Comment == "keepalive" {
			return
		}
	}
}

// Keepalives come within the interval and a small margin of the last byte
// (the clock looks every quarter interval), never near two intervals late:
// with a 1 s interval, a user stream quiet for 5 s gets one every ~1.25 s.
// The median of five gaps is judged (≤ 1.6 s), so a busy machine's one late
// wake-up does not fail it; a clock that looked once per interval would put
// most gaps near 2 s.
func TestStream_KeepaliveWithinTheInterval(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.KeepAlive = time.Second })
	c := th.SettledUserStream(t, 3) // its opening events are the last bytes before the silence
	last := time.Now()
	var gaps []time.Duration
	for len(gaps) < 5 {
		f, ok := c.NextAny(t, 10*time.Second)
		if !ok {
			t.Fatal("stream ended")
		}
		gap := time.Since(last)
		last = time.Now()
		if f.Comment == "keepalive" {
			gaps = append(gaps, gap)
		}
	}
	slices.Sort(gaps)
	if gaps[2] > 1600*time.Millisecond {
		t.Fatalf("keepalive gaps %v (median %v) with SSE_KEEPALIVE_SECS=1", gaps, gaps[2])
	}
}

func TestStream_StalledSocketIsDroppedAtWriteDeadline(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) {
		c.WriteTimeout = time.Second
		c.ChannelCapacity = 100000 // never lagged: only the write deadline can end it
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(th.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/rooms/82/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", th.Token(t, 2))
	testhub.Eventually(t, testhub.Wait, "stream open", func() bool { return th.Hub.Health(t.Context()).ActiveConnections == 1 })
	big := strings.Repeat("x", 60000)
	for i := 0; i < 400; i++ { // 24 MB: more than the socket buffers hold
		th.Publish(t, 82, "comment.created", map[string]any{"pad": big})
	}
	// The client never reads: the server must give up on it by itself.
	testhub.Eventually(t, 30*time.Second, "stalled stream dropped", func() bool {
		return th.Hub.Health(t.Context()).ActiveConnections == 0
	})
}

func TestPublish_RedisUnreachableIsA503NotAHang(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	rs.Pause()
	defer rs.Resume()
	code, env := th.PublishRaw(t, `{"roomId":1,"eventType":"comment.created","data":{}}`)
	if code != http.StatusServiceUnavailable || env.Code != "REDIS5001" {
		t.Fatalf("publish with Redis frozen: %d %+v", code, env)
	}
	code, env = th.Get(t, "/api/v1/rooms/1/events?since=0", th.Token(t, 1))
	if code != http.StatusServiceUnavailable || env.Code != "REDIS5001" {
		t.Fatalf("events with Redis frozen: %d %+v", code, env)
	}
}

func TestCORS_AllowedOriginsWithCredentials(t *testing.T) {
	th := testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) { c.AllowedOrigins = []string{"https://app.test"} })
	for origin, allowed := range map[string]bool{"https://app.test": true, "https://evil.test": false} {
		req, _ := http.NewRequest(http.MethodOptions, th.URL+"/api/v1/rooms/1/events", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "authorization")
		resp, err := testhub.HTTPClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get("Access-Control-Allow-Origin")
		if allowed && (got != origin || resp.Header.Get("Access-Control-Allow-Credentials") != "true") {
			t.Errorf("%s: Allow-Origin %q, Allow-Credentials %q", origin, got, resp.Header.Get("Access-Control-Allow-Credentials"))
		}
		if !allowed && got != "" {
			t.Errorf("%s must not be allowed, got Allow-Origin %q", origin, got)
		}
	}
}

func TestHTTPServer_SlowHeadersAreCutOff(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	srv := api.NewHTTPServer("127.0.0.1:0", http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: x\r\n") // and never the blank line
	_ = conn.SetReadDeadline(time.Now().Add(srv.ReadHeaderTimeout + 10*time.Second))
	buf := make([]byte, 512)
	for {
		if _, err := conn.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("a client sending headers slowly held the connection past ReadHeaderTimeout (%v)", srv.ReadHeaderTimeout)
			}
			return // closed by the server
		}
	}
}

func TestHardening_RateLimitsAnswer429WithRetryAfter(t *testing.T) {
	th := testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) {
		// Budgets that refill too slowly to matter: what is tested is the
		// burst, however long the machine takes to spend it.
		c.StreamOpens, c.Heartbeats = api.Budget{PerSec: 0.001, Burst: 2}, api.Budget{PerSec: 0.001, Burst: 3}
	})
	tok := th.Token(t, 5)
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
		resp, err := testhub.HTTPClient.Do(req)
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
	if code, _ := th.UserDo(t, http.MethodPost, "/api/v1/rooms/123/presence/heartbeat", 6, ""); code != 200 {
		t.Fatalf("another user's heartbeat: %d", code)
	}
}

func TestHardening_EventsPagesAreBoundedInBytes(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	big := strings.Repeat("x", 60000)
	var ids []string
	for i := 0; i < 30; i++ {
		ids = append(ids, th.Publish(t, 124, "comment.created", map[string]any{"n": i, "pad": big}).StreamID)
	}
	since, got := "0", 0
	for pages := 0; ; pages++ {
		code, env := th.Get(t, "/api/v1/rooms/124/events?count=500&since="+since, th.Token(t, 1))
		var p hub.EventsPage
		testhub.Remarshal(t, env.Result, &p)
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

// Every user route has a per-user budget; requests that fail
// authentication have one per client address (from the trusted proxy
// header only when one is configured), checked before the token is.
func TestHardening_EveryUserRouteIsRateLimited(t *testing.T) {
	th := testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) {
		// Refilling too slowly to matter, however slow the machine.
		c.UserRequests, c.IPRequests, c.TrustedProxy = api.Budget{PerSec: 0.001, Burst: 3}, api.Budget{PerSec: 0.001, Burst: 2}, "X-Forwarded-For"
	})
	l := limited{th: th, tok: th.Token(t, 90)}
	l.perUser(t)
	l.perAddress(t)
	l.internalKeys(t)
}

// limited is the hub of the rate limit test and user 90's token.
type limited struct {
	th  *testhub.Hub
	tok string
}

// send sends GET path with hdr.
func (l limited) send(t *testing.T, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, l.th.URL+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := testhub.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// call sends GET path with token (unless "") and X-Forwarded-For (unless "").
func (l limited) call(t *testing.T, path, token, forwarded string) *http.Response {
	t.Helper()
	hdr := map[string]string{}
	if token != "" {
		hdr["Authorization"] = "Bearer " + token
	}
	if forwarded != "" {
		hdr["X-Forwarded-For"] = forwarded
	}
	return l.send(t, path, hdr)
}

// perUser: one budget per user, spread over the routes; another user has
// their own.
func (l limited) perUser(t *testing.T) {
	paths := []string{"/api/v1/notifications/counts", "/api/v1/notifications", "/api/v1/rooms/5/events?since=0"}
	for i, p := range paths { // the burst, spread over routes: one budget per user
		if resp := l.call(t, p, l.tok, ""); resp.StatusCode != 200 {
			t.Fatalf("request %d (%s): %d", i, p, resp.StatusCode)
		}
	}
	resp := l.call(t, "/api/v1/notifications/unread", l.tok, "")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("past the user's budget: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := l.call(t, "/api/v1/notifications/unread", l.th.Token(t, 91), ""); resp.StatusCode != 200 {
		t.Fatalf("another user: %d", resp.StatusCode)
	}
}

// perAddress: requests that fail authentication have a budget per client
// address, as the trusted proxy says; a valid token from a spent address
// is never refused by it.
func (l limited) perAddress(t *testing.T) {
	// Unauthenticated, per client address as the trusted proxy says.
	for i := 0; i < 2; i++ {
		if resp := l.call(t, "/api/v1/notifications/unread", "bad", "203.0.113.7"); resp.StatusCode != 401 {
			t.Fatalf("bad token %d: %d", i, resp.StatusCode)
		}
	}
	if resp := l.call(t, "/api/v1/notifications/unread", "bad", "203.0.113.7"); resp.StatusCode != 429 {
		t.Fatalf("a client that keeps failing: %d, want 429", resp.StatusCode)
	}
	if resp := l.call(t, "/api/v1/notifications/unread", "bad", "198.51.100.1, 203.0.113.8"); resp.StatusCode != 401 {
		t.Fatalf("another client behind the proxy: %d, want 401", resp.StatusCode)
	}
	// A valid token from the address that keeps failing (behind a proxy,
	// every browser may have it) is never refused by the address's budget.
	for _, p := range []string{"/api/v1/notifications/unread", "/api/v1/rooms/5/stream"} {
		if resp := l.call(t, p, l.th.Token(t, 92), "203.0.113.7"); resp.StatusCode != 200 {
			t.Fatalf("a valid token from a spent address, %s: %d, want 200", p, resp.StatusCode)
		}
	}
}

// internalKeys: wrong internal keys, per client address too, on a budget
// of their own (203.0.113.7 spent its user-route one in perAddress), one
// for the publish and /internal/ routes: past it a wrong key is 429; the
// right key from that address still passes.
func (l limited) internalKeys(t *testing.T) {
	internal := func(key, forwarded string) *http.Response {
		t.Helper()
		return l.send(t, "/api/v1/internal/deliveries/dead", map[string]string{"X-Internal-Key": key, "X-Forwarded-For": forwarded})
	}
	req, _ := http.NewRequest(http.MethodPost, l.th.URL+"/api/v1/notifications/publish", strings.NewReader(`{}`))
	req.Header.Set("X-Internal-Key", "guess")
	req.Header.Set("X-Forwarded-For", "203.0.113.7")
	resp, err := testhub.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("wrong internal key on a publish: %d, want 401", resp.StatusCode)
	}
	if resp := internal("guess", "203.0.113.7"); resp.StatusCode != 401 {
		t.Fatalf("wrong internal key on an /internal/ route: %d, want 401", resp.StatusCode)
	}
	if resp := internal("guess", "203.0.113.7"); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("an address that keeps guessing internal keys: %d, Retry-After %q, want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := internal(l.th.Cfg.InternalAPIKey, "203.0.113.7"); resp.StatusCode != 200 {
		t.Fatalf("the right key from a spent address: %d, want 200", resp.StatusCode)
	}
	if resp := internal(l.th.Cfg.InternalAPIKey, "198.51.100.2"); resp.StatusCode != 200 {
		t.Fatalf("the backend from its own address: %d, want 200", resp.StatusCode)
	}
}

// Every JSON body the hub reads refuses a field it does not know, at any
// depth, with 400 COMMON400 naming it: a typo must never widen (or quietly
// drop) what a request does. Each body is otherwise valid: without the typo
// it is accepted.
func TestHardening_UnknownFieldsAreRefusedEverywhere(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.Delivery.Channels = []string{"push"} })
	nid := th.NotifyWith(t, 5, "", 1)
	user := map[string]string{"Authorization": "Bearer " + th.Token(t, 1), "Content-Type": "application/json"}
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
		code, env := th.Do(t, c.method, c.path, c.hdr, c.typo)
		if code != 400 || env.Code != "COMMON400" || !strings.Contains(env.Message, c.field) {
			t.Errorf("%s %s %s: %d %+v, want 400 COMMON400 naming %q", c.method, c.path, c.typo, code, env, c.field)
		}
		if code, env := th.Do(t, c.method, c.path, c.hdr, c.good); code != 200 {
			t.Errorf("%s %s %s: %d %+v, want 200", c.method, c.path, c.good, code, env)
		}
	}
}
