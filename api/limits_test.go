package api

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
	"roomhub/internal/testredis"
)

func TestStream_EndsWhenTokenExpires(t *testing.T) {
	t.Parallel()
	th := startHub(t, testredis.Start(t).Addr(), nil)
	tok, err := th.tokens.Sign(4, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	u, err := th.tokens.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	c := openSSE(t, th.URL+"/api/v1/rooms/80/stream", tok, "")
	res := th.publish(t, 80, "comment.created", map[string]any{})
	if f := c.nextMatching(t, wait, func(f frame) bool { return f.Event == "comment.created" }); f.ID != res.StreamID {
		t.Fatalf("the stream before its token expired: %+v", f)
	}
	rest := c.ended(t, 15*time.Second) // a revoked user does not listen forever
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
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) { c.KeepAlive = time.Second })
	c := th.openStream(t, 81, 1, "")
	for {
		f, ok := c.nextAny(t, 5*time.Second)
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
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) { c.KeepAlive = time.Second })
	c := th.settledUserStream(t, 3) // its opening events are the last bytes before the silence
	last := time.Now()
	var gaps []time.Duration
	for len(gaps) < 5 {
		f, ok := c.nextAny(t, 10*time.Second)
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
	t.Parallel() // it mostly waits: see helpers_test.go
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) {
		c.WriteTimeout = time.Second
		c.ChannelCapacity = 100000 // never lagged: only the write deadline can end it
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(th.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/rooms/82/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", th.token(t, 2))
	eventually(t, wait, "stream open", func() bool { return th.Hub.Health(t.Context()).ActiveConnections == 1 })
	big := strings.Repeat("x", 60000)
	for i := 0; i < 400; i++ { // 24 MB: more than the socket buffers hold
		th.publish(t, 82, "comment.created", map[string]any{"pad": big})
	}
	// The client never reads: the server must give up on it by itself.
	eventually(t, 30*time.Second, "stalled stream dropped", func() bool {
		return th.Hub.Health(t.Context()).ActiveConnections == 0
	})
}

func TestPublish_RedisUnreachableIsA503NotAHang(t *testing.T) {
	t.Parallel() // it mostly waits: see helpers_test.go
	rs := testredis.Start(t)
	th := startHub(t, rs.Addr(), nil)
	rs.Pause()
	defer rs.Resume()
	code, env := th.publishRaw(t, `{"roomId":1,"eventType":"comment.created","data":{}}`)
	if code != http.StatusServiceUnavailable || env.Code != "REDIS5001" {
		t.Fatalf("publish with Redis frozen: %d %+v", code, env)
	}
	code, env = th.get(t, "/api/v1/rooms/1/events?since=0", th.token(t, 1))
	if code != http.StatusServiceUnavailable || env.Code != "REDIS5001" {
		t.Fatalf("events with Redis frozen: %d %+v", code, env)
	}
}

func TestCORS_AllowedOriginsWithCredentials(t *testing.T) {
	th := startHubWith(t, testredis.Start(t).Addr(), nil, func(c *Config) { c.AllowedOrigins = []string{"https://app.test"} })
	for origin, allowed := range map[string]bool{"https://app.test": true, "https://evil.test": false} {
		req, _ := http.NewRequest(http.MethodOptions, th.URL+"/api/v1/rooms/1/events", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "authorization")
		resp, err := httpClient.Do(req)
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

func TestRecover_PanicIsCOMMON500AndLogged(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(log)
	e.Use(recoverJSON(log))
	e.GET("/boom", func(echo.Context) error { panic("secret detail") })
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/boom", nil))
	body := rec.Body.String()
	if rec.Code != 500 || !strings.Contains(body, `"code":"COMMON500"`) || strings.Contains(body, "secret") {
		t.Fatalf("panic answered %d %s", rec.Code, body)
	}
	if !strings.Contains(logs.String(), "secret detail") {
		t.Fatalf("panic not logged: %s", logs.String())
	}
}

func TestHTTPServer_SlowHeadersAreCutOff(t *testing.T) {
	t.Parallel() // it mostly waits: see helpers_test.go
	srv := NewHTTPServer("127.0.0.1:0", http.NotFoundHandler(), discardLog())
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
