package push_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"roomhub/hub/delivery"
	"roomhub/hub/push"
	"roomhub/internal/testapns"
	"roomhub/internal/testfcm"
	"roomhub/internal/testhub"
	"roomhub/internal/testpush"
	"roomhub/internal/testredis"
)

// A push service's answer over the bounds (a 9 MiB header, a 1 MiB body)
// is a failed attempt, whatever its Status: retried, then sent when the
// service answers within them (hardening IV, 1).
func TestWebPush_AnswersOverTheBoundsAreFailedAttempts(t *testing.T) {
	ps := testpush.Start(t)
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), ps, nil)
	th.Subscribe(t, 20, ps.Subscription("/push/header", testpush.HugeHeader, http.StatusCreated))
	th.Subscribe(t, 21, ps.Subscription("/push/body", testpush.HugeBody, http.StatusCreated))
	nid := th.NotifyWith(t, 42, "", 20, 21)
	for _, u := range []int64{20, 21} {
		if r := th.WaitDelivery(t, nid, u, "webpush", "sent"); r.Attempts != 2 {
			t.Errorf("user %d: %+v, want sent at the second attempt (the first answer was over the bounds)", u, r)
		}
	}
}

// slowUsers is how many users a slow push service or gateway holds in
// the tests below: more than an instance's 64 hand-off jobs.
const slowUsers = 70

// One push service that never answers holds at most its origin's share of
// the pushes (MaxPerOrigin), so another user's push to another service
// goes out while it holds them; once it answers, every held or waiting
// push is sent, none having spent an attempt waiting (hardening IV, 3).
func TestWebPush_ASlowPushServiceHoldsNoOtherPush(t *testing.T) {
	t.Parallel()
	slow, fast := testpush.Start(t), testpush.Start(t)
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), slow, func(c *testhub.Configs) { c.Delivery.Timeout = time.Minute })
	fast.SetPublicKey(th.VapidKey(t))
	var users []int64
	for i := range slowUsers {
		u := int64(100 + i)
		users = append(users, u)
		th.Subscribe(t, u, slow.Subscription(fmt.Sprintf("/push/slow/%d", u), testpush.Hold))
	}
	defer slow.Release()
	th.Subscribe(t, 99, fast.Subscription("/push/fast"))
	held := th.NotifyWith(t, 42, "", users...)
	for range push.MaxPerOrigin {
		select {
		case <-slow.Arrived():
		case <-time.After(30 * time.Second):
			t.Fatal("the slow service got fewer pushes than its origin's share")
		}
	}
	nid := th.NotifyWith(t, 43, "", 99)
	select {
	case <-fast.Arrived():
	case <-time.After(30 * time.Second):
		t.Fatalf("another service's push waited behind the slow one (it holds %d)", slow.MostHeld())
	}
	th.WaitDelivery(t, nid, 99, "webpush", "sent")
	if n := slow.MostHeld(); n > push.MaxPerOrigin {
		t.Fatalf("the slow service held %d pushes at once, more than %d", n, push.MaxPerOrigin)
	}
	slow.Release()
	for _, u := range users {
		if r := th.WaitDelivery(t, held, u, "webpush", "sent"); r.Attempts != 1 {
			t.Errorf("user %d: %+v, want sent at the first attempt (waiting spends none)", u, r)
		}
	}
}

// A gateway that never answers holds at most its channel's share of the
// hand-off jobs: the webpush channel's push goes out meanwhile
// (hardening IV, 3).
func TestDelivery_ASlowChannelHoldsNoOtherChannel(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	g := testhub.StartGateway(t, func(testhub.GatewayCall) testhub.GatewayAnswer {
		return testhub.GatewayAnswer{Status: 200, Wait: func() { <-release }}
	})
	ps := testpush.Start(t)
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), ps, func(c *testhub.Configs) {
		c.Delivery.Channels = []string{"webpush", "email"}
		c.Delivery.SinkURL = g.URL
		c.Delivery.Timeout = time.Minute
	})
	defer free()
	th.Subscribe(t, 99, ps.Subscription("/push/fast"))
	var users []int64
	for i := range slowUsers {
		users = append(users, int64(100+i))
	}
	th.NotifyWith(t, 42, `"delivery":{"email":{"afterSecs":0}}`, users...)
	for range 64 / 2 { // the email channel's share of 64 jobs
		g.Next(t, 30*time.Second)
	}
	nid := th.NotifyWith(t, 43, `"delivery":{"webpush":{"afterSecs":0}}`, 99)
	select {
	case <-ps.Arrived():
	case <-time.After(30 * time.Second):
		t.Fatal("a push waited behind the email gateway's hand-offs")
	}
	th.WaitDelivery(t, nid, 99, "webpush", "sent")
	free()
}

// One browser, two people (a shared computer): the endpoint subscribed by
// user 4001, then by 4002, belongs to 4002 alone; 4001's pushes stop
// reaching it (skipped, unsubscribed), 4002's arrive (hardening IV, 8).
func TestWebPush_AnEndpointBelongsToOneUser(t *testing.T) {
	ps := testpush.Start(t)
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), ps, nil)
	shared := ps.Subscription("/push/shared")
	th.Subscribe(t, 4001, shared)
	th.Subscribe(t, 4002, shared)
	th.Subscribe(t, 4002, shared) // again: still 4002's, once
	if a, _ := th.SubsOf(t, 4001); len(a) != 0 {
		t.Fatalf("the first user keeps %d subscriptions", len(a))
	}
	if b, _ := th.SubsOf(t, 4002); len(b) != 1 {
		t.Fatalf("the second user keeps %d subscriptions, want 1", len(b))
	}
	nid := th.NotifyWith(t, 42, "", 4001)
	if r := th.WaitDelivery(t, nid, 4001, "webpush", "skipped"); testhub.Str(r.Reason) != "unsubscribed" {
		t.Fatalf("the first user's push: %+v", r)
	}
	nid = th.NotifyWith(t, 42, "", 4002)
	th.WaitDelivery(t, nid, 4002, "webpush", "sent")
	if got := ps.Pushes(); len(got) != 1 || got[0].Message.NotificationID != nid {
		t.Fatalf("pushes %+v, want the second user's alone", got)
	}
	if v := testhub.MetricValue(t, th, `webpush_subscriptions`); v != "1" {
		t.Fatalf("webpush_subscriptions = %s, want 1", v)
	}
}

// Each severity's Urgency reaches the push service (low → low, normal and
// high → normal, critical → high), and a 429's Retry-After (2 s) is waited
// out before the next attempt, whatever the shorter backoff (hardening IV,
// 11: Urgency sent only for high, or Retry-After ignored, passed every test).
func TestWebPush_UrgencyAndRetryAfterReachThePushService(t *testing.T) {
	t.Parallel()
	ps := testpush.Start(t)
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), ps, nil) // backoff 100 ms
	want := map[string]string{"low": "low", "normal": "normal", "high": "normal", "critical": "high"}
	users := map[string]int64{"low": 30, "normal": 31, "high": 32, "critical": 33}
	for sev, u := range users {
		th.Subscribe(t, u, ps.Subscription(fmt.Sprintf("/push/%s", sev)))
		nid := th.NotifyWith(t, 42, fmt.Sprintf(`"severity":%q`, sev), u)
		th.WaitDelivery(t, nid, u, "webpush", "sent")
	}
	for _, p := range ps.Pushes() {
		sev := p.Path[len("/push/"):]
		if got := p.Header.Get("Urgency"); got != want[sev] {
			t.Errorf("severity %s: Urgency %q, want %q", sev, got, want[sev])
		}
	}
	if n := len(ps.Pushes()); n != len(users) {
		t.Fatalf("%d pushes, want %d", n, len(users))
	}

	th.Subscribe(t, 34, ps.Subscription("/push/later", http.StatusTooManyRequests, http.StatusCreated))
	nid := th.NotifyWith(t, 42, "", 34)
	if r := th.WaitDelivery(t, nid, 34, "webpush", "sent"); r.Attempts != 2 {
		t.Fatalf("429 then 201: %+v", r)
	}
	at := ps.Arrivals("/push/later")
	if len(at) != 2 || at[1].Sub(at[0]) < 2*time.Second {
		t.Fatalf("attempts at %v: the second came before the Retry-After of 2 s", at)
	}
}

// One person's subscriptions answering 429 are that person's: they pause
// the push service for nobody else, whose push goes at once; a service
// that stops answering is paused, end to end, its pushes waiting without
// spending attempts (hardening V, 15 and 8).
func TestWebPush_OnePersonsRefusalsPauseNobodyElse(t *testing.T) {
	t.Parallel()
	ps := testpush.Start(t)
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), ps, func(c *testhub.Configs) { c.Delivery.Timeout = 2 * time.Second })
	for i := range 5 {
		th.Subscribe(t, 7, ps.Subscription(fmt.Sprintf("/push/busy/%d", i), 429, 429, 429))
	}
	th.Subscribe(t, 8, ps.Subscription("/push/other"))
	th.NotifyWith(t, 42, "", 7)
	for range 5 {
		<-ps.Arrived()
	}
	nid := th.NotifyWith(t, 43, "", 8)
	if r := th.WaitDelivery(t, nid, 8, "webpush", "sent"); r.Attempts != 1 {
		t.Fatalf("another person's push after five 429s of one: %+v, want sent at once", r)
	}

	// No answer at all, from five people's subscriptions: the origin pauses,
	// and a sixth person's push waits for the pause's end, not tried.
	var held []int64
	for u := int64(20); u < 25; u++ {
		held = append(held, u)
		th.Subscribe(t, u, ps.Subscription(fmt.Sprintf("/push/held/%d", u), testpush.Hold, testpush.Hold))
	}
	defer ps.Release()
	th.Subscribe(t, 30, ps.Subscription("/push/after"))
	timedOut := th.NotifyWith(t, 44, "", held...)
	for _, u := range held { // each times out (2 s): five failures in a row
		waitForRecord(t, th, timedOut, u, "webpush", "a timed-out attempt", func(r delivery.Record) bool { return r.Attempts >= 1 && r.LastErrorCode != nil })
	}
	after := th.NotifyWith(t, 45, "", 30)
	r := waitForRecord(t, th, after, 30, "webpush", "a push put off by the pause", putOff)
	if r.State == "sent" || r.Attempts != 0 || len(ps.Arrivals("/push/after")) != 0 {
		t.Fatalf("a push to a service that stopped answering: %+v, %d arrivals; want put off, not tried", r, len(ps.Arrivals("/push/after")))
	}
}

// putOff says whether a record was sent, or put off for 10 s or more
// (its service paused): what a push after a breaker opened waits for.
func putOff(r delivery.Record) bool {
	due, _ := time.Parse(time.RFC3339Nano, testhub.Str(r.DueAt))
	return r.State == "sent" || time.Until(due) > 10*time.Second
}

// waitForRecord waits (15 s at most) until user's delivery of nid on ch
// satisfies ok, and returns it.
func waitForRecord(t *testing.T, th *testhub.Hub, nid string, user int64, ch, what string, ok func(delivery.Record) bool) delivery.Record {
	t.Helper()
	var last delivery.Record
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if last = th.DeliveriesOf(t, nid)[fmt.Sprintf("%d/%s", user, ch)]; ok(last) {
			return last
		}
	}
	t.Fatalf("user %d's delivery of %s: %+v, want %s", user, nid, last, what)
	return last
}

// FCM and APNs that stop answering are paused, end to end: after five
// pushes without an answer, the next waits for the pause's end, not tried
// (hardening V, 8: only the gate was tested, not the senders using it).
func TestMobilePush_AServiceThatStopsAnsweringIsPaused(t *testing.T) {
	t.Parallel()
	fs, as := testfcm.Start(t), testapns.Start(t)
	defer fs.Release()
	defer as.Release()
	for _, c := range []struct {
		ch    string
		start func() *testhub.Hub
		hold  func(u int64) string // scripts user u's device to hang, and gives its token
		tries func(token string) int
	}{
		{"fcm", func() *testhub.Hub { return testhub.StartFCMHub(t, testredis.Start(t).Addr(), fs, nil) },
			func(u int64) string {
				fs.Script(testhub.FCMToken(int(u)), testfcm.Answer{Hold: true})
				return testhub.FCMToken(int(u))
			}, fs.Tries},
		{"apns", func() *testhub.Hub { return testhub.StartAPNSHub(t, testredis.Start(t).Addr(), as, nil) },
			func(u int64) string {
				as.Script(testhub.APNSToken(int(u)), testapns.Answer{Hold: true})
				return testhub.APNSToken(int(u))
			},
			func(token string) int { return len(as.Arrivals(token)) }},
	} {
		th := c.start()
		var held []int64
		for u := int64(70); u < 75; u++ {
			held = append(held, u)
			th.Register(t, u, fmt.Sprintf(`{"platform":%q,"token":%q}`, c.ch, c.hold(u)))
		}
		th.Register(t, 80, fmt.Sprintf(`{"platform":%q,"token":%q}`, c.ch, c.hold(80)))
		timedOut := th.NotifyWith(t, 44, "", held...)
		for _, u := range held {
			waitForRecord(t, th, timedOut, u, c.ch, "a timed-out attempt", func(r delivery.Record) bool { return r.Attempts >= 1 && r.LastErrorCode != nil })
		}
		after := th.NotifyWith(t, 45, "", 80)
		r := waitForRecord(t, th, after, 80, c.ch, "a push put off by the pause", putOff)
		if r.State == "sent" || r.Attempts != 0 || c.tries(c.hold(80)) != 0 {
			t.Fatalf("%s: a push to a service that stopped answering: %+v; want put off, not tried", c.ch, r)
		}
	}
}
