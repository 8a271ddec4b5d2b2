package delivery_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestDelivery_HandsOffByRulesAndRecordsEach(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g,
		// The e-mail waits 4 s, so user 2's read lands before it is due
		// however slow the machine (1 s was not always enough).
		`{"comment.created":{"push":{"afterSecs":0},"email":{"afterSecs":4,"unless":"read"}}}`))

	nid := th.NotifyWith(t, 7, "", 1, 2)
	// Every record exists when the publish answers.
	recs := th.DeliveriesOf(t, nid)
	if len(recs) != 4 {
		t.Fatalf("records right after the publish: %+v, want 4", recs)
	}
	th.MarkRead(t, 2, nid)

	byKey := map[string]testhub.GatewayCall{}
	for range 3 {
		c := g.Next(t, 20*time.Second)
		byKey[c.IdemKey] = c
	}
	g.Quiet(t, 1500*time.Millisecond)
	for _, k := range []string{nid + "/1/push", nid + "/2/push", nid + "/1/email"} {
		c, ok := byKey[k]
		if !ok {
			t.Fatalf("no hand-off with Idempotency-Key %s; got %v", k, byKey)
		}
		if c.InternalKey != th.Cfg.InternalAPIKey || c.Body.Attempt != 1 || len(c.Body.Notifications) != 1 {
			t.Fatalf("hand-off %s: %+v", k, c)
		}
		var item struct{ NotificationID, EventType string }
		_ = json.Unmarshal(c.Body.Notifications[0], &item)
		if item.NotificationID != nid || item.EventType != "comment.created" {
			t.Fatalf("hand-off %s carries %s", k, c.Body.Notifications[0])
		}
	}
	th.WaitDelivery(t, nid, 1, "email", "sent")
	r := th.WaitDelivery(t, nid, 2, "email", "canceled")
	if testhub.Str(r.Reason) != "read" {
		t.Fatalf("user 2's email: %+v, want canceled for read", r)
	}
	sent := th.WaitDelivery(t, nid, 1, "push", "sent")
	if sent.Attempts != 1 || sent.DueAt != nil || sent.LastErrorCode != nil {
		t.Fatalf("a sent record: %+v", sent)
	}
	if v := testhub.MetricValue(t, th, `deliveries_total{channel="push",state="sent",reason=""}`); v != "2" {
		t.Fatalf("pushes sent counted %s, want 2", v)
	}
}

func TestDelivery_GatewayAnswersAreClassified(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	redirected := 0
	var mu sync.Mutex
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		redirected++
		mu.Unlock()
	}))
	defer target.Close()
	g := testhub.StartGateway(t, answersByUser(target.URL))
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`, func(c *testhub.Configs) {
		// The 2 s timeout of testhub.DeliveryConfig: shorter, a busy machine made
		// the gateway's quick answers time out too.
		c.Delivery.MaxAttempts = 3
	}))
	nid := th.NotifyWith(t, 7, "", 1, 2, 3, 4, 5, 6, 7, 8)

	want := map[int64]struct {
		state, code string
		attempts    int
	}{
		1: {"sent", "HTTP_500", 2}, 2: {"dead", "UNREGISTERED", 1}, 3: {"sent", "HTTP_429", 2},
		4: {"dead", "REDIRECT", 3}, 5: {"sent", "TIMEOUT", 2}, 6: {"dead", "INVALID_ARGUMENT", 1},
		7: {"dead", "HTTP_418", 1}, 8: {"sent", "QUOTA_EXCEEDED", 2},
	}
	for u, w := range want {
		r := th.WaitDelivery(t, nid, u, "push", w.state)
		if r.Attempts != w.attempts || testhub.Str(r.LastErrorCode) != w.code {
			t.Errorf("user %d: %+v, want %d attempts, last code %s", u, r, w.attempts, w.code)
		}
	}
	retryAfterHonoured(t, g, nid)
	if redirected != 0 {
		t.Errorf("the redirect was followed %d times", redirected)
	}
	if v := testhub.MetricValue(t, th, `deliveries_total{channel="push",state="dead",reason=""}`); v != "4" {
		t.Errorf("dead deliveries counted %s, want 4", v)
	}
}

// answersByUser is the gateway's answer to each user's hand-offs: a 5xx
// then fine (1), a permanent error (2), 429 with Retry-After: 1 then fine
// (3), a redirect to target (4), a hang then fine (5), a 503 whose code is
// permanent (6), a 418 (7), a retryable 400 then fine (8).
func answersByUser(target string) func(c testhub.GatewayCall) testhub.GatewayAnswer {
	tries := map[int64]int{}
	return func(c testhub.GatewayCall) testhub.GatewayAnswer {
		tries[c.Body.UserID]++
		n := tries[c.Body.UserID]
		switch c.Body.UserID {
		case 1: // a 5xx, then fine
			if n == 1 {
				return testhub.GatewayAnswer{Status: 500}
			}
		case 2:
			return testhub.GatewayAnswer{Status: 400, Body: `{"errorCode":"UNREGISTERED"}`}
		case 3: // Retry-After is honoured
			if n == 1 {
				return testhub.GatewayAnswer{Status: 429, Header: map[string]string{"Retry-After": "1"}}
			}
		case 4:
			return testhub.GatewayAnswer{Status: 307, Header: map[string]string{"Location": target}}
		case 5:
			if n == 1 {
				return testhub.GatewayAnswer{Hang: true}
			}
		case 6:
			return testhub.GatewayAnswer{Status: 503, Body: `{"errorCode":"INVALID_ARGUMENT"}`}
		case 7:
			return testhub.GatewayAnswer{Status: 418}
		case 8:
			if n == 1 {
				return testhub.GatewayAnswer{Status: 400, Body: `{"errorCode":"QUOTA_EXCEEDED"}`}
			}
		}
		return testhub.GatewayAnswer{Status: 202}
	}
}

// retryAfterHonoured: every hand-off carries its record's Idempotency-Key,
// and user 3's retry came a second after the 429 or later.
func retryAfterHonoured(t *testing.T, g *testhub.Gateway, nid string) {
	var first, second time.Time
	for _, c := range g.Calls() {
		if c.IdemKey != fmt.Sprintf("%s/%d/push", nid, c.Body.UserID) {
			t.Errorf("a hand-off to %d has Idempotency-Key %q", c.Body.UserID, c.IdemKey)
		}
		if c.Body.UserID == 3 {
			if c.Body.Attempt == 1 {
				first = c.At
			} else {
				second = c.At
			}
		}
	}
	if second.Sub(first) < time.Second {
		t.Errorf("Retry-After: 1 was not honoured: the retry came %v after", second.Sub(first))
	}
}

func TestDelivery_GatewayDownThenBackGetsAllInDueOrder(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	g, heal := testhub.StartFlippingGateway(t, testhub.GatewayAnswer{Status: 503})
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`, func(c *testhub.Configs) {
		c.Delivery.MaxAttempts = 100
	}))
	var ids []string
	for range 5 {
		ids = append(ids, th.NotifyWith(t, 7, "", 1))
	}
	// While it is down: attempts come and fail, and nothing is lost.
	for range 3 {
		g.Next(t, 10*time.Second)
	}
	heal()
	for _, id := range ids {
		th.WaitDelivery(t, id, 1, "push", "sent")
	}
	calls := g.Calls()
	var order []string // the successful ones are the last calls
	for _, c := range calls[len(calls)-len(ids):] {
		order = append(order, c.IdemKey)
	}
	for i, id := range ids {
		if order[i] != id+"/1/push" {
			t.Fatalf("after the gateway came back, hand-offs went %v; want the order of %v", order, ids)
		}
	}
}

func TestDelivery_DeadArePagedAndRedriven(t *testing.T) {
	rs := testredis.Start(t)
	g, heal := testhub.StartFlippingGateway(t, testhub.GatewayAnswer{Status: 400, Body: `{"errorCode":"INVALID_ARGUMENT"}`})
	th := testhub.Start(t, rs.Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"push":{},"email":{}}}`))
	nid := th.NotifyWith(t, 7, "", 1, 2, 3)
	for u := int64(1); u <= 3; u++ {
		th.WaitDelivery(t, nid, u, "push", "dead")
		th.WaitDelivery(t, nid, u, "email", "dead")
	}
	internal := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}
	var seen []string
	for _, r := range th.DeadPages(t, 2, 3) {
		if r.Channel != "push" || r.State != "dead" || testhub.Str(r.LastErrorCode) != "INVALID_ARGUMENT" {
			t.Fatalf("a dead page holds %+v", r)
		}
		seen = append(seen, fmt.Sprint(r.UserID))
	}
	if len(seen) != 3 {
		t.Fatalf("dead push deliveries listed: %v, want 3", seen)
	}
	if code, _ := th.Do(t, http.MethodGet, "/api/v1/internal/deliveries/dead?after=nonsense!", internal, ""); code != 400 {
		t.Fatalf("a bad cursor: %d, want 400", code)
	}
	if code, _ := th.Do(t, http.MethodGet, "/api/v1/internal/deliveries/dead", nil, ""); code != 401 {
		t.Fatalf("dead deliveries without the internal key: %d, want 401", code)
	}

	heal()
	code, env := th.Do(t, http.MethodPost, "/api/v1/internal/deliveries/redrive", internal, `{"userId":2,"channel":"email"}`)
	if code != 200 {
		t.Fatalf("redrive: %d %+v", code, env)
	}
	var res struct {
		Requeued int
		More     bool
	}
	testhub.Remarshal(t, env.Result, &res)
	if res.Requeued != 1 || res.More {
		t.Fatalf("redrive of one: %+v", res)
	}
	r := th.WaitDelivery(t, nid, 2, "email", "sent")
	if r.Attempts != 1 {
		t.Fatalf("a redriven delivery counts attempts from zero: %+v", r)
	}
	if got := th.DeliveriesOf(t, nid)["1/email"].State; got != "dead" {
		t.Fatalf("user 1's email is %s after a redrive of user 2's", got)
	}
	// "Everything" must be said: nothing named, a typo, or all beside a
	// filter re-sends nothing.
	for _, bad := range []string{``, `{}`, `null`, `{"userIds":[1]}`, `{"all":false}`, `{"all":true,"userId":1}`, `{"channel":"push","user":1}`} {
		if code, env := th.Do(t, http.MethodPost, "/api/v1/internal/deliveries/redrive", internal, bad); code != 400 || env.Code != "COMMON400" {
			t.Fatalf("redrive %s: %d %+v, want 400 COMMON400", bad, code, env)
		}
	}
	if got := th.DeliveriesOf(t, nid)["1/email"].State; got != "dead" {
		t.Fatalf("user 1's email is %s after refused redrives", got)
	}
	code, env = th.Do(t, http.MethodPost, "/api/v1/internal/deliveries/redrive", internal, `{"all":true}`)
	testhub.Remarshal(t, env.Result, &res)
	if code != 200 || res.Requeued != 5 {
		t.Fatalf("redrive of all: %d %+v", code, res)
	}
	for u := int64(1); u <= 3; u++ {
		th.WaitDelivery(t, nid, u, "push", "sent")
		th.WaitDelivery(t, nid, u, "email", "sent")
	}
}
