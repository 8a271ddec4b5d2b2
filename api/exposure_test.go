package api_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestHardening_DevRoutesOnlyWithTheDevSecret(t *testing.T) {
	rs := testredis.Start(t)
	real := testhub.StartWith(t, rs.Addr(), nil, func(c *api.Config) { c.JWTSecret = testhub.TestSecret })
	for _, r := range [][2]string{{http.MethodGet, "/dev/token?userId=1"}, {http.MethodPost, "/dev/publish"}} {
		if code, env := real.Do(t, r[0], r[1], nil, "{}"); code != 404 || env.Code != "COMMON404" {
			t.Errorf("%s %s with a real secret: %d %s, want 404", r[0], r[1], code, env.Code)
		}
	}
	dev := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.RoomAuth = hub.RoomAuthClaim })
	code, env := dev.Do(t, http.MethodGet, "/dev/token?userId=1&rooms=5,6", nil, "")
	if code != 200 {
		t.Fatalf("dev token with the dev secret: %d", code)
	}
	tok := env.Result.(map[string]any)["token"].(string)
	for room, want := range map[int]int{5: 200, 6: 200, 7: 403} {
		if code, _ := dev.Get(t, fmt.Sprintf("/api/v1/rooms/%d/events?since=0", room), tok); code != want {
			t.Errorf("dev token with rooms=5,6 on room %d: %d, want %d", room, code, want)
		}
	}
	if code, _ := dev.Do(t, http.MethodGet, "/dev/token?userId=1&rooms=x", nil, ""); code != 400 {
		t.Errorf("rooms=x: %d, want 400", code)
	}
}

// httpSeries counts the series of the HTTP metrics: requests by method, route
// and status, and duration histograms by route (their buckets apart, which are
// bounded by the histogram itself).
func httpSeries(t *testing.T, th *testhub.Hub) int {
	t.Helper()
	resp, err := testhub.HTTPClient.Get(th.URL + "/metrics")
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
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	send := func(method, path string) {
		req, _ := http.NewRequest(method, th.URL+path, nil)
		if resp, err := testhub.HTTPClient.Do(req); err == nil {
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

// Every HTML answer carries the CSP with frame-ancestors 'none', the demo
// page under /static/ too.
func TestHardening_EveryHTMLAnswerHasTheCSP(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
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

// Debug and monitoring exposure: pprof on loopback unless explicitly
// allowed; /metrics apart on METRICS_ADDR when set; /health asks Redis at
// most once a second however often it is asked.
func TestHardening_DebugMetricsAndHealthExposure(t *testing.T) {
	var ce *hub.ConfigError
	for addr, ok := range map[string]bool{"0.0.0.0:6060": false, ":6060": false, "10.0.0.5:6060": false,
		"127.0.0.1:6060": true, "[::1]:6060": true, "localhost:6060": true} {
		_, err := api.LoadConfig(lookup(map[string]string{"DEBUG_ADDR": addr}))
		if ok != (err == nil) || (!ok && (!errors.As(err, &ce) || ce.Var != "DEBUG_ADDR")) {
			t.Errorf("DEBUG_ADDR=%s: %v", addr, err)
		}
	}
	if _, err := api.LoadConfig(lookup(map[string]string{"DEBUG_ADDR": "0.0.0.0:6060", "DEBUG_ADDR_ALLOW_PUBLIC": "true"})); err != nil {
		t.Errorf("explicitly allowed: %v", err)
	}
	if _, err := api.LoadConfig(lookup(map[string]string{"METRICS_ADDR": "nonsense"})); !errors.As(err, &ce) || ce.Var != "METRICS_ADDR" {
		t.Errorf("METRICS_ADDR=nonsense: %v", err)
	}

	rs := testredis.Start(t)
	th := testhub.StartWith(t, rs.Addr(), nil, func(c *api.Config) { c.MetricsAddr = "127.0.0.1:9" })
	resp, err := http.Get(th.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("/metrics on the main port with METRICS_ADDR set: %d, want 404", resp.StatusCode)
	}
	apart := httptest.NewServer(th.API.MetricsHandler())
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
		if code, _ := th.Get(t, "/health", ""); code != 200 {
			t.Fatalf("health: %d", code)
		}
	}
	if n, took := pings()-before, time.Since(start); n > int64(took/time.Second)+2 {
		t.Fatalf("50 /health calls in %v pinged Redis %d times, want at most one a second", took, n)
	}
}

// HEAD on the static files answers as GET without the body (a CDN, a
// service worker's update check; issue 43, 8).
func TestStatic_HeadAnswers(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	req, _ := http.NewRequest(http.MethodHead, th.URL+"/static/roomhub-sw.js", nil)
	resp, err := testhub.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "javascript") {
		t.Fatalf("HEAD /static/roomhub-sw.js: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
