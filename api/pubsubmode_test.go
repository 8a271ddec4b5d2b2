package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testredis"
)

// PUBSUB_MODE=channels: two hubs subscribe per local topic instead of to
// patterns. Each hears only its own rooms, and streams behave as with
// patterns: resume, raw backend messages, user streams, a killed pub/sub
// connection repaired from history.
func TestPubSubChannels_StreamsAsWithPatterns(t *testing.T) {
	rs := testredis.Start(t)
	channels := func(c *hub.Config) { c.PubSubMode = hub.PubSubChannels }
	a := startHub(t, rs.Addr(), channels)
	b := startHub(t, rs.Addr(), channels)
	rdb := testredis.Client(t, rs.Addr())

	onA := a.openStream(t, 191, 1, "")
	onB := b.openStream(t, 192, 2, "")
	user := b.userStream(t, 3, "")
	user.next(t, wait) // notification.unread
	user.nextCounts(t)
	eventually(t, wait, "each room subscribed on its hub only", func() bool {
		arr, _ := testredis.Do(t, rdb, "PUBSUB", "NUMSUB", "room:{191}", "room:{192}").ToArray()
		if len(arr) != 4 {
			return false
		}
		a, _ := arr[1].AsInt64()
		b, _ := arr[3].AsInt64()
		return a == 1 && b == 1
	})
	res := a.publish(t, 191, "comment.created", map[string]any{"k": "a"})
	if f := onA.next(t, wait); f.ID != res.StreamID {
		t.Fatalf("room 191: %+v", f)
	}
	if res.DeliveredTo != 1 {
		t.Fatalf("deliveredTo %d, want 1: only hub A has room 191", res.DeliveredTo)
	}
	testredis.Do(t, rdb, "PUBLISH", "room:192", `{"eventType":"comment.created","roomId":192,"data":{"k":"raw"}}`)
	if f := onB.next(t, wait); f.ID != "" || !strings.Contains(f.Data, `"k":"raw"`) {
		t.Fatalf("raw message on room:192: %+v", f)
	}
	n := a.notify(t, 193, "comment.created", 3)
	if f := user.next(t, wait); f.Event != inbox.NotificationCreatedType || !strings.Contains(f.Data, n.StreamID) {
		t.Fatalf("user stream: %+v", f)
	}
	// A killed pub/sub connection: the topics resubscribe and replay.
	before := b.Hub.Metrics().PubSubReconnect.Get()
	testredis.Do(t, rdb, "CLIENT", "KILL", "TYPE", "pubsub")
	eventually(t, 20*time.Second, "resubscribed", func() bool { return b.Hub.Metrics().PubSubReconnect.Get() > before })
	// rueidis carries per-topic subscriptions on its command connections
	// (RESP3), so the kill cut those too: a publish may meet it (503) and is
	// retried with its idempotency key, as a backend would.
	var last string
	for i := 0; i < 5; i++ {
		body := fmt.Sprintf(`{"roomId":192,"eventType":"comment.created","data":{"n":%d},"idempotencyKey":"k%d"}`, i, i)
		eventually(t, wait, "a publish accepted", func() bool {
			code, env := a.publishRaw(t, body)
			if code != 200 {
				return false
			}
			var r hub.PublishResult
			remarshal(t, env.Result, &r)
			last = r.StreamID
			return true
		})
	}
	drainUntil(t, onB, last)
}
