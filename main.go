// Command roomhub is a realtime notification hub on Redis: browsers hold
// Server-Sent Events streams (per room, their own notifications, or one for
// a whole page); a backend publishes over HTTP or the ingest streams; each
// recipient gets an inbox item with exact counts, and is reached beyond the
// tab (Web Push, FCM and APNs sent by the hub, or the backend's gateway)
// when not looking. Redis is the only state. main only wires: configuration,
// logger, Redis, the hub and its inbox, the publish pipeline, delivery,
// push and ingest, the HTTP server, shutdown.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/hub/console"
	"roomhub/hub/delivery"
	"roomhub/hub/inbox"
	"roomhub/hub/ingest"
	"roomhub/hub/publish"
	"roomhub/hub/push/channels"
	"roomhub/hub/push/webpush"
	"roomhub/hub/topics"
	"roomhub/internal/devredis"
	"roomhub/internal/env"
	"roomhub/internal/telemetry"
	"roomhub/internal/version"
	"roomhub/web"
)

func main() {
	if len(os.Args) > 1 {
		os.Exit(command(os.Args[1:]))
	}
	m, err := NewMain()
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = m.Run(ctx)
		stop()
		m.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "roomhub:", err)
		os.Exit(1)
	}
}

// command runs the command args name and returns its exit code: help and
// the version on stdout (0), anything unknown the usage on stderr (2),
// never a hub started by mistake.
func command(args []string) int {
	help := slices.ContainsFunc(args, func(a string) bool { return a == "--help" || a == "-h" || a == "help" })
	switch {
	case help:
		fmt.Print(usage)
		return 0
	case args[0] == "--version" || args[0] == "version":
		fmt.Println(version.Get())
		return 0
	case args[0] == "healthcheck":
		return healthcheck()
	case args[0] == "webpush-keys":
		return printWebPushKeys()
	}
	fmt.Fprint(os.Stderr, usage)
	return 2
}

// usage is the program's help: its commands.
const usage = `usage: roomhub [command]

With no command, roomhub serves on SERVER_PORT (8083): with REDIS_URL unset it
runs on an embedded in-process Redis (the dev mode). Configuration is the
environment (README.md, Configuration; .env.example lists every variable).

Commands:
  healthcheck    ask the hub on this machine for /health (exit 0 when healthy)
  webpush-keys   print a new VAPID key pair for WEBPUSH_VAPID_*
  --version      print the version (also in /health and roomhub_build_info)
  --help         print this
`

// Main is the program: its configuration, logger and tracing (NewMain),
// then what Run opens and wires. Close gives back what Run opened, in the
// reverse order.
type Main struct {
	httpCfg   api.Config
	pubCfg    publish.Config
	cfg       hub.Config
	inboxCfg  inbox.Config
	topicsCfg topics.Config
	ingestCfg ingest.Config
	pushCfg   channels.Config // and delivery's
	log       *slog.Logger
	tracing   *telemetry.Tracing // nil: tracing is off
	closers   []func()           // run by Close, the last first

	srv     *http.Server                 // the main port: degraded until Redis answers, then the API
	handler atomic.Pointer[http.Handler] // what srv serves now
	errc    chan error                   // srv's end
	hub     *hub.Hub
}

// NewMain reads and checks the configuration (before anything waits for
// Redis, so a bad value stops start-up at once, naming its variable), and
// makes the logger and the tracer provider.
func NewMain() (*Main, error) {
	httpCfg, err := api.LoadConfig(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	pubCfg, err := publish.LoadConfig(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	cfg, err := hub.LoadConfig(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	m := &Main{httpCfg: httpCfg, pubCfg: pubCfg, cfg: cfg, errc: make(chan error, 1)}
	if m.topicsCfg, err = topics.LoadConfig(os.LookupEnv); err != nil {
		return nil, err
	}
	if m.inboxCfg, err = inbox.LoadConfig(os.LookupEnv); err != nil {
		return nil, err
	}
	if m.ingestCfg, err = ingest.LoadConfig(os.LookupEnv); err != nil {
		return nil, err
	}
	dcfg, err := delivery.LoadConfig(os.LookupEnv, cfg) // the embedded dev mode: closed demo tabs ring
	if err != nil {
		return nil, err
	}
	if m.pushCfg, err = channels.LoadConfig(os.LookupEnv, dcfg, cfg); err != nil {
		return nil, err
	}
	m.log = slog.New(telemetry.LogHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel})))
	if m.tracing, err = telemetry.Start(context.Background(), os.LookupEnv, m.log); err != nil {
		return nil, err
	}
	if m.tracing != nil {
		m.atClose(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := m.tracing.Shutdown(ctx); err != nil {
				m.log.Warn("exporting the last spans", "err", err)
			}
		})
		m.log.Info("tracing on", "endpoint", m.tracing.Endpoint, "protocol", m.tracing.Protocol)
	}
	return m, nil
}

// atClose has Close run f (the last one given first).
func (m *Main) atClose(f func()) { m.closers = append(m.closers, f) }

// Close gives back what NewMain and Run opened, the last opened first.
func (m *Main) Close() {
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i]()
	}
	m.closers = nil
}

// Run serves until ctx ends (SIGTERM) or the HTTP server fails: the main
// port at once (degraded until Redis answers), Redis (embedded in the dev
// mode), the hub and everything built on it, then a bounded shutdown.
func (m *Main) Run(ctx context.Context) error {
	opt, err := m.redisOptions()
	if err != nil {
		return err
	}
	if err := m.listen(); err != nil {
		return err
	}
	rdb, err := connectRedis(ctx, opt, m.log, m.errc)
	if err != nil {
		_ = m.srv.Close()
		return err
	}
	m.atClose(rdb.Close)
	apiSrv, err := m.wire(ctx, rdb)
	if err != nil {
		return err
	}
	ready := http.Handler(apiSrv)
	m.handler.Store(&ready)
	return m.serve(ctx)
}

// redisOptions is the client's options: REDIS_URL's, or the embedded Redis
// of the dev mode, started here.
func (m *Main) redisOptions() (rueidis.ClientOption, error) {
	if !m.cfg.Embedded() {
		opt, err := hub.RedisOptions(m.cfg.RedisURL)
		if err != nil {
			shown, reason := env.URLProblem(m.cfg.RedisURL, err)
			return opt, &hub.ConfigError{Var: "REDIS_URL", Value: shown, Reason: reason}
		}
		return opt, nil
	}
	mr, err := devredis.Start()
	if err != nil {
		return rueidis.ClientOption{}, fmt.Errorf("starting embedded redis: %w", err)
	}
	m.atClose(mr.Close)
	m.log.Warn("dev mode: REDIS_URL is unset, using an embedded in-memory Redis; data is lost on exit", "addr", mr.Addr())
	return hub.EmbeddedRedisOptions(mr.Addr()), nil
}

// listen serves the main port at once: degraded until Redis answers, so
// that a hub started before its Redis becomes healthy by itself. A port it
// cannot bind stops start-up, named.
func (m *Main) listen() error {
	port := strconv.Itoa(m.httpCfg.Port)
	ln, err := net.Listen("tcp", ":"+port) // bound before it says so: a taken port stops start-up
	if err != nil {
		return &hub.ConfigError{Var: "SERVER_PORT", Value: port, Reason: "cannot listen: " + err.Error()}
	}
	starting := api.Starting(time.Now())
	m.handler.Store(&starting)
	m.srv = api.NewHTTPServer(":"+port,
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*m.handler.Load()).ServeHTTP(w, r) }), m.log)
	go func() {
		if m.httpCfg.TLS() { // HTTP/2 comes with TLS: every stream of a page shares one connection
			m.errc <- m.srv.ServeTLS(ln, m.httpCfg.TLSCertFile, m.httpCfg.TLSKeyFile)
			return
		}
		m.errc <- m.srv.Serve(ln)
	}()
	m.log.Info("roomhub listening", "port", m.httpCfg.Port, "env", m.cfg.Env, "tls", m.httpCfg.TLS(), "version", version.Version)
	if m.httpCfg.DebugAddr != "" {
		m.atClose(serveApart(m.httpCfg.DebugAddr, api.DebugHandler(), m.log, "debug"))
		m.log.Warn("pprof profiles are served", "addr", m.httpCfg.DebugAddr)
	}
	return nil
}

// wire builds the hub on rdb and what stands on it (delivery, the inbox,
// ingest, Web Push), starts it, and returns the API that serves it all.
func (m *Main) wire(ctx context.Context, rdb rueidis.Client) (*api.Server, error) {
	h := hub.New(m.cfg, rdb, m.log, hub.NewMetrics(m.cfg.EventTypes))
	if m.tracing != nil {
		h.UseTracing(m.tracing.Provider)
	}
	d, err := delivery.New(h, m.pushCfg.Delivery, m.log, inbox.Items())
	if err != nil {
		return nil, err
	}
	d.ItemMaxBytes = m.pubCfg.MaxDataBytes
	ib := inbox.New(h, m.inboxCfg, m.log)
	ib.UseDelivery(d)
	pipeline := publish.New(h, ib, m.pubCfg) // every door's publish path
	in := ingest.New(h, m.ingestCfg, m.log)
	ch, err := channels.New(ctx, h, m.pushCfg, m.log, ib, nil)
	if err != nil {
		return nil, err
	}
	m.atClose(ch.Close)
	d.Senders = ch.Senders
	tp := topics.New(h, ib, m.topicsCfg, m.log)
	h.Start()
	m.hub = h
	apiSrv := api.New(m.httpCfg, h, ib, pipeline, m.log, web.FS())
	m.atClose(apiSrv.Close)
	in.Start(pipeline)
	apiSrv.UseIngest(in)
	apiSrv.UsePush(ch.WebPush)
	apiSrv.UseDevices(ch.Devices)
	apiSrv.UseTopics(tp)
	if m.httpCfg.Console() {
		if err := apiSrv.UseConsole(console.New(h, m.httpCfg.ConsolePassword), web.Console()); err != nil {
			return nil, err
		}
		m.log.Info("the operator's console is served at /console")
	}
	if m.httpCfg.MetricsAddr != "" {
		m.atClose(serveApart(m.httpCfg.MetricsAddr, apiSrv.MetricsHandler(), m.log, "metrics"))
		m.log.Info("metrics are served apart", "addr", m.httpCfg.MetricsAddr)
	}
	return apiSrv, nil
}

// serve waits for ctx's end or the HTTP server's failure, then shuts down
// within hub.ShutdownTimeout: streams ended (spread), the HTTP server, the hub.
func (m *Main) serve(ctx context.Context) error {
	select {
	case err := <-m.errc:
		_ = m.hub.Close(context.Background())
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	m.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), hub.ShutdownTimeout)
	defer cancel()
	if err := m.hub.EndStreams(sctx); err != nil {
		m.log.Warn("ending streams", "err", err)
	}
	if err := m.srv.Shutdown(sctx); err != nil {
		m.log.Warn("http shutdown", "err", err)
	}
	if err := m.hub.Close(sctx); err != nil {
		m.log.Warn("hub shutdown", "err", err)
	}
	if err := <-m.errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	m.log.Info("stopped")
	return nil
}

// serveApart serves handler on a listener of its own (pprof, /metrics) until
// the returned func closes it; a listener that fails is logged, not fatal.
func serveApart(addr string, handler http.Handler, log *slog.Logger, what string) (closeIt func()) {
	srv := &http.Server{Addr: addr, Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn(what+" listener", "addr", addr, "err", err)
		}
	}()
	return func() { _ = srv.Close() }
}

// connectRedis makes the Redis client, retrying with the hub's backoff while
// Redis does not answer (logged), until ctx ends or the HTTP server fails
// (errc).
func connectRedis(ctx context.Context, opt rueidis.ClientOption, log *slog.Logger, errc <-chan error) (rueidis.Client, error) {
	ctx, cancel := context.WithCancel(ctx)
	var httpErr error
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case httpErr = <-errc:
			cancel()
		case <-ctx.Done():
		}
	}()
	var rdb rueidis.Client
	err := hub.Retry(ctx, 0, func(context.Context) (bool, error) {
		var err error
		rdb, err = rueidis.NewClient(opt)
		return false, err
	}, func(err error) { log.Warn("redis does not answer yet; serving degraded and retrying", "err", err) })
	cancel()
	<-watched
	switch {
	case httpErr != nil:
		if rdb != nil {
			rdb.Close()
		}
		return nil, fmt.Errorf("http server: %w", httpErr)
	case err != nil:
		return nil, fmt.Errorf("stopped while waiting for redis: %w", err)
	}
	return rdb, nil
}

// healthcheck asks the local hub's /health; the Docker HEALTHCHECK runs it, as
// slim images have no curl.
func healthcheck() int {
	port := os.Getenv("SERVER_PORT")
	if port == "" {
		port = "8083"
	}
	scheme := "http"
	client := &http.Client{Timeout: 3 * time.Second}
	if os.Getenv("TLS_CERT_FILE") != "" {
		// Its own certificate names the public host, not 127.0.0.1.
		scheme = "https"
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // loopback self-check
	}
	resp, err := client.Get(scheme + "://127.0.0.1:" + port + "/health")
	if err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "healthcheck: status", resp.StatusCode)
		return 1
	}
	return 0
}

// printWebPushKeys prints a fresh VAPID key pair for WEBPUSH_VAPID_*.
func printWebPushKeys() int {
	k, err := webpush.NewKeys()
	if err != nil {
		fmt.Fprintln(os.Stderr, "roomhub:", err)
		return 1
	}
	fmt.Printf("WEBPUSH_VAPID_PUBLIC_KEY=%s\nWEBPUSH_VAPID_PRIVATE_KEY=%s\n", k.Public, k.Private())
	return 0
}
