package testhub

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sys/unix"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/hub/console"
	"roomhub/hub/delivery"
	"roomhub/hub/inbox"
	"roomhub/hub/ingest"
	"roomhub/hub/publish"
	"roomhub/hub/push/apns"
	"roomhub/hub/push/channels"
	"roomhub/hub/push/fcm"
	"roomhub/hub/push/webpush"
	"roomhub/hub/topics"
	"roomhub/internal/env"
	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
	"roomhub/web"
)

// Tests that mostly wait (timers, TTLs, a gateway's answers) call
// t.Parallel(): each starts its own redis-server and hub, so they share
// nothing; make test runs six of them at a time (-parallel 6), after the
// rest of the package. The browser tests do too: their Chromiums take turns
// (testbrowser.Start), one at a time beside the tests that wait. A test
// that counts goroutines, measures a time or races a short clock stays
// serial.

// Configs is every configuration a test hub runs with: the core's
// (embedded: c.KeepAlive is the core's) and each feature's, as main loads
// them.
type Configs struct {
	hub.Config
	Inbox    inbox.Config
	Delivery delivery.Config
	WebPush  webpush.Config
	FCM      fcm.Config
	APNS     apns.Config
	Ingest   ingest.Config
	Topics   topics.Config
}

// Hub is a hub and its HTTP server, in-process, on a real Redis.
type Hub struct {
	URL    string
	Hub    *hub.Hub
	Inbox  *inbox.Inbox
	Ingest *ingest.Ingest
	Cfg    Configs
	HTTP   api.Config
	// Pipeline is every door's publish path.
	Pipeline *publish.Pipeline
	Topics   *topics.Topics
	Tokens   *api.TokenVerifier
	Redis    rueidis.Client
	srv      *httptest.Server
	Conns    *connTracker
	API      *api.Server
}

// StartTrimming starts a hub on a fresh Redis whose stream nodes hold 5
// entries, so that MAXLEN ~ trims even a short history (STREAM_MAXLEN or
// INBOX_MAX_ENTRIES set small by cfg).
func StartTrimming(t *testing.T, cfg func(*Configs)) *Hub {
	t.Helper()
	rs := testredis.Start(t)
	testredis.Do(t, testredis.Client(t, rs.Addr()), "CONFIG", "SET", "stream-node-max-entries", "5")
	return Start(t, rs.Addr(), cfg)
}

// Start starts a hub on the Redis at addr; mutate adjusts the core's
// config.
func Start(t testing.TB, addr string, mutate func(*Configs)) *Hub {
	t.Helper()
	return StartWith(t, addr, mutate, nil)
}

// StartWith is Start whose HTTP side's config mutateHTTP adjusts too.
func StartWith(t testing.TB, addr string, mutate func(*Configs), mutateHTTP func(*api.Config)) *Hub {
	t.Helper()
	return StartFull(t, addr, mutate, mutateHTTP, Extras{})
}

// Extras are what StartFull adds to StartWith's hub.
type Extras struct {
	PushTLS *tls.Config          // the webpush channel (when listed) trusts it: a stand-in push service's certificate
	Tracing trace.TracerProvider // the hub records spans through it (nil: none)
	MaxData int64                // PUBLISH_MAX_BYTES (0: its default)
}

// StartFull is StartWith with extras.
func StartFull(t testing.TB, addr string, mutate func(*Configs), mutateHTTP func(*api.Config), extras Extras) *Hub {
	t.Helper()
	cfg, httpCfg := configs(t, addr, mutate, mutateHTTP)
	opt, err := hub.RedisOptions(cfg.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	log := Logger()
	h := hub.New(cfg.Config, rdb, log, hub.NewMetrics(cfg.EventTypes))
	if extras.Tracing != nil {
		h.UseTracing(extras.Tracing)
	}
	d, err := delivery.New(h, cfg.Delivery, log, inbox.Items())
	if err != nil {
		t.Fatal(err)
	}
	ib := inbox.New(h, cfg.Inbox, log)
	ib.UseDelivery(d)
	pushCfg := channels.Config{Delivery: cfg.Delivery, WebPush: cfg.WebPush, FCM: cfg.FCM, APNS: cfg.APNS}
	ch, err := channels.New(context.Background(), h, pushCfg, log, ib, extras.PushTLS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ch.Close)
	d.Senders = ch.Senders
	pcfg := publish.DefaultConfig()
	if extras.MaxData > 0 {
		pcfg.MaxDataBytes = extras.MaxData
	}
	d.ItemMaxBytes = pcfg.MaxDataBytes
	pipeline := publish.New(h, ib, pcfg)
	tp := topics.New(h, ib, cfg.Topics, log)
	h.Start()
	apiSrv := api.New(httpCfg, h, ib, pipeline, log, web.FS())
	in := ingest.New(h, cfg.Ingest, log)
	in.Start(pipeline)
	apiSrv.UseIngest(in)
	apiSrv.UsePush(ch.WebPush)
	apiSrv.UseDevices(ch.Devices)
	apiSrv.UseTopics(tp)
	if httpCfg.Console() {
		if err := apiSrv.UseConsole(console.New(h, httpCfg.ConsolePassword), web.Console()); err != nil {
			t.Fatal(err)
		}
	}
	th := &Hub{Hub: h, Inbox: ib, Ingest: in, Cfg: cfg, HTTP: httpCfg, Pipeline: pipeline, Topics: tp, Redis: rdb, API: apiSrv,
		Tokens: api.NewTokenVerifier(httpCfg.JWTSecret).Expect(httpCfg.JWTIssuer, httpCfg.JWTAudience)}
	th.serve(t)
	th.WaitHealthy(t)
	// The instance's first reading of the registry (at its clock's first
	// tick): from then on it writes what only hubs of its version read
	// (hub.FleetVersion), which is what tests look at.
	Eventually(t, Wait, "the instance has read the registry", func() bool { return h.FleetVersion() >= hub.InstanceVersion })
	return th
}

// configs are a test hub's configurations on the Redis at addr: the
// defaults with nothing set, adjusted for tests, then by mutate and
// mutateHTTP.
func configs(t testing.TB, addr string, mutate func(*Configs), mutateHTTP func(*api.Config)) (Configs, api.Config) {
	push, err := channels.LoadConfig(env.Map(nil), delivery.DefaultConfig(), hub.DefaultConfig()) // nothing set: no channel on
	if err != nil {
		t.Fatal(err)
	}
	cfg := Configs{Config: hub.DefaultConfig(), Inbox: inbox.DefaultConfig(), Delivery: push.Delivery,
		WebPush: push.WebPush, FCM: push.FCM, APNS: push.APNS, Ingest: ingest.DefaultConfig(), Topics: topics.DefaultConfig()}
	cfg.RedisURL = "redis://" + addr
	cfg.ShutdownSpread = 0    // each test's teardown ends its streams at once
	cfg.Ingest.Partitions = 0 // consumed only where a test asks (WithIngest)
	if mutate != nil {
		mutate(&cfg)
	}
	httpCfg := api.DefaultConfig()
	// Tests open streams far faster than people: the rate limit test sets its own.
	httpCfg.StreamOpens, httpCfg.Heartbeats = api.Budget{PerSec: 1000, Burst: 1000}, api.Budget{PerSec: 1000, Burst: 1000}
	httpCfg.UserRequests, httpCfg.IPRequests = api.Budget{PerSec: 100000, Burst: 100000}, api.Budget{PerSec: 100000, Burst: 100000}
	if mutateHTTP != nil {
		mutateHTTP(&httpCfg)
	}
	return cfg, httpCfg
}

// serve starts th's HTTP server (its connections tracked), and stops it
// with the hub and Redis client when the test ends.
func (th *Hub) serve(t testing.TB) {
	srv := httptest.NewUnstartedServer(th.API)
	th.Conns = &connTracker{m: map[net.Conn]bool{}}
	srv.Config.ConnState = th.Conns.track
	srv.Start()
	th.srv, th.URL = srv, srv.URL
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := th.Hub.EndStreams(ctx); err != nil {
			t.Errorf("hub.EndStreams: %v", err)
		}
		srv.Close()
		th.API.Close()
		if err := th.Hub.Close(ctx); err != nil {
			t.Errorf("hub.Close: %v", err)
		}
		th.Redis.Close()
	})
}

// connTracker keeps the server's open connections, hijacked streams included
// (httptest forgets those).
type connTracker struct {
	mu sync.Mutex
	m  map[net.Conn]bool
}

func (ct *connTracker) track(c net.Conn, st http.ConnState) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	switch st {
	case http.StateNew:
		ct.m[c] = true
	case http.StateClosed:
		delete(ct.m, c)
	}
}

// DropConnections cuts every client connection as a network failure would:
// both directions of each socket are shut down, so the clients see the end
// and the hub sees its streams' sockets close.
func (th *Hub) DropConnections() {
	th.Conns.mu.Lock()
	ends := map[[2]string]bool{}
	for c := range th.Conns.m {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseRead()
			_ = tc.CloseWrite()
		}
		ends[[2]string{c.LocalAddr().String(), c.RemoteAddr().String()}] = true
		delete(th.Conns.m, c)
	}
	// Not under conns.mu: httptest calls track under its own lock.
	th.Conns.mu.Unlock()
	shutdownSockets(ends)
	th.srv.CloseClientConnections()
}

// shutdownSockets shuts down both ways this process's sockets whose local and
// remote addresses are among ends. A hijacked stream's socket is held by a
// descriptor of the hub's own (net's was closed), so it is found by its
// addresses among /proc/self/fd.
func shutdownSockets(ends map[[2]string]bool) {
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		local, err := unix.Getsockname(fd)
		if err != nil {
			continue
		}
		remote, err := unix.Getpeername(fd)
		if err != nil {
			continue
		}
		if ends[[2]string{sockaddrString(local), sockaddrString(remote)}] {
			_ = unix.Shutdown(fd, unix.SHUT_RDWR)
		}
	}
}

// sockaddrString formats sa as net.Addr.String does.
func sockaddrString(sa unix.Sockaddr) string {
	var ip net.IP
	var port int
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		ip, port = a.Addr[:], a.Port
	case *unix.SockaddrInet6:
		ip, port = a.Addr[:], a.Port
	default:
		return ""
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port))
}

// WaitHealthy waits (bounded) until /health says healthy: the listener is subscribed.
func (th *Hub) WaitHealthy(t testing.TB) {
	t.Helper()
	Eventually(t, 10*time.Second, "hub healthy", func() bool {
		code, _ := th.Get(t, "/health", "")
		return code == http.StatusOK
	})
}

// Eventually polls f until it holds, failing t after d.
var Eventually = testbin.Eventually

// Token signs an access token for user, valid an hour.
func (th *Hub) Token(t testing.TB, user int64) string {
	t.Helper()
	tok, err := th.Tokens.Sign(user, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// HTTPClient is what the helpers send requests with. Its bound is far
// above what an idle machine needs: make test runs two packages' tests at
// once beside the other test binaries' builds, on two cores.
var HTTPClient = &http.Client{Timeout: 30 * time.Second}

// Do sends a request and returns the status and decoded envelope.
func (th *Hub) Do(t testing.TB, method, path string, hdr map[string]string, body string) (int, api.Envelope) {
	t.Helper()
	code, env, err := th.TryDo(method, path, hdr, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, env
}

// TryDo is Do for goroutines other than the test's: it returns what went
// wrong instead of failing the test.
func (th *Hub) TryDo(method, path string, hdr map[string]string, body string) (int, api.Envelope, error) {
	req, err := http.NewRequest(method, th.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, api.Envelope{}, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := HTTPClient.Do(req)
	if err != nil {
		return 0, api.Envelope{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env api.Envelope
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		if err := json.Unmarshal(b, &env); err != nil {
			return 0, api.Envelope{}, fmt.Errorf("%s %s: bad JSON %q", method, path, b)
		}
		if err := CheckAnswer(method, path, resp.StatusCode, b); err != nil {
			return 0, api.Envelope{}, err
		}
	} else if method != http.MethodHead && path != "/metrics" {
		return 0, api.Envelope{}, fmt.Errorf("%s %s: Content-Type %q, body %q: every answer must be JSON", method, path, ct, b)
	}
	return resp.StatusCode, env, nil
}

// Get sends GET path with token (as Bearer, unless "").
func (th *Hub) Get(t testing.TB, path, token string) (int, api.Envelope) {
	t.Helper()
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return th.Do(t, http.MethodGet, path, h, "")
}

// PublishRaw posts a publish body with the internal key.
func (th *Hub) PublishRaw(t testing.TB, body string) (int, api.Envelope) {
	t.Helper()
	return th.Do(t, http.MethodPost, "/api/v1/notifications/publish",
		map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}, body)
}

// Publish publishes one event and returns its result; it fails the test on error.
func (th *Hub) Publish(t testing.TB, room int64, typ string, data any) hub.PublishResult {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"roomId": room, "eventType": typ, "data": data, "publisherId": 1})
	code, env := th.PublishRaw(t, string(b))
	if code != http.StatusOK {
		t.Fatalf("publish: %d %+v", code, env)
	}
	var res hub.PublishResult
	Remarshal(t, env.Result, &res)
	return res
}

// HistoryNs is data.n of each event in room's history (at most 500), in order.
func (th *Hub) HistoryNs(t testing.TB, room int64) []int {
	t.Helper()
	code, env := th.Get(t, fmt.Sprintf("/api/v1/rooms/%d/events?since=0&count=500", room), th.Token(t, 1))
	if code != 200 {
		t.Fatalf("room %d's events: %d %+v", room, code, env)
	}
	var page hub.EventsPage
	Remarshal(t, env.Result, &page)
	got := []int{}
	for _, e := range page.Events {
		var d struct{ N int }
		_ = json.Unmarshal(e.Data, &d)
		got = append(got, d.N)
	}
	return got
}

// Remarshal turns in (a decoded envelope's result) into out through JSON.
func Remarshal(t testing.TB, in, out any) {
	t.Helper()
	b, _ := json.Marshal(in)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
}

// MetricValue reads one series from /metrics.
func MetricValue(t *testing.T, th *Hub, series string) string {
	t.Helper()
	resp, err := http.Get(th.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return seriesValue(t, string(b), series)
}

// MetricValueOf is MetricValue for a metrics set of its own.
func MetricValueOf(t *testing.T, set *metrics.Set, series string) string {
	t.Helper()
	var b strings.Builder
	set.WritePrometheus(&b)
	return seriesValue(t, b.String(), series)
}

// seriesValue is series' value in a Prometheus text page.
func seriesValue(t *testing.T, page, series string) string {
	t.Helper()
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	t.Fatalf("the metrics have no %s", series)
	return ""
}

// Wait is how long a test waits for an event that must come.
const Wait = 10 * time.Second
