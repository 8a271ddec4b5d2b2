package hub

import (
	"fmt"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Metrics are the hub's counters and gauges, in a set the application owns.
// Everything is registered up front so that /metrics lists it at zero.
type Metrics struct {
	Set *metrics.Set

	published       map[string]*metrics.Counter
	Delivered       *metrics.Counter
	Lagged          *metrics.Counter
	PubSubReconnect *metrics.Counter
	ListenerMoves   *metrics.Counter // reconnects because a publish reached no listener (a failover)
	ProbeFailures   *metrics.Counter
	InvalidMessages *metrics.Counter
	Heartbeats      *metrics.Counter
	Evictions       *metrics.Counter
	StreamsOpened   *metrics.Counter // every stream this instance opened: with sse_active_connections, churn
	PresenceUpdates *metrics.Counter
	NotReplicated   *metrics.Counter
	lockAcquired    *metrics.Counter
	lockBusy        *metrics.Counter
	lockError       *metrics.Counter
	redisDuration   *metrics.Histogram
	accessResults   map[string]*metrics.Counter
	accessBackend   *metrics.Histogram
}

// NewMetrics registers every hub metric in a new set. eventTypes are the
// publishable types, each given its own events_published_total series.
func NewMetrics(eventTypes []string) *Metrics {
	s := metrics.NewSet()
	m := &Metrics{
		Set:             s,
		published:       map[string]*metrics.Counter{},
		Delivered:       s.NewCounter("events_delivered_total"),
		Lagged:          s.NewCounter("events_lagged_total"),
		PubSubReconnect: s.NewCounter("pubsub_reconnect_total"),
		ListenerMoves:   s.NewCounter("pubsub_listener_moves_total"),
		ProbeFailures:   s.NewCounter("pubsub_probe_failures_total"),
		InvalidMessages: s.NewCounter("pubsub_invalid_messages_total"),
		Heartbeats:      s.NewCounter("presence_heartbeat_total"),
		Evictions:       s.NewCounter("sse_evictions_total"),
		StreamsOpened:   s.NewCounter("sse_streams_opened_total"),
		PresenceUpdates: s.NewCounter("presence_updates_total"),
		NotReplicated:   s.NewCounter("publish_not_replicated_total"),
		lockAcquired:    s.NewCounter(`lock_acquire_total{result="acquired"}`),
		lockBusy:        s.NewCounter(`lock_acquire_total{result="busy"}`),
		lockError:       s.NewCounter(`lock_acquire_total{result="error"}`),
		redisDuration:   s.NewHistogram("redis_command_duration_seconds"),
		accessResults:   map[string]*metrics.Counter{},
		accessBackend:   s.NewHistogram("room_auth_backend_duration_seconds"),
	}
	for _, r := range []string{"allow", "deny", "error"} {
		m.accessResults[r] = s.NewCounter(fmt.Sprintf(`room_auth_decisions_total{result=%q}`, r))
	}
	for _, t := range append([]string{PresenceEventType}, eventTypes...) {
		m.published[t] = s.NewCounter(fmt.Sprintf(`events_published_total{event_type=%q}`, t))
	}
	return m
}

func (m *Metrics) countPublished(eventType string) {
	if c := m.published[eventType]; c != nil {
		c.Inc()
	}
}

// PublishedTotal is the events this instance published, presence's aside.
func (m *Metrics) PublishedTotal() uint64 {
	var n uint64
	for t, c := range m.published {
		if t != PresenceEventType {
			n += c.Get()
		}
	}
	return n
}

func (m *Metrics) accessDecision(result string) { m.accessResults[result].Inc() }

func (m *Metrics) countLock(acquired bool, err error) {
	switch {
	case err != nil:
		m.lockError.Inc()
	case acquired:
		m.lockAcquired.Inc()
	default:
		m.lockBusy.Inc()
	}
}

// observeRedis records how long a Redis round trip took since start.
func (m *Metrics) observeRedis(start time.Time) { m.redisDuration.UpdateDuration(start) }
