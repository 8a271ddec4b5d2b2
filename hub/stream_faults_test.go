package hub_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestStream_ListenerSurvivesConnectionKills(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	rdb := testredis.Client(t, rs.Addr())
	steady := th.OpenStream(t, 31, 1, "")
	b := startBrowser(t, th, 31, 2, 100)
	p := startPublisher(th, 31, 100000)
	for i := 0; i < 5; i++ {
		testhub.Eventually(t, 20*time.Second, "events flowing", func() bool { return p.count() >= (i+1)*200 })
		before := th.Hub.Metrics().PubSubReconnect.Get()
		// /health may answer from its last look: the kill waits for Redis
		// to see the listener subscribed again.
		testhub.Eventually(t, 20*time.Second, "a subscribed connection to kill", func() bool {
			n, err := testredis.Do(t, rdb, "CLIENT", "KILL", "TYPE", "pubsub").AsInt64()
			return err == nil && n >= 1
		})
		testhub.Eventually(t, 20*time.Second, "the listener noticed", func() bool {
			return th.Hub.Metrics().PubSubReconnect.Get() > before
		})
		th.WaitHealthy(t) // subscribed again
	}
	testhub.Eventually(t, 20*time.Second, "events flowing", func() bool { return p.count() >= 1200 })
	accepted := p.Stop()
	got := drainUntil(t, steady, accepted[len(accepted)-1])
	checkExactlyOnce(t, "steady", got, accepted, false)
	testhub.Eventually(t, 20*time.Second, "browser caught up", func() bool {
		return b.Has(accepted[len(accepted)-1])
	})
	checkExactlyOnce(t, "browser", b.Stop(), accepted, false)
	if th.Hub.Metrics().PubSubReconnect.Get() < 5 {
		t.Fatalf("pubsub_reconnect_total = %d, want >= 5", th.Hub.Metrics().PubSubReconnect.Get())
	}
}

func TestStream_RedisRestartIsAnnouncedNeverSilent(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	steady := th.OpenStream(t, 32, 1, "")
	p := startPublisher(th, 32, 100000)
	testhub.Eventually(t, 20*time.Second, "events flowing", func() bool { return p.count() >= 200 })
	rs.Restart()
	th.WaitHealthy(t)
	n := p.count()
	testhub.Eventually(t, 20*time.Second, "events flowing again", func() bool { return p.count() >= n+200 })
	accepted := p.Stop()
	got := drainUntil(t, steady, accepted[len(accepted)-1])
	checkExactlyOnce(t, "steady", got, accepted, true)
}

func TestStream_ResumeWhileRedisIsDownStillCatchesUp(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	var ids []string
	for i := 0; i < 10; i++ {
		ids = append(ids, th.Publish(t, 33, "comment.created", map[string]any{"n": i}).StreamID)
	}
	rs.Pause()
	resumed := false
	defer func() {
		if !resumed {
			rs.Resume()
		}
	}()
	c := th.OpenStream(t, 33, 1, ids[2])
	time.Sleep(time.Second) // an outage, not synchronisation: the catch-up must retry through it
	rs.Resume()
	resumed = true
	for _, want := range ids[3:] {
		if f := c.Next(t, 20*time.Second); f.ID != want {
			t.Fatalf("got %+v, want %s", f, want)
		}
	}
}

func TestStream_SlowConsumerIsCutWithLagged(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) {
		c.ChannelCapacity = 64
		c.WriteTimeout = 60 * time.Second
		c.SlowWrite = 200 * time.Millisecond
	})
	fast := th.OpenStream(t, 50, 1, "")
	addr := strings.TrimPrefix(th.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/rooms/50/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", th.Token(t, 2))
	testhub.Eventually(t, testhub.Wait, "both subscribed", func() bool {
		_, env := th.Get(t, "/health", "")
		res := env.Result.(map[string]any)
		return res["activeConnections"] == 2.0
	})
	big := strings.Repeat("x", 60000) // 400 of these (24 MB) outgrow any socket buffers
	var last string
	for i := 0; i < 400; i++ {
		last = th.Publish(t, 50, "comment.created", map[string]any{"n": i, "pad": big}).StreamID
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
		_, env := th.Get(t, "/health", "")
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
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	base, _ := hubGoroutines() // the listener and the sweeper
	var clients []*testhub.SSEClient
	for i := 0; i < 20; i++ {
		clients = append(clients, th.OpenStream(t, int64(100+i%4), int64(i+1), ""))
	}
	th.Publish(t, 100, "comment.created", map[string]any{})
	clients[0].Next(t, testhub.Wait)
	// An open stream holds no goroutine of its own: the hub writes to its
	// socket from the fan-out, and one poller watches every socket.
	testhub.Eventually(t, testhub.Wait, "no goroutine per open stream", func() bool {
		n, _ := hubGoroutines()
		return n == base
	})
	for _, c := range clients {
		c.Close()
	}
	testhub.Eventually(t, testhub.Wait, "no streams, no rooms", func() bool {
		_, env := th.Get(t, "/health", "")
		res := env.Result.(map[string]any)
		return res["activeConnections"] == 0.0 && res["activeRooms"] == 0.0
	})
	deadline := time.Now().Add(testhub.Wait)
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
func streamWaitingOnItsJoin(t *testing.T, room, user int64) (*testhub.Hub, net.Conn, func()) {
	t.Helper()
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	th.Publish(t, room, "comment.created", map[string]any{"n": 0}) // the room's history exists
	rs.Pause()
	var once sync.Once
	resume := func() { once.Do(rs.Resume) }
	t.Cleanup(resume)
	conn, err := net.Dial("tcp", strings.TrimPrefix(th.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	fmt.Fprintf(conn, "GET /api/v1/rooms/%d/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", room, th.Token(t, user))
	testhub.Eventually(t, testhub.Wait, "the join waiting on the hub's goroutine", func() bool {
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
	_ = conn.SetReadDeadline(time.Now().Add(testhub.Wait))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("answer %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	want := th.Publish(t, 60, "comment.created", map[string]any{"n": 1}).StreamID
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
	testhub.Eventually(t, testhub.Wait, "the stream's release begun while Redis is away", func() bool {
		return goroutinesIn("roomhub/hub.(*Stream).release") == 1
	})
	resume()
	testhub.Eventually(t, testhub.Wait, "the stream released", func() bool {
		_, env := th.Get(t, "/health", "")
		res, _ := env.Result.(map[string]any)
		return goroutinesIn("roomhub/api.(*Server).startHijacked") == 0 && res["activeConnections"] == 0.0
	})
	testhub.Eventually(t, testhub.Wait, "nothing left in Redis", func() bool {
		for _, key := range []string{hub.PresenceConnsKey(61, 7), hub.UserOnlineKey(7), hub.UserConnsKey(7)} {
			if n, _ := testredis.Do(t, th.Redis, "ZCARD", key).AsInt64(); n != 0 {
				return false
			}
		}
		in, _ := testredis.Do(t, th.Redis, "HEXISTS", hub.PresenceKey(61), "7").AsInt64()
		return in == 0
	})
}
