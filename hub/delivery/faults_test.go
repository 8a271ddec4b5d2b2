package delivery_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// Redis stops answering while deliveries fall due: they wait, and once it
// is back each goes out once.
func TestDelivery_RedisAwayDeliveriesWait(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"push":{"afterSecs":1}}}`))
	var ids []string
	for range 5 {
		ids = append(ids, th.NotifyWith(t, 7, "", 1, 2))
	}
	rs.Pause()
	time.Sleep(3 * time.Second) // the deliveries fall due while Redis does not answer
	rs.Resume()
	for _, id := range ids {
		th.WaitDelivery(t, id, 1, "push", "sent")
		th.WaitDelivery(t, id, 2, "push", "sent")
	}
	calls := g.Calls()
	keys := map[string]int{}
	for _, c := range calls {
		keys[c.IdemKey]++
	}
	if len(keys) != 10 || len(calls) != 10 {
		t.Fatalf("the gateway got %d calls under %d keys, want each of 10 once: %v", len(calls), len(keys), keys)
	}
}

// A hub that closes while the gateway holds a hand-off leaves it due at once
// for the others, not waiting out a retry.
func TestDelivery_ClosingHandsTheCutOffCallOn(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	held := make(chan struct{})
	var once sync.Once
	g := testhub.StartGateway(t, func(c testhub.GatewayCall) testhub.GatewayAnswer {
		first := false
		once.Do(func() { first = true })
		if first {
			close(held)
			return testhub.GatewayAnswer{Hang: true}
		}
		return testhub.GatewayAnswer{Status: 200}
	})
	// A lease of a minute: handed on by the lease running out, the call
	// would come far past waitDelivery's bound.
	cfg := testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`, func(c *testhub.Configs) {
		c.Delivery.Timeout, c.LockTTL = 30*time.Second, time.Minute
	})
	a := testhub.StartWith(t, rs.Addr(), cfg, nil)
	nid := a.NotifyWith(t, 7, "", 1)
	<-held
	b := testhub.Start(t, rs.Addr(), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Hub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r := b.WaitDelivery(t, nid, 1, "push", "sent")
	if r.Attempts != 1 {
		t.Fatalf("sent after %d attempts: the cut-off call should be handed on uncounted", r.Attempts)
	}
}

// A claimed hand-off stays its claimer's while the gateway holds it: the
// claimer renews the lease (every third of LOCK_TTL_SECS), so a second live
// instance does not send it again however long the gateway takes. The
// gateway holds the first call for 3 × LOCK_TTL_SECS, or until a second call
// arrives (which fails the test at once).
func TestDelivery_LeaseRenewedWhileTheGatewayHoldsTheCall(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	const ttl = 2 * time.Second
	second := make(chan struct{})
	var calls atomic.Int32
	g := testhub.StartGateway(t, func(testhub.GatewayCall) testhub.GatewayAnswer {
		if calls.Add(1) > 1 {
			close(second)
			return testhub.GatewayAnswer{Status: http.StatusOK}
		}
		return testhub.GatewayAnswer{Status: http.StatusOK, Wait: func() {
			select {
			case <-second:
			case <-time.After(3 * ttl):
			}
		}}
	})
	cfg := testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`, func(c *testhub.Configs) {
		c.LockTTL, c.Delivery.Timeout = ttl, time.Minute
	})
	a := testhub.Start(t, rs.Addr(), cfg)
	testhub.Start(t, rs.Addr(), cfg)
	nid := a.NotifyWith(t, 7, "", 9)
	g.Next(t, testhub.Wait)
	a.WaitDelivery(t, nid, 9, "push", "sent")
	if n := calls.Load(); n != 1 {
		t.Fatalf("the gateway got %d calls for one hand-off held %v: the lease lapsed while it was held", n, 3*ttl)
	}
	if r := a.DeliveriesOf(t, nid)["9/push"]; r.Attempts != 1 {
		t.Fatalf("the record says %d attempts, want 1", r.Attempts)
	}
}

// The hand-offs of one instance hold at most DELIVERY_INFLIGHT_MB of items
// at once, however many users are due and whatever PUBLISH_MAX_BYTES is: 30
// users each due a 60 KB item, a gateway that takes 300 ms a call, a 1 MiB
// budget (64 jobs would hold 1.8 MB): the bodies the gateway holds at once
// never add up past the budget, and every delivery is sent.
func TestDelivery_HandOffsHoldABoundedNumberOfBytes(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	const budget = 1 << 20
	var mu sync.Mutex
	var inflight, peak int
	g := testhub.StartGateway(t, func(c testhub.GatewayCall) testhub.GatewayAnswer {
		n := 0
		for _, it := range c.Body.Notifications {
			n += len(it)
		}
		mu.Lock()
		inflight += n
		peak = max(peak, inflight)
		mu.Unlock()
		return testhub.GatewayAnswer{Status: 200, Wait: func() {
			time.Sleep(300 * time.Millisecond) // a slow gateway, not a wait for a signal
			mu.Lock()
			inflight -= n
			mu.Unlock()
		}}
	})
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"push":{"afterSecs":2}}}`, func(c *testhub.Configs) {
		c.Delivery.InflightBytes = budget
	}))
	pad := strings.Repeat("x", 60000)
	users := make([]string, 30)
	for i := range users {
		users[i] = fmt.Sprint(1000 + i)
	}
	code, env := th.PublishRaw(t, fmt.Sprintf(`{"roomId":7,"eventType":"comment.created","data":{"pad":%q},"recipientIds":[%s]}`, pad, strings.Join(users, ",")))
	if code != 200 {
		t.Fatalf("publish: %d %+v", code, env)
	}
	var r hub.PublishResult
	testhub.Remarshal(t, env.Result, &r)
	for i := range users {
		th.WaitDelivery(t, "7:"+r.StreamID, int64(1000+i), "push", "sent")
	}
	mu.Lock()
	defer mu.Unlock()
	if peak > budget {
		t.Fatalf("the gateway held %d bytes of items at once, over the %d budget", peak, budget)
	}
	t.Logf("at most %d bytes of items in flight (budget %d)", peak, budget)
}
