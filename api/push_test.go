package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"roomhub/hub/push/webpush"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testpush"
	"roomhub/internal/testredis"
)

// pushRules: webpush as DESIGN's example has it, nobody looking or nothing.
const pushRules = `{"comment.created":{"webpush":{"afterSecs":0,"onlyIfOffline":true,"unless":"seen"}}}`

// testPushKeys is one VAPID key pair for the package's tests.
var testPushKeys = sync.OnceValue(func() webpush.Keys {
	k, err := webpush.NewKeys()
	if err != nil {
		panic(err)
	}
	return k
})

// withPushKeys sets the WEBPUSH_* keys: a hub on a real Redis needs them.
func withPushKeys(c *testhub.Configs) {
	k := testPushKeys()
	c.WebPush.PublicKey, c.WebPush.PrivateKey, c.WebPush.Subject = k.Public, k.Private(), "mailto:ops@example.com"
}

// startPushHub is a hub with the webpush channel on, its endpoints allowed
// on loopback (the stand-in), trusting the stand-in's certificate.
func startPushHub(t *testing.T, addr string, ps *testpush.Service, more func(*testhub.Configs)) *testhub.Hub {
	t.Helper()
	th := testhub.StartFull(t, addr, func(c *testhub.Configs) {
		c.Delivery.Channels, c.Delivery.Rules = []string{"webpush"}, pushRules
		withPushKeys(c)
		c.WebPush.AllowPrivate, c.WebPush.AllowedHosts = true, []string{"*"}
		c.Delivery.Backoff = 100 * time.Millisecond
		c.Delivery.Timeout = time.Second
		if more != nil {
			more(c)
		}
	}, nil, testhub.Extras{PushTLS: ps.Client().Transport.(*http.Transport).TLSClientConfig})
	ps.SetPublicKey(th.VapidKey(t))
	return th
}

// The "done when", on the API: a user with no stream open gets
// exactly one push for a notification, sealed for their browser and signed
// with the hub's key, that opens to the item (title, body, url, severity,
// tag), with Urgency from the severity and Topic from the group key; once
// the user has a stream open, a publish pushes nothing (skipped, online).
func TestWebPush_PushesOnlyWhenNobodyIsLooking(t *testing.T) {
	ps := testpush.Start(t)
	th := startPushHub(t, testredis.Start(t).Addr(), ps, nil)
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
	if str(r.Reason) != "online" || len(ps.Pushes()) != 1 {
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
	th := startPushHub(t, testredis.Start(t).Addr(), ps, func(c *testhub.Configs) { c.Delivery.MaxAttempts = 3 })
	th.Subscribe(t, 10, ps.Subscription("/push/gone", http.StatusGone))
	th.Subscribe(t, 11, ps.Subscription("/push/big", http.StatusRequestEntityTooLarge))
	th.Subscribe(t, 12, ps.Subscription("/push/busy", http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusCreated))
	th.Subscribe(t, 13, ps.Subscription("/push/moved", http.StatusFound))
	th.Subscribe(t, 15, ps.Subscription("/push/old", http.StatusNotFound))
	th.Subscribe(t, 15, ps.Subscription("/push/new", http.StatusCreated))
	th.Subscribe(t, 16, ps.Subscription("/push/slow", testpush.Hang, http.StatusCreated))
	nid := th.NotifyWith(t, 42, "", 10, 11, 12, 13, 14, 15, 16)

	r := th.WaitDelivery(t, nid, 10, "webpush", "dead")
	if str(r.LastErrorCode) != "UNREGISTERED" {
		t.Errorf("410: %+v", r)
	}
	if r := th.WaitDelivery(t, nid, 11, "webpush", "dead"); str(r.LastErrorCode) != "PAYLOAD_TOO_LARGE" {
		t.Errorf("413: %+v", r)
	}
	if r := th.WaitDelivery(t, nid, 12, "webpush", "sent"); r.Attempts != 3 {
		t.Errorf("429, 500, then 201: %+v, want sent at the third attempt", r)
	}
	if r := th.WaitDelivery(t, nid, 13, "webpush", "dead"); str(r.LastErrorCode) != "REDIRECT" || r.Attempts != 3 {
		t.Errorf("302: %+v, want retried as REDIRECT until the attempts ran out", r)
	}
	if r := th.WaitDelivery(t, nid, 14, "webpush", "skipped"); str(r.Reason) != "unsubscribed" {
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
		c.Delivery.Channels, c.Delivery.Rules = []string{"webpush"}, pushRules
		withPushKeys(c)
	}
	// A dev key pair an earlier run left in Redis is deleted once keys are
	// configured (hardening IV, 10).
	testredis.Do(t, testredis.Client(t, rs.Addr()), "SET", webpush.VAPIDKey, "old-dev-pair")
	a, b := testhub.Start(t, rs.Addr(), on), testhub.Start(t, rs.Addr(), on)
	if ka, kb := a.VapidKey(t), b.VapidKey(t); ka != kb || ka != testPushKeys().Public {
		t.Fatalf("two instances' keys: %q, %q, want the configured one", ka, kb)
	}
	if n, _ := a.Redis.Do(t.Context(), a.Redis.B().Exists().Key(webpush.VAPIDKey).Build()).AsInt64(); n != 0 {
		t.Fatal("the dev key pair kept in Redis is still there with keys configured")
	}
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
	// Off: the routes say so.
	off := testhub.Start(t, rs.Addr(), nil)
	if code, _ := off.Do(t, http.MethodGet, "/api/v1/push/vapid-public-key", nil, ""); code != 404 {
		t.Fatalf("vapid-public-key with webpush off: %d", code)
	}
}

// The "done when" in real Chromium, on the demo page. The person
// turns pushes on in the bell's preferences (the SDK registers the hub's
// worker and hands the subscription to the hub). While the page is open
// a publish reaches it live and pushes nothing; a push delivered to the
// worker (as a push service would: DevTools' deliverPushMessage) shows a
// notification with the item's title and body; opening the item as a click
// does tells the page, which marks it read. Once the browser is gone, a
// publish reaches the push service exactly once, and opens to the item.
// (The browser's own subscribe call is stood in for, answering a
// subscription to the stand-in: a headless browser cannot reach a real push
// service offline.)
func TestBrowser_WebPushRingsOnlyWhenTheTabIsClosed(t *testing.T) {
	t.Parallel()
	ps := testpush.Start(t)
	th := startPushHub(t, testredis.Start(t).Addr(), ps, nil)
	const user = 21
	page := th.URL + "/?user=21&rooms=42"
	d := testbrowser.Start(t, "demo.mjs", page, t.TempDir())
	d.Send(t, "GRANT notifications")
	// The person turns it on in the bell's preferences: the SDK registers
	// the hub's worker, subscribes with the hub's key and hands the
	// subscription over. Only the browser's own call to its push service
	// is stood in for (it needs the internet): it answers a subscription to
	// the stand-in, and keeps the key it was asked for.
	sub := ps.Subscription("/push/laptop")
	d.Send(t, "EVAL (() => { const p = window.__push = { made: null, subscribes: 0 }; const sub = "+sub+"; "+
		"PushManager.prototype.subscribe = async function (o) { p.subscribes++; p.made = { endpoint: sub.endpoint, options: { applicationServerKey: o.applicationServerKey }, toJSON: () => sub, unsubscribe: async () => { p.made = null; return true; } }; return p.made; }; "+
		"PushManager.prototype.getSubscription = async function () { return p.made; }; return true; })()")
	d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	d.Send(t, `CLICK roomhub-inbox .gear`)
	// turn clicks the switch and waits for it to say the other way, and for
	// the hub to keep want subscriptions.
	turn := func(on bool, want int) {
		t.Helper()
		labels := []string{"Turn on notifications here", "Turn off notifications here"}
		if !on {
			labels[0], labels[1] = labels[1], labels[0]
		}
		d.Send(t, `CLICK roomhub-inbox .push button >> text=`+labels[0])
		d.Send(t, `TEXT roomhub-inbox .push button | `+labels[1])
		testhub.Eventually(t, 15*time.Second, fmt.Sprintf("%d of the browser's subscriptions at the hub", want), func() bool {
			subs, err := th.SubsOf(t, user)
			return err == nil && len(subs) == want
		})
	}
	turn(true, 1)
	d.Send(t, "WAIT navigator.serviceWorker.getRegistration('/static/roomhub-sw.js').then((r) => !!(r && r.active))")
	turn(false, 0) // off and on again: the hub forgets it, then has it back
	turn(true, 1)
	d.Send(t, "KEY Escape")

	publish := func(title string) string {
		t.Helper()
		code, env := th.PublishRaw(t, fmt.Sprintf(`{"roomId":42,"eventType":"comment.created","data":{"title":%q,"text":"Hello"},"recipientIds":[%d],"severity":"high"}`, title, user))
		if code != 200 {
			t.Fatalf("publish: %d %+v", code, env)
		}
		return "42:" + env.Result.(map[string]any)["streamId"].(string)
	}
	nid := publish("While you look")
	if r := th.WaitDelivery(t, nid, user, "webpush", "skipped"); str(r.Reason) != "online" {
		t.Fatalf("with the page open: %+v", r)
	}
	d.Send(t, `TEXT roomhub-inbox [part="badge"] | 1`)

	msg, _ := json.Marshal(webpush.Message{NotificationID: nid, UserID: "21", Title: "While you look", Body: "Hello", URL: "/?user=21&rooms=42", Severity: "high", Tag: nid})
	// DevTools' delivery (SWPUSH) was now and then lost before the worker's
	// handler ran (about 1 run in 10, even with the worker running; never
	// with the handler instrumented): a push not shown within 5 s is
	// delivered once more, as a push service would retry, and said so.
	shown := func() bool {
		v := d.Send(t, `EVAL navigator.serviceWorker.getRegistration('/static/roomhub-sw.js').then((r) => r.getNotifications()).then((ns) => ns.some((n) => n.title === 'While you look' && n.body === 'Hello' && n.tag === '`+nid+`'))`)["value"]
		return v == true
	}
	d.Send(t, "SWPUSH /static/ "+string(msg))
	for end, again := time.Now().Add(15*time.Second), time.Now().Add(5*time.Second); !shown(); time.Sleep(50 * time.Millisecond) {
		if now := time.Now(); now.After(end) {
			t.Fatal("the worker never showed the push")
		} else if !again.IsZero() && now.After(again) {
			t.Log("the push was not shown within 5 s: delivered again")
			d.Send(t, "SWPUSH /static/ "+string(msg))
			again = time.Time{}
		}
	}
	d.Send(t, fmt.Sprintf(`EVAL navigator.serviceWorker.getRegistration('/static/roomhub-sw.js').then((r) => { r.active.postMessage({ type: 'roomhub-open', notificationId: %q, url: '/?user=21&rooms=42' }); return true; })`, nid))
	testhub.Eventually(t, 15*time.Second, "the opened item read by the page", func() bool { return th.CountsOf(t, user).Unread == 0 })
	d.Send(t, `WAIT document.querySelector('roomhub-inbox').shadowRoot.querySelector('[part="badge"]').hidden`)
	if errs := d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
	if got := ps.Pushes(); len(got) != 0 {
		t.Fatalf("pushes while the page was open: %+v", got)
	}

	// Hardening IV, 8 and 10. The worker shows a push only for the user
	// signed in (the SDK told it: 21): another user's is dropped.
	const reg = `navigator.serviceWorker.getRegistration('/static/roomhub-sw.js')`
	d.Send(t, "EVAL (() => { window.__sw = []; navigator.serviceWorker.addEventListener('message', (e) => window.__sw.push(e.data)); return true; })()")
	other, _ := json.Marshal(webpush.Message{NotificationID: "42:1-0", UserID: "22", Title: "For someone else", Severity: "normal", Tag: "42:1-0"})
	d.Send(t, "SWPUSH /static/ "+string(other))
	d.Send(t, `WAIT window.__sw.some((m) => m.type === 'roomhub-push-dropped' && m.notificationId === '42:1-0')`)
	d.Send(t, `WAIT `+reg+`.then((r) => r.getNotifications()).then((ns) => !ns.some((n) => n.title === 'For someone else'))`)
	// Nobody signed in (cookie auth with no userId, or signed out): every
	// push is dropped, the user's own too (hardening V, 19).
	d.Send(t, `EVAL `+reg+`.then((r) => { r.active.postMessage({ type: 'roomhub-user', userId: '' }); return true; })`)
	own, _ := json.Marshal(webpush.Message{NotificationID: "42:2-0", UserID: "21", Title: "With nobody signed in", Severity: "normal", Tag: "42:2-0"})
	d.Send(t, "SWPUSH /static/ "+string(own))
	d.Send(t, `WAIT window.__sw.some((m) => m.type === 'roomhub-push-dropped' && m.notificationId === '42:2-0')`)
	d.Send(t, `WAIT document.querySelector('roomhub-inbox').hub.push.state().then((s) => s === 'on')`) // the SDK says 21 again
	// A click opens only this site's pages or https: ones; anything else
	// opens the site's root.
	for _, u := range []string{"javascript:alert(1)", "//evil.example/x", "http://evil.example/x"} {
		d.Send(t, fmt.Sprintf(`EVAL `+reg+`.then((r) => { window.__sw.length = 0; r.active.postMessage({ type: 'roomhub-open', notificationId: '', url: %q }); return true; })`, u))
		d.Send(t, `WAIT window.__sw.some((m) => m.type === 'roomhub-notification-click' && m.url === location.origin + '/')`)
	}
	// state() subscribes again when the hub's key is not the subscription's.
	d.Send(t, `EVAL (() => { window.__push.made.options.applicationServerKey = new Uint8Array(65).buffer; window.__push.subscribes = 0; return true; })()`)
	d.Send(t, `WAIT document.querySelector('roomhub-inbox').hub.push.state().then((s) => s === 'on' && window.__push.subscribes === 1)`)

	d.Quit() // every tab closed
	testhub.Eventually(t, 15*time.Second, "the user offline", func() bool {
		code, env := th.Do(t, http.MethodGet, "/api/v1/rooms/42/presence", map[string]string{"Authorization": "Bearer " + th.Token(t, 99)}, "")
		return code == 200 && !strings.Contains(fmt.Sprint(env.Result), "21")
	})
	nid = publish("While you are away")
	th.WaitDelivery(t, nid, user, "webpush", "sent")
	got := ps.Pushes()
	if len(got) != 1 || got[0].Message.NotificationID != nid || got[0].Message.Title != "While you are away" {
		t.Fatalf("pushes %+v, want exactly one of %s", got, nid)
	}
}
