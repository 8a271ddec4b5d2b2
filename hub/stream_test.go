package hub

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

// gateWire holds the first blocking write until gate is closed, as a socket
// that is briefly full would; it records everything written.
type gateWire struct {
	recordWire
	once    sync.Once
	blocked chan struct{} // closed when the first blocking write waits
	gate    chan struct{}
}

func (w *gateWire) Write(b net.Buffers, timeout time.Duration) error {
	w.once.Do(func() {
		close(w.blocked)
		<-w.gate
	})
	return w.recordWire.Write(b, timeout)
}

func startTestHub(t *testing.T, mutate func(*Config)) *Hub {
	t.Helper()
	return startTestHubOn(t, testredis.Start(t).Addr(), mutate)
}

// startTestHubOn is startTestHub on the Redis (or cluster) at addr.
func startTestHubOn(t *testing.T, addr string, mutate func(*Config)) *Hub {
	t.Helper()
	rdb := testredis.Client(t, addr)
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	h := New(cfg, rdb, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(nil))
	h.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	waitFor(t, "listener subscribed", h.listening)
	return h
}

// waitFor waits (bounded) until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testbin.Eventually(t, 10*time.Second, what, cond)
}

func publishN(t *testing.T, h *Hub, room int64, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		res, err := h.Publish(context.Background(), PublishRequest{Room: room, EventType: "comment.created", Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.StreamID)
	}
	return ids
}

// frameIDs returns the ids of the frames written, in order.
func frameIDs(s string) []string {
	var ids []string
	for _, line := range strings.Split(s, "\n") {
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// Live events that find a stream's queue full are dropped, and the stream
// catches up from history instead: every event arrives once, in order, and
// the client is not cut while its socket takes bytes.
func TestStream_QueueOverflowCatchesUpFromHistory(t *testing.T) {
	h := startTestHub(t, func(c *Config) { c.ChannelCapacity = 2; c.SlowWrite = time.Minute })
	ids := publishN(t, h, 7, 5)
	st, err := h.OpenStream(StreamSpec{User: 1, Rooms: []int64{7}, Resume: "0"})
	if err != nil {
		t.Fatal(err)
	}
	st.WaitReady(context.Background())
	w := &gateWire{blocked: make(chan struct{}), gate: make(chan struct{})}
	st.Start(w)
	<-w.blocked // the catch-up's first write is in flight, and stays so
	var open sync.Once
	release := func() { open.Do(func() { close(w.gate) }) }
	t.Cleanup(release) // registered after the hub's: runs before its Close
	ids = append(ids, publishN(t, h, 7, 10)...)
	// The stream's own mark, not events_lagged_total: while the new topic
	// still replays its first history page, the events come as replay,
	// whose drops that metric leaves out.
	waitFor(t, "a live event dropped", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.dropped
	})
	release()
	waitFor(t, "every event written", func() bool { return len(frameIDs(w.String())) >= len(ids) })
	if got := frameIDs(w.String()); strings.Join(got, " ") != strings.Join(ids, " ") {
		t.Fatalf("written %v\nwant    %v", got, ids)
	}
	select {
	case <-st.Done():
		t.Fatal("the stream ended")
	default:
	}
}

// A stream that sees the numbering start again without the topic's
// system.gap (dropped from its full queue) announces the gap itself.
func TestStream_NewEpochWithoutTheTopicsGapIsAnnounced(t *testing.T) {
	h := New(DefaultConfig(), nil, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(nil))
	w := &recordWire{}
	s := &Stream{h: h, done: make(chan struct{}), started: true, inline: true, wire: w}
	m := &member{s: s, topicID: 5, roomID: 5, placed: true, pos: Position{ID: StreamID{Ms: 100}, Seq: 216}}
	s.members = []*member{m}
	ev := newEvent(5, StreamID{Ms: 200}, 1, "comment.created", []byte(`{}`), "", "2026-11-23T00:00:00Z")
	if !s.offer(m, ev, &writeScratch{}) {
		t.Fatal("dropped")
	}
	got := w.String()
	gap := strings.Index(got, "event: system.gap")
	at := strings.Index(got, "event: comment.created")
	if gap < 0 || at < gap || !strings.Contains(got, `"requested":"100-0"`) {
		t.Fatalf("wrote %q, want system.gap then the event", got)
	}
	if m.pos.Seq != 1 {
		t.Fatalf("position %+v, want the new epoch's seq 1", m.pos)
	}
}
