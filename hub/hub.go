package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/trace"
)

// Hub ties the domain together: it owns the Redis client's use, the local rooms,
// the listener and every background goroutine. Create it with New, start the
// background work with Start, stop it with Close.
type Hub struct {
	cfg     Config
	rdb     *Redis
	log     *slog.Logger
	metrics *Metrics
	started time.Time

	ctx    context.Context // cancelled by Close; the parent of every background goroutine
	cancel context.CancelFunc
	// The goroutines the hub owns (Go): Go counts one in while it holds ownMu
	// shared; Close takes it alone to set closed, after which Go starts
	// nothing, and idle closes once the count is back to zero.
	ownMu    sync.RWMutex
	closed   bool
	running  atomic.Int64
	idle     chan struct{}
	idleOnce sync.Once

	streamsDone chan struct{} // closed by EndStreams: open streams end
	endOnce     sync.Once
	closeOnce   sync.Once
	starts      []func()                // work Start launches besides the core's
	finals      []func(context.Context) // final work run by Close, in order

	sharded    bool        // Redis Cluster: SPUBLISH, and SSUBSCRIBE per local topic
	channels   *channelSet // PUBSUB_MODE=channels on one Redis: the listener's connection carries them (nil: patterns, or a cluster)
	topics     topics
	streams    streams
	presence   presence
	inst       instances                        // this instance's presence lease (instances.go)
	stats      stats                            // this instance's figures for the fleet (stats.go)
	mutes      Mutes                            // nil: nothing muted
	logs       UserLogs                         // nil: users have no log
	controls   map[string]func(json.RawMessage) // OnControl's handlers, by key
	access     *access                          // who may use a room
	subscribed atomic.Bool                      // the listener's subscriptions are confirmed
	misplaced  chan struct{}                    // a publish reached no listener: ours is on another node
	lastMoved  atomic.Int64                     // unix ns of the last reconnect misplaced caused

	tracer trace.Tracer // see tracing.go

	pingMu sync.Mutex // Health's last Redis ping, kept healthPingEvery
	pingAt time.Time
	pingOK bool
}

// ShutdownTimeout bounds a graceful shutdown after SIGTERM: the streams
// ending (Config.ShutdownSpread), the HTTP server draining, the final work.
// A deployment's grace period must cover it.
const ShutdownTimeout = 15 * time.Second

// New returns a hub on rdb. It starts nothing; call Start.
func New(cfg Config, rdb rueidis.Client, log *slog.Logger, m *Metrics) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{cfg: cfg, rdb: newRedis(rdb, m), log: log, metrics: m, started: time.Now(), ctx: ctx, cancel: cancel,
		streamsDone: make(chan struct{}), misplaced: make(chan struct{}, 1), idle: make(chan struct{}), tracer: noTracer}
	h.sharded = h.rdb.Sharded()
	if !h.sharded && cfg.PubSubMode == PubSubChannels {
		h.channels = newChannelSet()
	}
	h.topics.m = map[int64]*topic{}
	h.streams.byConn = map[uint64]*Stream{}
	h.presence.running = map[int64]bool{}
	h.presence.dirty = map[int64]bool{}
	h.inst.id = newInstanceID()
	h.controls = map[string]func(json.RawMessage){}
	h.access = newAccess(cfg)
	m.Set.NewGauge("sse_active_connections", func() float64 { c, _ := h.counts(); return float64(c) })
	m.Set.NewGauge("sse_active_rooms", func() float64 { _, r := h.counts(); return float64(r) })
	m.Set.NewGauge("presence_online_users", func() float64 { return float64(h.onlineUsers()) })
	return h
}

// Config returns the hub's configuration.
func (h *Hub) Config() Config { return h.cfg }

// Metrics returns the hub's metrics.
func (h *Hub) Metrics() *Metrics { return h.metrics }

// Start launches the background work: the pub/sub listener, the streams'
// clock, the presence sweeper, and what OnStart registered.
func (h *Hub) Start() {
	h.Go(h.runListener)
	h.Go(h.runClock)
	h.Go(h.runSweeper)
	for _, f := range h.starts {
		f()
	}
}

// OnStart registers work that Start launches (with Go), after the core's own.
func (h *Hub) OnStart(f func()) { h.starts = append(h.starts, f) }

// Redis returns the hub's Redis client.
func (h *Hub) Redis() *Redis { return h.rdb }

// Go runs f as a goroutine owned by the hub: Close cancels its context and
// waits for it. After Close began it starts nothing and reports false: the
// work would be cancelled anyway.
func (h *Hub) Go(f func(ctx context.Context)) bool {
	h.ownMu.RLock()
	if h.closed {
		h.ownMu.RUnlock()
		return false
	}
	h.running.Add(1)
	h.ownMu.RUnlock()
	go func() {
		defer h.exited()
		f(h.ctx)
	}()
	return true
}

// exited counts an owned goroutine out; the last one out after Close began
// tells Close.
func (h *Hub) exited() {
	if h.running.Add(-1) != 0 {
		return
	}
	h.ownMu.RLock()
	closed := h.closed
	h.ownMu.RUnlock()
	if closed {
		h.idleOnce.Do(func() { close(h.idle) })
	}
}

// OnClose registers final work that Close runs after the background goroutines stopped.
func (h *Hub) OnClose(f func(context.Context)) { h.finals = append(h.finals, f) }

// EndStreams ends every open stream, each after a random part of
// SHUTDOWN_SPREAD with a retry: of its own, and waits (within ctx) until they
// have ended and released their presence. Streams opened from now on are
// refused.
func (h *Hub) EndStreams(ctx context.Context) error {
	h.endOnce.Do(func() {
		close(h.streamsDone)
		for _, s := range h.streams.snapshot(nil) {
			s.endForShutdown()
		}
	})
	return h.waitStreams(ctx)
}

// isClosed reports whether ch is closed (it is never sent on).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// stopping reports whether EndStreams (or Close) began: the instance ends
// its streams, and reports itself degraded so that load balancers send new
// ones elsewhere.
func (h *Hub) stopping() bool {
	return isClosed(h.streamsDone)
}

// waitStreams waits until no stream is open and every stream's release ran.
func (h *Hub) waitStreams(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for h.streams.count() > 0 || h.streams.releasing.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Close ends every stream and waits (within ctx) for their releases, stops
// the background work and waits for it, then runs the final work registered
// with OnClose. It leaves no goroutine behind, even when ctx ends first. It
// does not close the Redis client, which the caller owns.
func (h *Hub) Close(ctx context.Context) error {
	var err error
	h.closeOnce.Do(func() {
		h.endOnce.Do(func() { close(h.streamsDone) })
		for _, s := range h.streams.snapshot(nil) {
			s.Close()
		}
		if werr := h.waitStreams(ctx); werr != nil {
			err = werr
		}
		h.ownMu.Lock()
		h.closed = true
		h.ownMu.Unlock()
		h.cancel()
		if h.running.Load() == 0 {
			h.idleOnce.Do(func() { close(h.idle) })
		}
		select {
		case <-h.idle:
		case <-ctx.Done():
			err = ctx.Err()
		}
		h.endInstance(ctx)
		for _, f := range h.finals {
			f(ctx)
		}
	})
	return err
}

// Health is the hub's view of itself for /health.
type Health struct {
	Status            string `json:"status"`
	RedisConnected    bool   `json:"redisConnected"`
	ActiveConnections int64  `json:"activeConnections"`
	ActiveRooms       int64  `json:"activeRooms"`
	UptimeSecs        int64  `json:"uptimeSecs"`
}

// Healthy reports whether the hub can serve: Redis answers, the listener is
// subscribed and the instance is not stopping.
func (h Health) Healthy() bool { return h.Status == "healthy" }

// Health pings Redis (bounded by a short timeout) and checks the listener.
func (h *Hub) Health(ctx context.Context) Health {
	hl := Health{
		RedisConnected: h.redisAnswers(ctx),
		UptimeSecs:     int64(time.Since(h.started) / time.Second),
	}
	hl.Status = "degraded"
	if hl.RedisConnected && h.listening() && !h.stopping() {
		hl.Status = "healthy"
	}
	hl.ActiveConnections, hl.ActiveRooms = h.counts()
	return hl
}

// healthPingEvery bounds how often Health asks Redis: /health is open to
// anyone, and a load balancer may ask often.
const healthPingEvery = time.Second

// redisAnswers pings Redis (bounded by a second), at most once every
// healthPingEvery; in between it answers what the last ping found.
func (h *Hub) redisAnswers(ctx context.Context) bool {
	h.pingMu.Lock()
	defer h.pingMu.Unlock()
	if time.Since(h.pingAt) < healthPingEvery {
		return h.pingOK
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := Call(h.rdb, ctx, h.rdb.B().Ping().Build(), NoReply)
	h.pingAt, h.pingOK = time.Now(), err == nil
	return h.pingOK
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
