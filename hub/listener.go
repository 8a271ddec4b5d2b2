package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// runListener owns the pub/sub connection: it subscribes, hands messages to the
// local rooms, and on loss reconnects with jittered backoff. Every (re)subscribe
// makes the local rooms replay what history holds after what they delivered, so
// a Redis blip loses no event for a connected client.
func (h *Hub) runListener(ctx context.Context) {
	_ = Retry(ctx, 0, func(ctx context.Context) (bool, error) {
		wasUp, err := h.listenOnce(ctx)
		h.subscribed.Store(false)
		if ctx.Err() != nil {
			return wasUp, ctx.Err()
		}
		h.metrics.PubSubReconnect.Inc()
		if err == nil {
			err = errors.New("subscription ended")
		}
		return wasUp, err
	}, func(err error) { h.log.Warn("pub/sub listener disconnected; reconnecting", "err", err) })
}

// listenOnce subscribes on a dedicated connection and returns when it is lost
// (or ctx ends), reporting whether the subscription had been confirmed.
func (h *Hub) listenOnce(ctx context.Context) (bool, error) {
	dc, _ := h.rdb.Dedicate()
	defer dc.Close()
	var confirmed atomic.Int32 // subscriptions confirmed: room and user patterns (unless per topic), control channel
	want := int32(3)
	if h.channels != nil {
		want = 1
	}
	var up atomic.Bool
	live := newLiveness()
	lost := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) {
			live.heard()
			if m.Channel == UserControlChannel {
				if !live.answered(m.Message) {
					h.onControl(m.Message)
				}
				return
			}
			h.onMessage(m.Channel, m.Message)
		},
		OnSubscription: func(s rueidis.PubSubSubscription) {
			live.heard()
			if s.Kind == "subscribe" && s.Channel != UserControlChannel {
				h.onChannelSubscribed(s.Channel) // PUBSUB_MODE=channels
				return
			}
			if (s.Kind == "psubscribe" || s.Kind == "subscribe") && confirmed.Add(1) == want {
				up.Store(true)
				h.subscribed.Store(true)
				if h.channels == nil { // with channels, each topic repairs as its subscription is confirmed
					h.repairAll()
				}
			}
		},
	})
	// The watchdog ends with this call: it closes dc when a probe goes
	// unanswered, which ends the wait below.
	wctx, stopWatch := context.WithCancel(ctx)
	watching := make(chan struct{})
	go func() { defer close(watching); h.watchListener(wctx, dc, live) }()
	defer func() { stopWatch(); <-watching }()
	sctx, cancel := context.WithTimeout(ctx, redisTimeout)
	var err error
	if want == 3 {
		err = dc.Do(sctx, dc.B().Psubscribe().Pattern(roomChannelPattern, userChannelPattern).Build()).Error()
	}
	if err == nil {
		err = dc.Do(sctx, dc.B().Subscribe().Channel(UserControlChannel).Build()).Error()
	}
	cancel()
	if err != nil {
		return false, err
	}
	synced := make(chan error, 1)
	if h.channels != nil {
		cctx, stopSync := context.WithCancel(ctx)
		syncing := make(chan struct{})
		go func() { defer close(syncing); synced <- h.syncChannels(cctx, dc) }()
		defer func() { stopSync(); <-syncing }()
	}
	select {
	case err := <-lost:
		return up.Load(), err
	case err := <-synced:
		return up.Load(), err
	case <-h.misplaced:
		h.metrics.ListenerMoves.Inc()
		return up.Load(), errMisplaced
	case <-ctx.Done():
		return up.Load(), nil
	}
}

// errMisplaced ends a listener that is not on the node taking the writes.
var errMisplaced = errors.New("a publish reached no listener: this one is not on the master (a failover?)")

// noListenerHeard is told that a publish of this hub to room reached no
// subscriber. On one Redis (or Sentinel) our listener is subscribed on the
// master to every room (patterns) or to the room (channels, when it carries
// it), so that means ours is elsewhere:
// left on a demoted node after a failover, where it hears the new master's
// events late (once that replica has synced) or not at all. It reconnects
// (at most once every 5 s) and replays; the reconnect reaches the master.
func (h *Hub) noListenerHeard(room int64) {
	if !h.listening() || h.sharded || (h.channels != nil && !h.channels.carried(room)) {
		return
	}
	now := time.Now().UnixNano()
	if last := h.lastMoved.Load(); now-last < int64(5*time.Second) || !h.lastMoved.CompareAndSwap(last, now) {
		return
	}
	select {
	case h.misplaced <- struct{}{}:
	default:
	}
}

// liveness tells a silently dead subscription (a half-open TCP connection, a
// connection left on a demoted node) from a quiet one: when nothing has
// arrived for ListenerIdle, the listener publishes a probe to itself and
// expects it back.
type liveness struct {
	last  atomic.Int64 // unix ns of the last thing received
	token atomic.Pointer[string]
	got   chan struct{}
}

func newLiveness() *liveness {
	l := &liveness{got: make(chan struct{}, 1)}
	l.heard()
	return l
}

func (l *liveness) heard() { l.last.Store(time.Now().UnixNano()) }

// answered reports whether msg is a probe (any instance's: they are not
// control orders), and notes this listener's own.
func (l *liveness) answered(msg string) bool {
	if !strings.Contains(msg, `"probe"`) {
		return false
	}
	var m struct{ Probe string }
	if json.Unmarshal([]byte(msg), &m) != nil || m.Probe == "" {
		return false
	}
	if t := l.token.Load(); t != nil && m.Probe == *t {
		select {
		case l.got <- struct{}{}:
		default:
		}
	}
	return true
}

// watchListener probes the subscription whenever it has been silent for
// ListenerIdle; an unanswered probe (within ListenerIdle, at most the Redis
// timeout) closes dc, and the listener reconnects and replays.
func (h *Hub) watchListener(ctx context.Context, dc rueidis.DedicatedClient, l *liveness) {
	idle := h.cfg.ListenerIdle
	if idle <= 0 {
		return
	}
	t := time.NewTicker(idle / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, l.last.Load())) < idle {
			continue
		}
		token := newID()
		l.token.Store(&token)
		select {
		case <-l.got:
		default:
		}
		wait := min(idle, redisTimeout)
		pctx, cancel := context.WithTimeout(ctx, wait)
		err := h.rdb.Do(pctx, h.rdb.B().Publish().Channel(UserControlChannel).Message(`{"probe":"`+token+`"}`).Build()).Error()
		if err == nil {
			select {
			case <-l.got:
			case <-pctx.Done():
				err = pctx.Err()
			}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			h.metrics.ProbeFailures.Inc()
			h.log.Warn("pub/sub listener did not hear its own probe; reconnecting", "err", err)
			dc.Close()
			return
		}
	}
}

// topicSubscription keeps topic t's own subscription on a Redis Cluster:
// SSUBSCRIBE room:{id} (or user:{id}), where the hub SPUBLISHes and a
// pattern would not see it. Each confirmed (re)subscription makes the topic
// replay what it may have missed. It ends when the topic closes (ctx).
func (h *Hub) topicSubscription(ctx context.Context, t *topic) {
	cmd, kind := h.rdb.B().Ssubscribe().Channel(TopicChannel(t.id)).Build(), "ssubscribe"
	_ = Retry(ctx, 0, func(ctx context.Context) (bool, error) {
		var up atomic.Bool
		sctx := rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
			if s.Kind == kind {
				up.Store(true)
				h.requestRepair(t)
			}
		})
		err := h.rdb.Receive(sctx, cmd, func(m rueidis.PubSubMessage) { h.onMessage(m.Channel, m.Message) })
		if ctx.Err() != nil {
			return up.Load(), ctx.Err()
		}
		h.metrics.PubSubReconnect.Inc()
		if err == nil {
			err = errors.New("subscription ended")
		}
		return up.Load(), err
	}, func(err error) { h.log.Warn("topic subscription lost; resubscribing", "topic", t.id, "err", err) })
}

// listening reports whether the listener is subscribed.
func (h *Hub) listening() bool { return h.subscribed.Load() }

// wireMessage is what arrives on a room channel: the hub's own message (with id
// and seq) or a backend's raw message {"eventType","roomId","data","timestamp"}.
type wireMessage struct {
	ID          string          `json:"id"`
	Seq         int64           `json:"seq"`
	RoomID      json.RawMessage `json:"roomId"`
	EventType   string          `json:"eventType"`
	PublisherID json.RawMessage `json:"publisherId"`
	Timestamp   json.RawMessage `json:"timestamp"`
	Data        json.RawMessage `json:"data"`
	TraceParent string          `json:"traceparent"` // the publish's, when its trace is sampled
}

// onMessage delivers one pub/sub message. Invalid messages are counted and
// logged, never fatal.
func (h *Hub) onMessage(channel, payload string) {
	id, ok := topicFromChannel(channel)
	if !ok {
		h.invalidMessage(channel, "channel is not room:<id> or user:{<id>}")
		return
	}
	t := h.topic(id)
	if t == nil {
		return // nobody here follows that topic
	}
	// Only the hub's own channel form (braces) carries ids: a backend's raw
	// message on room:42 never moves a room's position.
	ev, reason := parseWireMessage(id, []byte(payload), strings.Contains(channel, "{"))
	if ev == nil {
		h.invalidMessage(channel, reason)
		return
	}
	if ev.traceparent != "" {
		h.deliverTraced(t, ev)
		return
	}
	h.deliverLive(t, ev)
}

// deliverTraced is deliverLive for an event whose publish was traced: one
// span, this instance's fan-out of it, joins the publish's trace.
func (h *Hub) deliverTraced(t *topic, ev *Event) {
	ctx := context.Background()
	if sc, ok := ParseTraceParent(ev.traceparent); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	_, span := h.tracer.Start(ctx, "fanout", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		AttrRoom.Int64(t.id), AttrStreamID.String(ev.ID.String()), AttrEventType.String(ev.Type)))
	streams := h.deliverLive(t, ev)
	span.SetAttributes(attribute.Int("roomhub.streams", streams))
	span.End()
}

func (h *Hub) invalidMessage(channel, reason string) {
	h.metrics.InvalidMessages.Inc()
	h.log.Warn("ignoring invalid pub/sub message", "channel", channel, "reason", reason)
}

// topicFromChannel reads the topic of a room channel or of "user:{7}".
func topicFromChannel(ch string) (int64, bool) {
	if s, ok := strings.CutPrefix(ch, "user:{"); ok {
		u, ok := ParseID(strings.TrimSuffix(s, "}"))
		return UserTopic(u), ok && strings.HasSuffix(s, "}")
	}
	return roomFromChannel(ch)
}

// roomFromChannel reads the room id of "room:{42}" or "room:42".
func roomFromChannel(ch string) (int64, bool) {
	s, ok := strings.CutPrefix(ch, "room:")
	if !ok {
		return 0, false
	}
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		s = s[1 : len(s)-1]
	}
	return ParseID(s)
}

// maxIDAhead is how far in the future (by the hub's clock) an event id may lie.
// Redis makes ids from its clock; a forged id far ahead would make a room drop
// every real event as already delivered.
const maxIDAhead = 10 * time.Minute

// parseWireMessage validates a channel message; on failure it returns nil and
// why. own says the message came on the hub's own channel form (room:{42},
// user:{7}): only there are id and seq believed; elsewhere they are ignored
// and the message is delivered raw.
func parseWireMessage(topic int64, payload []byte, own bool) (*Event, string) {
	var m wireMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return nil, "not a JSON object"
	}
	if len(m.RoomID) > 0 && string(m.RoomID) != "null" {
		rid := strings.Trim(string(m.RoomID), `"`)
		if n, ok := ParseID(rid); !ok || n != topic {
			return nil, "roomId does not match the channel"
		}
	}
	data := []byte(m.Data) // valid JSON: Unmarshal checked it
	if len(data) == 0 || data[0] != '{' {
		return nil, "data is not a JSON object"
	}
	if bytes.ContainsAny(data, " \t\r\n") { // the hub's own are compact already
		var err error
		if data, err = CompactObject(data); err != nil {
			return nil, "data is not a JSON object"
		}
	}
	if !ValidEventTypeName(m.EventType) {
		return nil, "bad eventType"
	}
	var ts string
	if (json.Unmarshal(m.Timestamp, &ts) != nil || ts == "") && topic > 0 {
		ts = NowTimestamp() // a user log's events carry their own
	}
	if !own {
		m.ID, m.Seq = "", 0
	}
	if m.ID == "" {
		if topic < 0 {
			return nil, "a user channel carries only the hub's own messages"
		}
		if reservedEventType(m.EventType) {
			return nil, "eventType is reserved for the hub"
		}
		return newEvent(topic, StreamID{}, 0, m.EventType, data, "", ts), ""
	}
	id, err := ParseStreamID(m.ID)
	if err != nil || id.IsZero() || m.Seq <= 0 {
		return nil, "bad id or seq"
	}
	if id.Ms > uint64(time.Now().Add(maxIDAhead).UnixMilli()) {
		return nil, "id lies far in the future"
	}
	publisher := ""
	if p := bytes.Trim(m.PublisherID, `"`); len(p) > 0 && string(p) != "null" {
		if _, err := strconv.ParseInt(string(p), 10, 64); err != nil {
			return nil, "bad publisherId"
		}
		publisher = string(p)
	}
	ev := newEvent(topic, id, m.Seq, m.EventType, data, publisher, ts)
	ev.traceparent = m.TraceParent
	return ev, ""
}
