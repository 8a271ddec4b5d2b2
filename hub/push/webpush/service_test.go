package webpush_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"roomhub/hub/push/webpush"
	"roomhub/internal/testhub"
	"roomhub/internal/testpush"
	"roomhub/internal/testredis"
)

// The "done when", on the API: a user with no stream open gets
// exactly one push for a notification, sealed for their browser and signed
// with the hub's key, that opens to the item (title, body, url, severity,
// tag), with Urgency from the severity and Topic from the group key; once
// the user has a stream open, a publish pushes nothing (skipped, online).
func TestWebPush_PushesOnlyWhenNobodyIsLooking(t *testing.T) {
	ps := testpush.Start(t)
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), ps, nil)
	const user = 7
	th.Subscribe(t, user, ps.Subscription("/push/ann"))

	body := `{"roomId":42,"eventType":"comment.created","data":{"title":"Order shipped","text":"It leaves today","url":"/orders/1"},"recipientIds":[7],"severity":"critical","groupKey":"orders"}`
	code, env := th.PublishRaw(t, body)
	if code != 200 {
		t.Fatalf("publish: %d %+v", code, env)
	}
	nid := "42:" + env.Result.(map[string]any)["streamId"].(string)
	th.WaitDelivery(t, nid, user, "webpush", "sent")
	got := ps.Pushes()
	if len(got) != 1 {
		t.Fatalf("%d pushes, want 1: %+v", len(got), got)
	}
	want := webpush.Message{NotificationID: nid, UserID: "7", Title: "Order shipped", Body: "It leaves today", URL: "/orders/1", Severity: "critical", Tag: "group:orders"}
	if got[0].Message != want || got[0].Header.Get("Urgency") != "high" || got[0].Header.Get("Topic") != webpush.Topic("orders") || got[0].Header.Get("TTL") != "86400" {
		t.Fatalf("push %+v, headers %v\nwant %+v", got[0].Message, got[0].Header, want)
	}

	// Someone is looking: the live event, no push.
	s := th.OpenStream(t, 42, user, "")
	defer s.Close()
	nid = th.NotifyWith(t, 42, "", user)
	r := th.WaitDelivery(t, nid, user, "webpush", "skipped")
	if testhub.Str(r.Reason) != "online" || len(ps.Pushes()) != 1 {
		t.Fatalf("with a stream open: %+v, %d pushes", r, len(ps.Pushes()))
	}
	if v := testhub.MetricValue(t, th, `deliveries_total{channel="webpush",state="sent",reason=""}`); v != "1" {
		t.Fatalf("deliveries_total sent = %s", v)
	}
	if v := testhub.MetricValue(t, th, `webpush_subscriptions`); v != "1" {
		t.Fatalf("webpush_subscriptions = %s", v)
	}
}

// Each answer of a push service, each user with their own device(s): gone
// (410) forgets the subscription and is dead UNREGISTERED; 413 is dead
// PAYLOAD_TOO_LARGE; 429 with Retry-After and 500 are retried, then sent; a
// redirect is retried (REDIRECT), never followed; no answer within the
// time limit is retried (TIMEOUT); a user with no
// subscription is skipped (unsubscribed); two devices, one gone and one
// taking it: sent, and the gone one forgotten.
func TestWebPush_AnswersOfThePushService(t *testing.T) {
	t.Parallel()
	ps := testpush.Start(t)
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), ps, func(c *testhub.Configs) { c.Delivery.MaxAttempts = 3 })
	th.Subscribe(t, 10, ps.Subscription("/push/gone", http.StatusGone))
	th.Subscribe(t, 11, ps.Subscription("/push/big", http.StatusRequestEntityTooLarge))
	th.Subscribe(t, 12, ps.Subscription("/push/busy", http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusCreated))
	th.Subscribe(t, 13, ps.Subscription("/push/moved", http.StatusFound))
	th.Subscribe(t, 15, ps.Subscription("/push/old", http.StatusNotFound))
	th.Subscribe(t, 15, ps.Subscription("/push/new", http.StatusCreated))
	th.Subscribe(t, 16, ps.Subscription("/push/slow", testpush.Hang, http.StatusCreated))
	nid := th.NotifyWith(t, 42, "", 10, 11, 12, 13, 14, 15, 16)

	r := th.WaitDelivery(t, nid, 10, "webpush", "dead")
	if testhub.Str(r.LastErrorCode) != "UNREGISTERED" {
		t.Errorf("410: %+v", r)
	}
	if r := th.WaitDelivery(t, nid, 11, "webpush", "dead"); testhub.Str(r.LastErrorCode) != "PAYLOAD_TOO_LARGE" {
		t.Errorf("413: %+v", r)
	}
	if r := th.WaitDelivery(t, nid, 12, "webpush", "sent"); r.Attempts != 3 {
		t.Errorf("429, 500, then 201: %+v, want sent at the third attempt", r)
	}
	if r := th.WaitDelivery(t, nid, 13, "webpush", "dead"); testhub.Str(r.LastErrorCode) != "REDIRECT" || r.Attempts != 3 {
		t.Errorf("302: %+v, want retried as REDIRECT until the attempts ran out", r)
	}
	if r := th.WaitDelivery(t, nid, 14, "webpush", "skipped"); testhub.Str(r.Reason) != "unsubscribed" {
		t.Errorf("no subscription: %+v", r)
	}
	th.WaitDelivery(t, nid, 15, "webpush", "sent")
	if r := th.WaitDelivery(t, nid, 16, "webpush", "sent"); r.Attempts != 2 {
		t.Errorf("no answer, then 201: %+v, want sent at the second attempt", r)
	}
	for user, want := range map[int64]int{10: 0, 11: 1, 15: 1} {
		subs, err := th.SubsOf(t, user)
		if err != nil || len(subs) != want {
			t.Errorf("user %d keeps %d subscriptions (%v), want %d", user, len(subs), err, want)
		}
	}
	var paths []string
	for _, p := range ps.Pushes() {
		paths = append(paths, p.Path)
	}
	sort.Strings(paths)
	if fmt.Sprint(paths) != "[/push/busy /push/new /push/slow]" {
		t.Errorf("pushes taken: %v", paths)
	}
}

// The routes: the SSRF rule and the keys' shape refused with 400; at most
// 10 subscriptions a user, the one sent longest ago replaced; DELETE by
// endpoint; unknown fields refused. Two instances sign with the configured
// key pair.
func TestWebPush_SubscriptionRoutes(t *testing.T) {
	rs := testredis.Start(t)
	on := func(c *testhub.Configs) {
		c.Delivery.Channels, c.Delivery.Rules = []string{"webpush"}, testhub.PushRules
		testhub.WithPushKeys(c)
	}
	// A dev key pair an earlier run left in Redis is deleted once keys are
	// configured (hardening IV, 10).
	testredis.Do(t, testredis.Client(t, rs.Addr()), "SET", webpush.VAPIDKey, "old-dev-pair")
	a, b := testhub.Start(t, rs.Addr(), on), testhub.Start(t, rs.Addr(), on)
	if ka, kb := a.VapidKey(t), b.VapidKey(t); ka != kb || ka != testhub.PushKeys().Public {
		t.Fatalf("two instances' keys: %q, %q, want the configured one", ka, kb)
	}
	if n, _ := a.Redis.Do(t.Context(), a.Redis.B().Exists().Key(webpush.VAPIDKey).Build()).AsInt64(); n != 0 {
		t.Fatal("the dev key pair kept in Redis is still there with keys configured")
	}
	refusesWhatIsNoPushService(t, a)
	keepsTenAndDeletesByEndpoint(t, a, b)
	// Off: the routes say so.
	off := testhub.Start(t, rs.Addr(), nil)
	if code, _ := off.Do(t, http.MethodGet, "/api/v1/push/vapid-public-key", nil, ""); code != 404 {
		t.Fatalf("vapid-public-key with webpush off: %d", code)
	}
}

// refusesWhatIsNoPushService: the SSRF rule and the keys' shape refused
// with 400, naming what is missing; a host or address refused says one
// thing, whatever the name resolves to (no DNS oracle).
func refusesWhatIsNoPushService(t *testing.T, a *testhub.Hub) {
	ps := testpush.Start(t) // only for well-formed keys: nothing is sent
	good := ps.Subscription("/x")
	with := func(endpoint string) string {
		return strings.Replace(good, ps.URL+"/x", endpoint, 1)
	}
	for _, body := range []string{
		with("https://127.0.0.1/push"), with("https://[::1]/push"), with("https://169.254.169.254/latest"),
		with("https://[64:ff9b::a9fe:a9fe]/x"), with("https://[2002:a9fe:a9fe::1]/x"), with("https://[::7f00:1]/x"),
		with("https://[fec0::1]/x"), with("https://198.18.0.1/x"), with("https://240.0.0.1/x"), with("https://203.0.113.1/x"),
		with("https://localhost./push"), with("https://vm/x"), with("https://redis/x"), // names: not a push service
		with("https://fcm.googleapis.com.evil.example/x"),
		with("http://fcm.googleapis.com/x"), with("https://10.0.0.8/x"),
		strings.Replace(good, `"auth":"`, `"auth":"AAAA`, 1),
		strings.Replace(good, `"expirationTime":null`, `"expirationTime":1000`, 1), // long past: the browser subscribes again
		strings.Replace(good, `"keys"`, `"extra":1,"keys"`, 1),
		`{"endpoint":"https://fcm.googleapis.com/x"}`,
	} {
		code, env := a.UserDo(t, http.MethodPost, "/api/v1/push/subscriptions", 7, body)
		if code != 400 || env.Code != "COMMON400" {
			t.Errorf("%.90s: %d %+v, want 400", body, code, env)
		}
	}
	// What is missing is named (issue 43, 8).
	for body, field := range map[string]string{
		`{"endpoint":"https://fcm.googleapis.com/x"}`: "keys: required",
		strings.Replace(with("https://fcm.googleapis.com/fcm/send/old"), `"expirationTime":null`, `"expirationTime":1000`, 1): "expirationTime",
	} {
		if _, env := a.UserDo(t, http.MethodPost, "/api/v1/push/subscriptions", 7, body); !strings.HasPrefix(env.Message, field) {
			t.Errorf("%.60s: %q, want it to begin with %q", body, env.Message, field)
		}
	}
	// A host or address refused: one message, whatever the name resolves to
	// (no DNS oracle).
	var said []string
	for _, ep := range []string{"https://vm/x", "https://redis/x", "https://127.0.0.1/x", "https://no-such-name.invalid/x"} {
		_, env := a.UserDo(t, http.MethodPost, "/api/v1/push/subscriptions", 7, with(ep))
		said = append(said, env.Message)
	}
	if said[0] != said[1] || said[1] != said[2] || said[2] != said[3] || strings.Contains(said[0], "resolve") {
		t.Errorf("refusals differ or talk of DNS: %q", said)
	}
}

// keepsTenAndDeletesByEndpoint: an endpoint of a push service is kept;
// eleven: the ten newest kept; DELETE by endpoint, once; unknown fields
// refused.
func keepsTenAndDeletesByEndpoint(t *testing.T, a, b *testhub.Hub) {
	ps := testpush.Start(t) // only for well-formed keys: nothing is sent
	with := func(endpoint string) string {
		return strings.Replace(ps.Subscription("/x"), ps.URL+"/x", endpoint, 1)
	}
	// An endpoint of a push service is kept (nothing is sent to it here); eleven: ten kept.
	var endpoints []string
	for i := range 11 {
		ep := fmt.Sprintf("https://fcm.googleapis.com/fcm/send/%d", i)
		endpoints = append(endpoints, ep)
		a.Subscribe(t, 7, with(ep))
	}
	subs, _ := a.SubsOf(t, 7)
	if _, first := subs[endpoints[0]]; len(subs) != webpush.MaxPerUser || first {
		t.Fatalf("%d kept (the first among them: %v), want %d without the first", len(subs), first, webpush.MaxPerUser)
	}
	code, env := b.UserDo(t, http.MethodDelete, "/api/v1/push/subscriptions", 7, fmt.Sprintf(`{"endpoint":%q}`, endpoints[5]))
	if code != 200 || env.Result.(map[string]any)["unsubscribed"] != true {
		t.Fatalf("delete: %d %+v", code, env)
	}
	if code, env := b.UserDo(t, http.MethodDelete, "/api/v1/push/subscriptions", 7, fmt.Sprintf(`{"endpoint":%q}`, endpoints[5])); code != 200 || env.Result.(map[string]any)["unsubscribed"] != false {
		t.Fatalf("delete again: %d %+v", code, env)
	}
	if code, _ := b.UserDo(t, http.MethodDelete, "/api/v1/push/subscriptions", 7, `{"endpoint":"x","more":1}`); code != 400 {
		t.Fatalf("an unknown field: %d", code)
	}
}
