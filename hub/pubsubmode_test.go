package hub_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// PUBSUB_MODE=channels: two hubs subscribe per local topic instead of to
// patterns. Each hears only its own rooms, and streams behave as with
// patterns: resume, raw backend messages, user streams, a killed pub/sub
// connection repaired from history (events published while it was away
// replayed once each, in order).
func TestPubSubChannels_StreamsAsWithPatterns(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	channels := func(c *testhub.Configs) { c.PubSubMode = hub.PubSubChannels }
	a := testhub.Start(t, rs.Addr(), channels)
	proxy := testhub.StartFreezeProxy(t, rs.Addr()) // B's Redis, to take away
	b := testhub.Start(t, proxy.Addr(), func(c *testhub.Configs) { channels(c); c.ListenerIdle = 300 * time.Millisecond })
	rdb := testredis.Client(t, rs.Addr())

	onA := a.OpenStream(t, 191, 1, "")
	onB := b.OpenStream(t, 192, 2, "")
	user := b.UserStream(t, 3, "")
	user.Next(t, testhub.Wait) // notification.unread
	user.NextCounts(t)
	testhub.Eventually(t, testhub.Wait, "each room subscribed on its hub only", func() bool {
		arr, _ := testredis.Do(t, rdb, "PUBSUB", "NUMSUB", "room:{191}", "room:{192}").ToArray()
		if len(arr) != 4 {
			return false
		}
		a, _ := arr[1].AsInt64()
		b, _ := arr[3].AsInt64()
		return a == 1 && b == 1
	})
	res := a.Publish(t, 191, "comment.created", map[string]any{"k": "a"})
	if f := onA.Next(t, testhub.Wait); f.ID != res.StreamID {
		t.Fatalf("room 191: %+v", f)
	}
	if res.DeliveredTo != 1 {
		t.Fatalf("deliveredTo %d, want 1: only hub A has room 191", res.DeliveredTo)
	}
	testredis.Do(t, rdb, "PUBLISH", "room:192", `{"eventType":"comment.created","roomId":192,"data":{"k":"raw"}}`)
	if f := onB.Next(t, testhub.Wait); f.ID != "" || !strings.Contains(f.Data, `"k":"raw"`) {
		t.Fatalf("raw message on room:192: %+v", f)
	}
	n := a.Notify(t, 193, "comment.created", 3)
	if f := user.Next(t, testhub.Wait); f.Event != inbox.NotificationCreatedType || !strings.Contains(f.Data, n.StreamID) {
		t.Fatalf("user stream: %+v", f)
	}
	// B's listener goes silent and cannot reconnect while A publishes five
	// events into B's room: they reach B only through the replay from
	// history once it is back, each once and in order. (A stream that sees
	// a room's seq jump catches up by itself, so dropping one replayed event
	// is healed twice over; dropping the replay is what this catches.)
	proxy.Refuse.Store(true)
	if n := proxy.FreezeSubscribers(); n == 0 {
		t.Fatal("no subscribed connection to freeze")
	}
	var want []string
	for i := range 5 {
		want = append(want, a.Publish(t, 192, "comment.created", map[string]any{"n": i}).StreamID)
	}
	before := b.Hub.Metrics().PubSubReconnect.Get()
	proxy.Refuse.Store(false)
	got := drainUntil(t, onB, want[len(want)-1])
	var ids []string
	for _, f := range got {
		ids = append(ids, f.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("room 192 after the outage: %v, want %v once each, in order", ids, want)
	}
	if b.Hub.Metrics().PubSubReconnect.Get() == before {
		t.Fatal("the events arrived without the listener reconnecting: the outage was not one")
	}
}

// With PUBSUB_MODE=channels a stream's headers come once its room's
// subscription is confirmed: an event published as soon as they arrive
// reaches the stream live and counts this hub in deliveredTo, for every
// new room, even when the listener's link to Redis is slow (300 ms).
func TestPubSubChannels_NewTopicsAreCarriedBeforeTheStreamAnswers(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	proxy := testhub.StartFreezeProxy(t, rs.Addr())
	proxy.Lag.Store(int64(300 * time.Millisecond))
	th := testhub.Start(t, proxy.Addr(), func(c *testhub.Configs) {
		c.PubSubMode, c.MaxConnectionsPerUser = hub.PubSubChannels, 0
	})
	for room := int64(300); room < 305; room++ {
		c := th.OpenStream(t, room, 1, "")
		res := th.Publish(t, room, "comment.created", map[string]any{"k": room})
		if res.DeliveredTo != 1 {
			t.Fatalf("room %d: deliveredTo %d right after the stream answered, want 1 (its subscription confirmed first)", room, res.DeliveredTo)
		}
		if f := c.Next(t, testhub.Wait); f.ID != res.StreamID {
			t.Fatalf("room %d: %+v", room, f)
		}
		c.Close()
	}
}

// A listener whose subscription is gone while its connection looks alive
// (left on a node that no longer takes the writes) is found by this hub's
// own publish reaching no listener in a room it carries: it reconnects, and
// the event arrives by the replay. The idle probe is an hour away, so
// nothing else heals it.
func TestPubSubChannels_PublishReachingNoListenerMovesIt(t *testing.T) {
	rs := testredis.Start(t)
	proxy := testhub.StartFreezeProxy(t, rs.Addr())
	th := testhub.Start(t, proxy.Addr(), func(c *testhub.Configs) { c.PubSubMode, c.ListenerIdle = hub.PubSubChannels, time.Hour })
	c := th.OpenStream(t, 195, 1, "")
	if first := th.Publish(t, 195, "comment.created", map[string]any{"n": 0}); c.Next(t, testhub.Wait).ID != first.StreamID {
		t.Fatal("the first event")
	}
	if n := proxy.SeverSubscribers(); n == 0 {
		t.Fatal("no subscribed connection to sever")
	}
	testhub.Eventually(t, testhub.Wait, "Redis forgot the subscriber", func() bool {
		arr, _ := testredis.Do(t, testredis.Client(t, rs.Addr()), "PUBSUB", "NUMSUB", "room:{195}").ToArray()
		n, _ := arr[1].AsInt64()
		return n == 0
	})
	res := th.Publish(t, 195, "comment.created", map[string]any{"n": 1})
	if res.DeliveredTo != 0 {
		t.Fatalf("deliveredTo %d with the subscription gone: the test proves nothing", res.DeliveredTo)
	}
	if f := c.Next(t, testhub.Wait); f.ID != res.StreamID {
		t.Fatalf("after the publish that reached no listener: %+v", f)
	}
	if th.Hub.Metrics().ListenerMoves.Get() == 0 {
		t.Fatal("pubsub_listener_moves_total = 0: something else healed the listener")
	}
}

// With PUBSUB_MODE=channels, the listener's one connection subscribes and
// unsubscribes the channels as topics come and go, in batches: 700 rooms
// cost no goroutine each, and all are unsubscribed when their streams end.
func TestPubSubChannels_FollowTopicsOnOneConnection(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.StartWith(t, rs.Addr(), func(c *testhub.Configs) {
		c.PubSubMode = hub.PubSubChannels
		c.MaxConnectionsPerUser = 0
	}, func(c *api.Config) { c.StreamMaxRooms = 100 })
	rdb := testredis.Client(t, rs.Addr())
	channels := func(pattern string) int {
		arr, _ := testredis.Do(t, rdb, "PUBSUB", "CHANNELS", pattern).ToArray()
		return len(arr)
	}
	g0 := runtime.NumGoroutine()
	var streams []*testhub.SSEClient
	for i := range 7 { // 700 rooms: more than one SUBSCRIBE's batch
		rooms := make([]string, 100)
		for j := range rooms {
			rooms[j] = fmt.Sprint(1001 + i*100 + j)
		}
		streams = append(streams, th.PageStream(t, int64(i+1), "rooms="+strings.Join(rooms, ",")+"&notifications=true", ""))
	}
	testhub.Eventually(t, testhub.Wait, "700 rooms and 7 users subscribed", func() bool {
		return channels("room:{*}") == 700 && channels("room:1*") == 700 && channels("user:{*}") == 7
	})
	if n := testredis.Do(t, rdb, "PUBSUB", "NUMPAT"); n.Error() != nil {
		t.Fatal(n.Error())
	} else if v, _ := n.AsInt64(); v != 0 {
		t.Fatalf("%d pattern subscriptions in channels mode", v)
	}
	// Far fewer than one goroutine per topic: the 7 streams' own and their
	// clients' (a reader and the transport's two each).
	if d := runtime.NumGoroutine() - g0; d > 100 {
		t.Fatalf("%d more goroutines for 7 streams over 707 topics", d)
	}
	res := th.Publish(t, 1700, "comment.created", map[string]any{"k": "last"})
	f := streams[6].NextMatching(t, testhub.Wait, func(f testhub.Frame) bool { return f.Event == "comment.created" })
	if !strings.Contains(f.ID, res.StreamID) || !strings.Contains(f.Data, `"k":"last"`) {
		t.Fatalf("room 1700 on its page stream: %+v", f)
	}
	for _, s := range streams {
		s.Close()
	}
	testhub.Eventually(t, testhub.Wait, "every channel unsubscribed", func() bool {
		return channels("room:*") == 0 && channels("user:*") == 0
	})
}
