package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/sse"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestStream_WireFormatAndFanOut(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.KeepAlive = time.Second })
	a := th.OpenStream(t, 42, 1, "")
	b := th.OpenStream(t, 42, 2, "")
	other := th.OpenStream(t, 43, 3, "")

	for k, want := range map[string]string{
		"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
	} {
		if got := a.Resp.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if f, _ := a.NextAny(t, testhub.Wait); f.Retry != "3000" {
		t.Fatalf("first frame = %+v, want retry: 3000", f)
	}

	res := th.Publish(t, 42, "comment.created", map[string]any{"userId": 2, "text": "hi"})
	for _, c := range []*testhub.SSEClient{a, b} {
		f := c.Next(t, testhub.Wait)
		if f.Event != "comment.created" || f.ID != res.StreamID {
			t.Fatalf("frame %+v, want comment.created with id %s", f, res.StreamID)
		}
		var data map[string]any
		if err := json.Unmarshal([]byte(f.Data), &data); err != nil {
			t.Fatalf("data %q: %v", f.Data, err)
		}
		ts, _ := data["timestamp"].(string)
		if _, err := time.Parse(time.RFC3339, ts); err != nil || data["text"] != "hi" || data["userId"] != 2.0 {
			t.Fatalf("data = %v: want the published object plus an RFC 3339 timestamp", data)
		}
	}
	if res.DeliveredTo != 1 {
		t.Fatalf("deliveredTo = %d, want 1 (one hub instance)", res.DeliveredTo)
	}
	// The other room hears nothing but keepalives (and its own presence).
	for i := 0; i < 3; i++ {
		f, ok := other.NextAny(t, 3*time.Second)
		if ok && f.Event == hub.PresenceEventType {
			continue
		}
		if ok && f.Event != "" {
			t.Fatalf("room 43 received %+v", f)
		}
		if ok && f.Retry == "" && f.Comment != "keepalive" {
			t.Fatalf("unexpected frame %+v", f)
		}
	}
}

func TestStream_ThousandPublishesArriveInOrder(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.ChannelCapacity = 2048 })
	c := th.OpenStream(t, 7, 1, "")
	var ids []string
	for i := 0; i < 1000; i++ {
		ids = append(ids, th.Publish(t, 7, "like.toggled", map[string]any{"n": i}).StreamID)
	}
	var prev hub.StreamID
	for i, want := range ids {
		f := c.Next(t, testhub.Wait)
		id, err := hub.ParseStreamID(f.ID)
		if f.ID != want || err != nil || !prev.Less(id) {
			t.Fatalf("event %d: id %q, want %q after %v", i, f.ID, want, prev)
		}
		if !strings.Contains(f.Data, fmt.Sprintf(`"n":%d`, i)) {
			t.Fatalf("event %d: data %s", i, f.Data)
		}
		prev = id
	}
}

func TestStream_ResumesFromLastEventID(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	for room, how := range map[int64]string{5: "header", 6: "query"} {
		t.Run(how, func(t *testing.T) {
			var ids []string
			for i := 0; i < 10; i++ {
				ids = append(ids, th.Publish(t, room, "comment.created", map[string]any{"n": i}).StreamID)
			}
			// The resuming stream's own presence.update may come first or between; next skips them.
			var c *testhub.SSEClient
			if how == "header" {
				c = th.OpenStream(t, room, 1, ids[3])
			} else {
				c = testhub.OpenSSE(t, fmt.Sprintf("%s/api/v1/rooms/%d/stream?lastEventId=%s", th.URL, room, ids[3]), th.Token(t, 1), "")
			}
			for _, want := range ids[4:] {
				if f := c.Next(t, testhub.Wait); f.ID != want {
					t.Fatalf("replayed %q, want %q", f.ID, want)
				}
			}
			live := th.Publish(t, room, "comment.created", map[string]any{"live": true})
			if f := c.Next(t, testhub.Wait); f.ID != live.StreamID {
				t.Fatalf("after replay got %+v, want live %s", f, live.StreamID)
			}
		})
	}
	t.Run("bad id", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, th.URL+"/api/v1/rooms/5/stream", nil)
		req.Header.Set("Authorization", "Bearer "+th.Token(t, 1))
		req.Header.Set("Last-Event-ID", "yesterday")
		resp, err := testhub.HTTPClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
	})
}

// publisher publishes to room until stopped and records what was accepted.
type publisher struct {
	mu       sync.Mutex
	accepted []string
	stop     chan struct{}
	done     chan struct{}
}

func startPublisher(th *testhub.Hub, room int64, max int) *publisher {
	p := &publisher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		client := &http.Client{Timeout: 5 * time.Second}
		for i := 0; i < max; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			body := fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d}}`, room, i)
			req, _ := http.NewRequest(http.MethodPost, th.URL+"/api/v1/notifications/publish", strings.NewReader(body))
			req.Header.Set("X-Internal-Key", th.Cfg.InternalAPIKey)
			resp, err := client.Do(req)
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			var env struct {
				Result hub.PublishResult
			}
			_ = json.NewDecoder(resp.Body).Decode(&env)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				p.mu.Lock()
				p.accepted = append(p.accepted, env.Result.StreamID)
				p.mu.Unlock()
			} else {
				time.Sleep(10 * time.Millisecond) // Redis is away: the backend would retry later
			}
		}
	}()
	return p
}

func (p *publisher) Stop() []string {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.accepted...)
}

func (p *publisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.accepted)
}

// startBrowser reads room's stream as user, resuming like EventSource, and
// drops its connection after every `every` messages; it waits until the
// first stream is open (subscribed).
func startBrowser(t *testing.T, th *testhub.Hub, room, user int64, every int) *sse.Browser {
	t.Helper()
	b := sse.StartBrowser(fmt.Sprintf("%s/api/v1/rooms/%d/stream", th.URL, room), sse.BrowserOptions{
		Every: every,
		Header: func() http.Header {
			tok, _ := th.Tokens.Sign(user, time.Hour)
			return http.Header{"Authorization": {"Bearer " + tok}}
		},
	})
	t.Cleanup(func() { b.Stop() })
	select {
	case <-b.Connected():
	case <-time.After(testhub.Wait):
		t.Fatal("browser did not connect")
	}
	return b
}

// checkExactlyOnce asserts that got lists accepted in order, each exactly
// once. allowGap: Redis may lose data in this test, and a system.gap may
// stand for the events it lost, but only for those right after it (see
// sse.Check); without allowGap any system.gap fails the test.
func checkExactlyOnce(t *testing.T, name string, got []testhub.Frame, accepted []string, allowGap bool) {
	t.Helper()
	r := sse.Check(got, accepted, sse.Options{})
	if r.Gaps > 0 && !allowGap {
		t.Errorf("%s: %d system.gap with no data loss", name, r.Gaps)
	}
	if !r.OK() {
		t.Fatalf("%s: %s (%+v)", name, strings.Join(r.Problems, "; "), r)
	}
}

// drainUntil reads c until it has seen id, returning everything read.
func drainUntil(t *testing.T, c *testhub.SSEClient, id string) []testhub.Frame {
	t.Helper()
	var got []testhub.Frame
	for {
		f := c.Next(t, 20*time.Second)
		got = append(got, f)
		if f.ID == id {
			return got
		}
	}
}

func TestStream_ResumeWhilePublishingIsGapless(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	b := startBrowser(t, th, 11, 1, 150)
	p := startPublisher(th, 11, 3000)
	testhub.Eventually(t, 60*time.Second, "publisher done", func() bool { return p.count() >= 3000 })
	accepted := p.Stop()
	final := th.OpenStream(t, 11, 9, "0")
	drainUntil(t, final, accepted[len(accepted)-1])
	// The reconnecting browser must have everything, exactly once, in order.
	testhub.Eventually(t, 20*time.Second, "browser caught up", func() bool {
		return b.Has(accepted[len(accepted)-1])
	})
	checkExactlyOnce(t, "browser", b.Stop(), accepted, false)
}

func TestStream_GapWhenHistoryTrimmed(t *testing.T) {
	th := testhub.StartTrimming(t, func(c *testhub.Configs) { c.StreamMaxLen = 10 })
	first := th.Publish(t, 3, "comment.created", map[string]any{"n": 0}).StreamID
	var last string
	for i := 1; i < 100; i++ {
		last = th.Publish(t, 3, "comment.created", map[string]any{"n": i}).StreamID
	}
	c := th.OpenStream(t, 3, 1, first)
	f := c.Next(t, testhub.Wait)
	if f.Event != hub.GapEventType || f.ID != "" {
		t.Fatalf("first frame %+v, want system.gap without id", f)
	}
	var g struct{ Requested, Oldest string }
	if err := json.Unmarshal([]byte(f.Data), &g); err != nil || g.Requested != first || g.Oldest == "" {
		t.Fatalf("gap data %s", f.Data)
	}
	got := drainUntil(t, c, last)
	if got[0].ID != g.Oldest {
		t.Fatalf("after the gap came %s, want the oldest retained %s", got[0].ID, g.Oldest)
	}
}

func TestStream_TwoHubsShareRedis(t *testing.T) {
	rs := testredis.Start(t)
	a := testhub.Start(t, rs.Addr(), nil)
	b := testhub.Start(t, rs.Addr(), nil)
	cb := b.OpenStream(t, 21, 1, "")
	ca := a.OpenStream(t, 21, 2, "")
	res := a.Publish(t, 21, "retrospect.created", map[string]any{"x": 1})
	if f := cb.Next(t, testhub.Wait); f.ID != res.StreamID {
		t.Fatalf("hub B got %+v, want %s", f, res.StreamID)
	}
	if f := ca.Next(t, testhub.Wait); f.ID != res.StreamID {
		t.Fatalf("hub A got %+v", f)
	}
	if res.DeliveredTo != 2 {
		t.Fatalf("deliveredTo = %d, want 2 hub instances", res.DeliveredTo)
	}
}

func TestStream_RawBackendMessage(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	c := th.OpenStream(t, 42, 1, "")
	rdb := testredis.Client(t, rs.Addr())
	testredis.Do(t, rdb, "PUBLISH", "room:42", `not json`)
	testredis.Do(t, rdb, "PUBLISH", "room:42", `{"eventType":"comment.created","roomId":42,"data":{"k":"v"},"timestamp":"2026-02-16T10:31:00Z"}`)
	f := c.Next(t, testhub.Wait)
	if f.Event != "comment.created" || f.ID != "" || !strings.Contains(f.Data, `"k":"v"`) || !strings.Contains(f.Data, "2026-02-16T10:31:00Z") {
		t.Fatalf("raw message delivered as %+v", f)
	}
	if th.Hub.Metrics().InvalidMessages.Get() != 1 {
		t.Fatalf("invalid messages = %d, want 1", th.Hub.Metrics().InvalidMessages.Get())
	}
}

// A stream that replays history while four publishers go on gets every event
// once, in history's order, and is not cut: live events wait in its
// two-event queue, and when it overflows the stream reads history again (the
// overflow itself is proved in hub's TestStream_QueueOverflowCatchesUpFromHistory).
func TestStream_ResumeUnderInterleavedPublishersIsExactlyOnce(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.ChannelCapacity = 2 })
	var pubs []*publisher
	for i := 0; i < 4; i++ {
		pubs = append(pubs, startPublisher(th, 34, 100))
	}
	testhub.Eventually(t, 60*time.Second, "some history", func() bool { return pubs[0].count() >= 30 })
	// The stream replays from the start while the publishers go on: their
	// live events overflow its two-event queue.
	steady := th.OpenStream(t, 34, 1, "0")
	var accepted []string
	for _, p := range pubs {
		testhub.Eventually(t, 60*time.Second, "publisher done", func() bool { return p.count() >= 100 })
		accepted = append(accepted, p.Stop()...)
	}
	// Four publishers interleave: the order is history's, read back from it.
	code, env := th.Get(t, "/api/v1/rooms/34/events?since=0&count=500", th.Token(t, 1))
	var page hub.EventsPage
	testhub.Remarshal(t, env.Result, &page)
	var order []string
	for _, e := range page.Events {
		if e.EventType != hub.PresenceEventType {
			order = append(order, e.ID)
		}
	}
	if code != 200 || len(order) != len(accepted) {
		t.Fatalf("history holds %d events, %d accepted", len(order), len(accepted))
	}
	got := drainUntil(t, steady, order[len(order)-1])
	checkExactlyOnce(t, "steady", got, order, false)
}

// A resume id that history lacks, though older and newer events are there,
// was lost by Redis (a failover that dropped the old master's last writes):
// the stream says so with system.gap before it goes on.
func TestStream_ResumeFromALostIDIsAGap(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	first := th.Publish(t, 36, "comment.created", map[string]any{"n": 0}).StreamID
	lost := th.Publish(t, 36, "comment.created", map[string]any{"n": 1}).StreamID
	after := th.Publish(t, 36, "comment.created", map[string]any{"n": 2}).StreamID
	testredis.Do(t, testredis.Client(t, rs.Addr()), "XDEL", hub.EventsKey(36), lost)
	c := th.OpenStream(t, 36, 1, lost)
	f := c.Next(t, testhub.Wait)
	var g struct{ Requested, Oldest string }
	if f.Event != hub.GapEventType || json.Unmarshal([]byte(f.Data), &g) != nil || g.Requested != lost || g.Oldest != first {
		t.Fatalf("got %+v, want system.gap {requested: %s, oldest: %s}", f, lost, first)
	}
	if f := c.Next(t, testhub.Wait); f.ID != after {
		t.Fatalf("after the gap: %+v, want %s", f, after)
	}
}
