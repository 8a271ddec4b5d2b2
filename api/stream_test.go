package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/sse"
	"roomhub/internal/testredis"
)

const wait = 10 * time.Second

func TestStream_WireFormatAndFanOut(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) { c.KeepAlive = time.Second })
	a := th.openStream(t, 42, 1, "")
	b := th.openStream(t, 42, 2, "")
	other := th.openStream(t, 43, 3, "")

	for k, want := range map[string]string{
		"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
	} {
		if got := a.Resp.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if f, _ := a.nextAny(t, wait); f.Retry != "3000" {
		t.Fatalf("first frame = %+v, want retry: 3000", f)
	}

	res := th.publish(t, 42, "comment.created", map[string]any{"userId": 2, "text": "hi"})
	for _, c := range []*sseClient{a, b} {
		f := c.next(t, wait)
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
		f, ok := other.nextAny(t, 3*time.Second)
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
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) { c.ChannelCapacity = 2048 })
	c := th.openStream(t, 7, 1, "")
	var ids []string
	for i := 0; i < 1000; i++ {
		ids = append(ids, th.publish(t, 7, "like.toggled", map[string]any{"n": i}).StreamID)
	}
	var prev hub.StreamID
	for i, want := range ids {
		f := c.next(t, wait)
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
	th := startHub(t, testredis.Start(t).Addr(), nil)
	for room, how := range map[int64]string{5: "header", 6: "query"} {
		t.Run(how, func(t *testing.T) {
			var ids []string
			for i := 0; i < 10; i++ {
				ids = append(ids, th.publish(t, room, "comment.created", map[string]any{"n": i}).StreamID)
			}
			// The resuming stream's own presence.update may come first or between; next skips them.
			var c *sseClient
			if how == "header" {
				c = th.openStream(t, room, 1, ids[3])
			} else {
				c = openSSE(t, fmt.Sprintf("%s/api/v1/rooms/%d/stream?lastEventId=%s", th.URL, room, ids[3]), th.token(t, 1), "")
			}
			for _, want := range ids[4:] {
				if f := c.next(t, wait); f.ID != want {
					t.Fatalf("replayed %q, want %q", f.ID, want)
				}
			}
			live := th.publish(t, room, "comment.created", map[string]any{"live": true})
			if f := c.next(t, wait); f.ID != live.StreamID {
				t.Fatalf("after replay got %+v, want live %s", f, live.StreamID)
			}
		})
	}
	t.Run("bad id", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, th.URL+"/api/v1/rooms/5/stream", nil)
		req.Header.Set("Authorization", "Bearer "+th.token(t, 1))
		req.Header.Set("Last-Event-ID", "yesterday")
		resp, err := httpClient.Do(req)
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

func startPublisher(th *testHub, room int64, max int) *publisher {
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
func startBrowser(t *testing.T, th *testHub, room, user int64, every int) *sse.Browser {
	t.Helper()
	b := sse.StartBrowser(fmt.Sprintf("%s/api/v1/rooms/%d/stream", th.URL, room), sse.BrowserOptions{
		Every: every,
		Header: func() http.Header {
			tok, _ := th.tokens.Sign(user, time.Hour)
			return http.Header{"Authorization": {"Bearer " + tok}}
		},
	})
	t.Cleanup(func() { b.Stop() })
	select {
	case <-b.Connected():
	case <-time.After(wait):
		t.Fatal("browser did not connect")
	}
	return b
}

// checkExactlyOnce asserts that got lists accepted in order, each exactly
// once. allowGap: Redis may lose data in this test, and a system.gap may
// stand for the events it lost, but only for those right after it (see
// sse.Check); without allowGap any system.gap fails the test.
func checkExactlyOnce(t *testing.T, name string, got []frame, accepted []string, allowGap bool) {
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
func drainUntil(t *testing.T, c *sseClient, id string) []frame {
	t.Helper()
	var got []frame
	for {
		f := c.next(t, 20*time.Second)
		got = append(got, f)
		if f.ID == id {
			return got
		}
	}
}

func TestStream_ResumeWhilePublishingIsGapless(t *testing.T) {
	t.Parallel()
	th := startHub(t, testredis.Start(t).Addr(), nil)
	b := startBrowser(t, th, 11, 1, 150)
	p := startPublisher(th, 11, 3000)
	eventually(t, 60*time.Second, "publisher done", func() bool { return p.count() >= 3000 })
	accepted := p.Stop()
	final := th.openStream(t, 11, 9, "0")
	drainUntil(t, final, accepted[len(accepted)-1])
	// The reconnecting browser must have everything, exactly once, in order.
	eventually(t, 20*time.Second, "browser caught up", func() bool {
		return b.Has(accepted[len(accepted)-1])
	})
	checkExactlyOnce(t, "browser", b.Stop(), accepted, false)
}

func TestStream_GapWhenHistoryTrimmed(t *testing.T) {
	th := startTrimmingHub(t, func(c *hub.Config) { c.StreamMaxLen = 10 })
	first := th.publish(t, 3, "comment.created", map[string]any{"n": 0}).StreamID
	var last string
	for i := 1; i < 100; i++ {
		last = th.publish(t, 3, "comment.created", map[string]any{"n": i}).StreamID
	}
	c := th.openStream(t, 3, 1, first)
	f := c.next(t, wait)
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

func TestPublish_Idempotency(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	c := th.openStream(t, 8, 1, "")
	body := `{"roomId":8,"eventType":"member.joined","data":{"u":1},"idempotencyKey":"join-1"}`
	var wg sync.WaitGroup
	results := make([]hub.PublishResult, 50)
	codes := make([]int, 50)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, th.URL+"/api/v1/notifications/publish", strings.NewReader(body))
			req.Header.Set("X-Internal-Key", th.Cfg.InternalAPIKey)
			resp, err := httpClient.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var env struct{ Result hub.PublishResult }
			_ = json.NewDecoder(resp.Body).Decode(&env)
			codes[i], results[i] = resp.StatusCode, env.Result
		}(i)
	}
	wg.Wait()
	fresh := 0
	for i, r := range results {
		if codes[i] != 200 || r.StreamID != results[0].StreamID {
			t.Fatalf("publish %d: %d %+v, want 200 with id %s", i, codes[i], r, results[0].StreamID)
		}
		if !r.Duplicate {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d publishes were not duplicates, want exactly 1", fresh)
	}
	code, env := th.get(t, "/api/v1/rooms/8/events?since=0", th.token(t, 1))
	var page hub.EventsPage
	remarshal(t, env.Result, &page)
	joins := 0
	for _, e := range page.Events {
		if e.EventType == "member.joined" {
			joins++
		}
	}
	if code != 200 || joins != 1 {
		t.Fatalf("history holds %d member.joined events, want 1", joins)
	}
	if f := c.next(t, wait); f.ID != results[0].StreamID {
		t.Fatalf("delivered %+v", f)
	}
	marker := th.publish(t, 8, "member.joined", map[string]any{"marker": true})
	if f := c.next(t, wait); f.ID != marker.StreamID {
		t.Fatalf("a duplicate was delivered: got %+v before the marker", f)
	}
	code, env = th.publishRaw(t, `{"roomId":8,"eventType":"member.joined","data":{"u":2},"idempotencyKey":"join-1"}`)
	if code != 409 || env.Code != "NOTIF4091" {
		t.Fatalf("reuse with another body: %d %+v", code, env)
	}
	// Keys are per room: the same key in another room is a new event.
	code, env = th.publishRaw(t, `{"roomId":9,"eventType":"member.joined","data":{"u":1},"idempotencyKey":"join-1"}`)
	var other hub.PublishResult
	remarshal(t, env.Result, &other)
	if code != 200 || other.Duplicate {
		t.Fatalf("same key, other room: %d %+v", code, env)
	}
}

func TestStream_TwoHubsShareRedis(t *testing.T) {
	rs := testredis.Start(t)
	a := startHub(t, rs.Addr(), nil)
	b := startHub(t, rs.Addr(), nil)
	cb := b.openStream(t, 21, 1, "")
	ca := a.openStream(t, 21, 2, "")
	res := a.publish(t, 21, "retrospect.created", map[string]any{"x": 1})
	if f := cb.next(t, wait); f.ID != res.StreamID {
		t.Fatalf("hub B got %+v, want %s", f, res.StreamID)
	}
	if f := ca.next(t, wait); f.ID != res.StreamID {
		t.Fatalf("hub A got %+v", f)
	}
	if res.DeliveredTo != 2 {
		t.Fatalf("deliveredTo = %d, want 2 hub instances", res.DeliveredTo)
	}
}

func TestStream_RawBackendMessage(t *testing.T) {
	rs := testredis.Start(t)
	th := startHub(t, rs.Addr(), nil)
	c := th.openStream(t, 42, 1, "")
	rdb := testredis.Client(t, rs.Addr())
	testredis.Do(t, rdb, "PUBLISH", "room:42", `not json`)
	testredis.Do(t, rdb, "PUBLISH", "room:42", `{"eventType":"comment.created","roomId":42,"data":{"k":"v"},"timestamp":"2026-02-16T10:31:00Z"}`)
	f := c.next(t, wait)
	if f.Event != "comment.created" || f.ID != "" || !strings.Contains(f.Data, `"k":"v"`) || !strings.Contains(f.Data, "2026-02-16T10:31:00Z") {
		t.Fatalf("raw message delivered as %+v", f)
	}
	if th.Hub.Metrics().InvalidMessages.Get() != 1 {
		t.Fatalf("invalid messages = %d, want 1", th.Hub.Metrics().InvalidMessages.Get())
	}
}

func TestStream_ListenerSurvivesConnectionKills(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	th := startHub(t, rs.Addr(), nil)
	rdb := testredis.Client(t, rs.Addr())
	steady := th.openStream(t, 31, 1, "")
	b := startBrowser(t, th, 31, 2, 100)
	p := startPublisher(th, 31, 100000)
	for i := 0; i < 5; i++ {
		eventually(t, 20*time.Second, "events flowing", func() bool { return p.count() >= (i+1)*200 })
		before := th.Hub.Metrics().PubSubReconnect.Get()
		// /health may answer from its last look: the kill waits for Redis
		// to see the listener subscribed again.
		eventually(t, 20*time.Second, "a subscribed connection to kill", func() bool {
			n, err := testredis.Do(t, rdb, "CLIENT", "KILL", "TYPE", "pubsub").AsInt64()
			return err == nil && n >= 1
		})
		eventually(t, 20*time.Second, "the listener noticed", func() bool {
			return th.Hub.Metrics().PubSubReconnect.Get() > before
		})
		th.waitHealthy(t) // subscribed again
	}
	eventually(t, 20*time.Second, "events flowing", func() bool { return p.count() >= 1200 })
	accepted := p.Stop()
	got := drainUntil(t, steady, accepted[len(accepted)-1])
	checkExactlyOnce(t, "steady", got, accepted, false)
	eventually(t, 20*time.Second, "browser caught up", func() bool {
		return b.Has(accepted[len(accepted)-1])
	})
	checkExactlyOnce(t, "browser", b.Stop(), accepted, false)
	if th.Hub.Metrics().PubSubReconnect.Get() < 5 {
		t.Fatalf("pubsub_reconnect_total = %d, want >= 5", th.Hub.Metrics().PubSubReconnect.Get())
	}
}

func TestStream_RedisRestartIsAnnouncedNeverSilent(t *testing.T) {
	rs := testredis.Start(t)
	th := startHub(t, rs.Addr(), nil)
	steady := th.openStream(t, 32, 1, "")
	p := startPublisher(th, 32, 100000)
	eventually(t, 20*time.Second, "events flowing", func() bool { return p.count() >= 200 })
	rs.Restart()
	th.waitHealthy(t)
	n := p.count()
	eventually(t, 20*time.Second, "events flowing again", func() bool { return p.count() >= n+200 })
	accepted := p.Stop()
	got := drainUntil(t, steady, accepted[len(accepted)-1])
	checkExactlyOnce(t, "steady", got, accepted, true)
}

func TestStream_ResumeWhileRedisIsDownStillCatchesUp(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	th := startHub(t, rs.Addr(), nil)
	var ids []string
	for i := 0; i < 10; i++ {
		ids = append(ids, th.publish(t, 33, "comment.created", map[string]any{"n": i}).StreamID)
	}
	rs.Pause()
	resumed := false
	defer func() {
		if !resumed {
			rs.Resume()
		}
	}()
	c := th.openStream(t, 33, 1, ids[2])
	time.Sleep(time.Second) // an outage, not synchronisation: the catch-up must retry through it
	rs.Resume()
	resumed = true
	for _, want := range ids[3:] {
		if f := c.next(t, 20*time.Second); f.ID != want {
			t.Fatalf("got %+v, want %s", f, want)
		}
	}
}

func TestStream_SlowConsumerIsCutWithLagged(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) {
		c.ChannelCapacity = 64
		c.WriteTimeout = 60 * time.Second
		c.SlowWrite = 200 * time.Millisecond
	})
	fast := th.openStream(t, 50, 1, "")
	addr := strings.TrimPrefix(th.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/rooms/50/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", th.token(t, 2))
	eventually(t, wait, "both subscribed", func() bool {
		_, env := th.get(t, "/health", "")
		res := env.Result.(map[string]any)
		return res["activeConnections"] == 2.0
	})
	big := strings.Repeat("x", 60000) // 400 of these (24 MB) outgrow any socket buffers
	var last string
	for i := 0; i < 400; i++ {
		last = th.publish(t, 50, "comment.created", map[string]any{"n": i, "pad": big}).StreamID
	}
	drainUntil(t, fast, last) // the fast client is unaffected
	if th.Hub.Metrics().Lagged.Get() == 0 {
		t.Fatal("events_lagged_total = 0: the slow client's buffer never filled")
	}
	// Not synchronisation: a client is slow when its socket refuses bytes for
	// SlowWrite while its events are dropped, so that time must pass.
	time.Sleep(th.Cfg.SlowWrite)
	// Now the slow client reads: what was in flight, then system.lagged, then the end.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sawLagged, events := false, 0
	for sc.Scan() {
		switch sc.Text() {
		case "event: system.lagged":
			sawLagged = true
		case "event: comment.created":
			events++
		}
	}
	if err := sc.Err(); err != nil {
		_, env := th.get(t, "/health", "")
		t.Fatalf("slow stream did not end cleanly: %v (lagged=%v events=%d health=%v)", err, sawLagged, events, env.Result)
	}
	if !sawLagged {
		t.Fatalf("slow client never saw system.lagged (read %d events)", events)
	}
	if events >= 400 {
		t.Fatalf("slow client got all %d events: it was never cut", events)
	}
}

// hubGoroutines counts goroutines running hub or stream-handler code, and
// returns their stacks.
func hubGoroutines() (int, string) {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var stacks []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "roomhub/hub.") || strings.Contains(g, "roomhub/api.(*Server)") {
			n++
			stacks = append(stacks, g)
		}
	}
	return n, strings.Join(stacks, "\n\n")
}

func TestStream_DisconnectFreesEverything(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	base, _ := hubGoroutines() // the listener and the sweeper
	var clients []*sseClient
	for i := 0; i < 20; i++ {
		clients = append(clients, th.openStream(t, int64(100+i%4), int64(i+1), ""))
	}
	th.publish(t, 100, "comment.created", map[string]any{})
	clients[0].next(t, wait)
	// An open stream holds no goroutine of its own: the hub writes to its
	// socket from the fan-out, and one poller watches every socket.
	eventually(t, wait, "no goroutine per open stream", func() bool {
		n, _ := hubGoroutines()
		return n == base
	})
	for _, c := range clients {
		c.Close()
	}
	eventually(t, wait, "no streams, no rooms", func() bool {
		_, env := th.get(t, "/health", "")
		res := env.Result.(map[string]any)
		return res["activeConnections"] == 0.0 && res["activeRooms"] == 0.0
	})
	deadline := time.Now().Add(wait)
	for {
		n, stacks := hubGoroutines()
		if n == base {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d hub goroutines left, want %d:\n%s", n, base, stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEvents_API(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	tok := th.token(t, 1)
	var ids []string
	for i := 0; i < 7; i++ {
		ids = append(ids, th.publish(t, 60, "comment.created", map[string]any{"n": i}).StreamID)
	}
	page := func(q string) (int, Envelope, hub.EventsPage) {
		code, env := th.get(t, "/api/v1/rooms/60/events?"+q, tok)
		var p hub.EventsPage
		if code == 200 {
			remarshal(t, env.Result, &p)
		}
		return code, env, p
	}
	_, _, p := page("since=0&count=3")
	if len(p.Events) != 3 || !p.HasMore || *p.LastID != ids[2] || p.Events[0].ID != ids[0] {
		t.Fatalf("first page %+v", p)
	}
	e := p.Events[0]
	if e.EventType != "comment.created" || string(e.Data) != `{"n":0}` || e.PublisherID == nil || *e.PublisherID != "1" || e.Timestamp == "" {
		t.Fatalf("event shape %+v", e)
	}
	_, _, p = page("since=" + *p.LastID + "&count=3")
	if len(p.Events) != 3 || !p.HasMore || p.Events[0].ID != ids[3] {
		t.Fatalf("second page %+v", p)
	}
	_, _, p = page("since=" + *p.LastID + "&count=3")
	if len(p.Events) != 1 || p.HasMore || *p.LastID != ids[6] {
		t.Fatalf("last page %+v", p)
	}
	code, env, _ := page("since=" + ids[6])
	if code != 200 || !strings.Contains(fmt.Sprint(env.Result), "events:[]") || !strings.Contains(fmt.Sprint(env.Result), "lastId:<nil>") {
		t.Fatalf("empty page: %+v", env.Result)
	}
	ms := strings.Split(ids[0], "-")[0]
	if _, _, p = page("since=" + ms + "&count=500"); len(p.Events) < 6 {
		t.Fatalf("bare ms since: %d events", len(p.Events))
	}
	if _, _, p = page("since=0&count=100000"); len(p.Events) != 7 {
		t.Fatalf("clamped count: %d events", len(p.Events))
	}
	for _, q := range []string{"", "since=", "since=abc", "since=-1", "since=0&count=0", "since=0&count=-2", "since=0&count=x"} {
		if code, env, _ := page(q); code != 400 || env.Code != "COMMON400" {
			t.Errorf("%q: %d %s, want 400 COMMON400", q, code, env.Code)
		}
	}
}

// The events API at its limits: a page full at the default count and at the
// clamp (500), on a 20-entry chunk boundary, says hasMore; the last one not.
func TestEvents_PagesAtTheirLimits(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	var ids []string
	for i := 0; i < 510; i++ {
		res, err := th.Hub.Publish(t.Context(), hub.PublishRequest{Room: 61, EventType: "comment.created", Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.StreamID)
	}
	tok := th.token(t, 1)
	page := func(q string) hub.EventsPage {
		t.Helper()
		code, env := th.get(t, "/api/v1/rooms/61/events?"+q, tok)
		var p hub.EventsPage
		remarshal(t, env.Result, &p)
		if code != 200 {
			t.Fatalf("%s: %d %+v", q, code, env)
		}
		return p
	}
	if p := page("since=0"); len(p.Events) != 100 || !p.HasMore || *p.LastID != ids[99] {
		t.Fatalf("default count: %d events, hasMore %v", len(p.Events), p.HasMore)
	}
	p := page("since=0&count=100000")
	if len(p.Events) != 500 || !p.HasMore || *p.LastID != ids[499] {
		t.Fatalf("count clamped to 500: %d events, hasMore %v", len(p.Events), p.HasMore)
	}
	if p = page("since=" + *p.LastID + "&count=500"); len(p.Events) != 10 || p.HasMore || *p.LastID != ids[509] {
		t.Fatalf("the last page: %d events, hasMore %v", len(p.Events), p.HasMore)
	}
	if p = page("since=" + ids[489] + "&count=20"); len(p.Events) != 20 || p.HasMore {
		t.Fatalf("a page that ends with history: %d events, hasMore %v", len(p.Events), p.HasMore)
	}
}

// A stream that replays history while four publishers go on gets every event
// once, in history's order, and is not cut: live events wait in its
// two-event queue, and when it overflows the stream reads history again (the
// overflow itself is proved in hub's TestStream_QueueOverflowCatchesUpFromHistory).
func TestStream_ResumeUnderInterleavedPublishersIsExactlyOnce(t *testing.T) {
	rs := testredis.Start(t)
	th := startHub(t, rs.Addr(), func(c *hub.Config) { c.ChannelCapacity = 2 })
	var pubs []*publisher
	for i := 0; i < 4; i++ {
		pubs = append(pubs, startPublisher(th, 34, 100))
	}
	eventually(t, 60*time.Second, "some history", func() bool { return pubs[0].count() >= 30 })
	// The stream replays from the start while the publishers go on: their
	// live events overflow its two-event queue.
	steady := th.openStream(t, 34, 1, "0")
	var accepted []string
	for _, p := range pubs {
		eventually(t, 60*time.Second, "publisher done", func() bool { return p.count() >= 100 })
		accepted = append(accepted, p.Stop()...)
	}
	// Four publishers interleave: the order is history's, read back from it.
	code, env := th.get(t, "/api/v1/rooms/34/events?since=0&count=500", th.token(t, 1))
	var page hub.EventsPage
	remarshal(t, env.Result, &page)
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
	th := startHub(t, rs.Addr(), nil)
	first := th.publish(t, 36, "comment.created", map[string]any{"n": 0}).StreamID
	lost := th.publish(t, 36, "comment.created", map[string]any{"n": 1}).StreamID
	after := th.publish(t, 36, "comment.created", map[string]any{"n": 2}).StreamID
	testredis.Do(t, testredis.Client(t, rs.Addr()), "XDEL", hub.EventsKey(36), lost)
	c := th.openStream(t, 36, 1, lost)
	f := c.next(t, wait)
	var g struct{ Requested, Oldest string }
	if f.Event != hub.GapEventType || json.Unmarshal([]byte(f.Data), &g) != nil || g.Requested != lost || g.Oldest != first {
		t.Fatalf("got %+v, want system.gap {requested: %s, oldest: %s}", f, lost, first)
	}
	if f := c.next(t, wait); f.ID != after {
		t.Fatalf("after the gap: %+v, want %s", f, after)
	}
}

// goroutinesIn counts the goroutines with fn in their stacks.
func goroutinesIn(fn string) int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), fn+"(")
}

// streamWaitingOnItsJoin starts a hub, stops its Redis and sends a room
// stream's request for user, returning once the stream's join waits on Redis
// (for joinWait, 2 s: long enough to look). resume lets Redis answer again;
// the test's cleanup calls it too.
func streamWaitingOnItsJoin(t *testing.T, room, user int64) (*testHub, net.Conn, func()) {
	t.Helper()
	rs := testredis.Start(t)
	th := startHub(t, rs.Addr(), nil)
	th.publish(t, room, "comment.created", map[string]any{"n": 0}) // the room's history exists
	rs.Pause()
	var once sync.Once
	resume := func() { once.Do(rs.Resume) }
	t.Cleanup(resume)
	conn, err := net.Dial("tcp", strings.TrimPrefix(th.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	fmt.Fprintf(conn, "GET /api/v1/rooms/%d/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", room, th.token(t, user))
	eventually(t, wait, "the join waiting on the hub's goroutine", func() bool {
		return goroutinesIn("roomhub/api.(*Server).startHijacked") == 1
	})
	return th, conn, resume
}

// A stream's join runs after its request's handler has returned: while Redis
// does not answer, the hub's goroutine waits for it and net/http holds
// nothing of the request (no handler on the stack). Once Redis answers, the
// answer's head and hello arrive and the stream delivers.
func TestStream_JoinWaitsOnTheHubsGoroutineNotTheHandler(t *testing.T) {
	th, conn, resume := streamWaitingOnItsJoin(t, 60, 1)
	if n := goroutinesIn("roomhub/api.(*Server).serveStream"); n != 0 {
		t.Fatalf("%d request handlers still run while the join waits", n)
	}
	resume()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("answer %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	want := th.publish(t, 60, "comment.created", map[string]any{"n": 1}).StreamID
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "id: "+want {
			return
		}
	}
	t.Fatalf("the event %s never arrived: %v", want, sc.Err())
}

// A client that leaves while its stream's join waits on Redis ends the
// stream at once (its release starts while Redis is still away), and once
// Redis answers nothing is left behind: no presence, no place in the
// connection cap.
func TestStream_ClientGoneDuringTheJoinLeavesNothing(t *testing.T) {
	th, conn, resume := streamWaitingOnItsJoin(t, 61, 7)
	_ = conn.Close()
	eventually(t, wait, "the stream's release begun while Redis is away", func() bool {
		return goroutinesIn("roomhub/hub.(*Stream).release") == 1
	})
	resume()
	eventually(t, wait, "the stream released", func() bool {
		_, env := th.get(t, "/health", "")
		res, _ := env.Result.(map[string]any)
		return goroutinesIn("roomhub/api.(*Server).startHijacked") == 0 && res["activeConnections"] == 0.0
	})
	eventually(t, wait, "nothing left in Redis", func() bool {
		for _, key := range []string{hub.PresenceConnsKey(61, 7), hub.UserOnlineKey(7), hub.UserConnsKey(7)} {
			if n, _ := testredis.Do(t, th.rdb, "ZCARD", key).AsInt64(); n != 0 {
				return false
			}
		}
		in, _ := testredis.Do(t, th.rdb, "HEXISTS", hub.PresenceKey(61), "7").AsInt64()
		return in == 0
	})
}
