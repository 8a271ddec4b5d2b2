// Command roomhub is a realtime notification hub on Redis: browsers hold
// Server-Sent Events streams (per room, their own notifications, or one for
// a whole page); a backend publishes over HTTP or the ingest streams; each
// recipient gets an inbox item with exact counts, and is reached beyond the
// tab (Web Push sent by the hub, or the backend's gateway) when not
// looking. Redis is the only state. main only wires: configuration, logger,
// Redis, the hub and its inbox, delivery, push and ingest, the HTTP server,
// shutdown.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/hub/inbox"
	"roomhub/hub/ingest"
	"roomhub/hub/webpush"
	"roomhub/internal/devredis"
	"roomhub/internal/telemetry"
	"roomhub/web"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		os.Exit(healthcheck())
	}
	if len(os.Args) > 1 && os.Args[1] == "webpush-keys" {
		os.Exit(printWebPushKeys())
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "roomhub:", err)
		os.Exit(1)
	}
}

func run() error {
	httpCfg, err := api.LoadConfig(os.LookupEnv)
	if err != nil {
		return err
	}
	cfg, err := hub.LoadConfig(os.LookupEnv)
	if err != nil {
		return err
	}
	cfg = cfg.WithDevPush(os.LookupEnv)               // the embedded dev mode: closed demo tabs ring
	if err := delivery.CheckConfig(cfg); err != nil { // before waiting for Redis
		return err
	}
	if err := webpush.CheckConfig(cfg); err != nil {
		return err
	}
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel})))
	tracing, err := telemetry.Start(context.Background(), os.LookupEnv, log)
	if err != nil {
		return err
	}
	if tracing != nil {
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tracing.Shutdown(ctx); err != nil {
				log.Warn("exporting the last spans", "err", err)
			}
		}()
		log.Info("tracing on", "endpoint", tracing.Endpoint, "protocol", tracing.Protocol)
	}

	var opt rueidis.ClientOption
	if cfg.RedisURL == "" {
		mr, err := devredis.Start()
		if err != nil {
			return fmt.Errorf("starting embedded redis: %w", err)
		}
		defer mr.Close()
		log.Warn("dev mode: REDIS_URL is unset, using an embedded in-memory Redis; data is lost on exit", "addr", mr.Addr())
		opt = hub.EmbeddedRedisOptions(mr.Addr())
	} else if opt, err = hub.RedisOptions(cfg.RedisURL); err != nil {
		return &hub.ConfigError{Var: "REDIS_URL", Value: hub.Redact(cfg.RedisURL), Reason: hub.Redact(err.Error())}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The HTTP side answers at once: degraded until Redis answers, so that a
	// hub started before its Redis becomes healthy by itself.
	var handler atomic.Pointer[http.Handler]
	starting := api.Starting(time.Now())
	handler.Store(&starting)
	srv := api.NewHTTPServer(":"+strconv.Itoa(httpCfg.Port),
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }), log)
	errc := make(chan error, 1)
	go func() {
		if httpCfg.TLS() { // HTTP/2 comes with TLS: every stream of a page shares one connection
			errc <- srv.ListenAndServeTLS(httpCfg.TLSCertFile, httpCfg.TLSKeyFile)
			return
		}
		errc <- srv.ListenAndServe()
	}()
	log.Info("roomhub listening", "port", httpCfg.Port, "env", cfg.Env, "tls", httpCfg.TLS())
	if httpCfg.DebugAddr != "" {
		defer serveApart(httpCfg.DebugAddr, api.DebugHandler(), log, "debug")()
		log.Warn("pprof profiles are served", "addr", httpCfg.DebugAddr)
	}

	rdb, err := connectRedis(ctx, opt, log, errc)
	if err != nil {
		_ = srv.Close()
		return err
	}
	defer rdb.Close()
	m := hub.NewMetrics(cfg.EventTypes)
	h := hub.New(cfg, rdb, log, m)
	if tracing != nil {
		h.UseTracing(tracing.Provider)
	}
	d, err := delivery.New(h, log)
	if err != nil {
		return err
	}
	d.ItemMaxBytes = httpCfg.PublishMaxBytes
	ib := inbox.New(h, log)
	ib.UseDelivery(d)
	in := ingest.New(h, log)
	var push *webpush.Service
	if cfg.WebPush() {
		if push, err = webpush.New(ctx, h, log, nil); err != nil {
			return err
		}
		defer push.Close()
		d.Pusher = push
	}
	h.Start()
	apiSrv := api.New(httpCfg, h, ib, log, web.FS())
	defer apiSrv.Close()
	apiSrv.UseIngest(in)
	apiSrv.UsePush(push)
	if httpCfg.MetricsAddr != "" {
		defer serveApart(httpCfg.MetricsAddr, apiSrv.MetricsHandler(), log, "metrics")()
		log.Info("metrics are served apart", "addr", httpCfg.MetricsAddr)
	}
	ready := http.Handler(apiSrv)
	handler.Store(&ready)

	select {
	case err := <-errc:
		_ = h.Close(context.Background())
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), hub.ShutdownTimeout)
	defer cancel()
	if err := h.EndStreams(sctx); err != nil {
		log.Warn("ending streams", "err", err)
	}
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("http shutdown", "err", err)
	}
	if err := h.Close(sctx); err != nil {
		log.Warn("hub shutdown", "err", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
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
