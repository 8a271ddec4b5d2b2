package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"roomhub/hub/push/webpush"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testpush"
	"roomhub/internal/testredis"
	"strings"
	"testing"
	"time"
)

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
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), ps, nil)
	r := pushRun{th: th, ps: ps, user: 21}
	r.d = testbrowser.Start(t, "demo.mjs", th.URL+"/?user=21&rooms=42", t.TempDir())
	r.d.Send(t, "GRANT notifications")
	r.turnOn(t)
	r.whileLooking(t)
	r.workerGuards(t)
	r.away(t)
}

// pushRun is what the steps of the Web Push browser test share: the hub,
// the stand-in push service, the page's driver and its user.
type pushRun struct {
	th   *testhub.Hub
	ps   *testpush.Service
	d    *testbrowser.Driver
	user int64
}

// publish sends a high-severity comment titled title to the user in room
// 42 and returns its notificationId.
func (r pushRun) publish(t *testing.T, title string) string {
	t.Helper()
	code, env := r.th.PublishRaw(t, fmt.Sprintf(`{"roomId":42,"eventType":"comment.created","data":{"title":%q,"text":"Hello"},"recipientIds":[%d],"severity":"high"}`, title, r.user))
	if code != 200 {
		t.Fatalf("publish: %d %+v", code, env)
	}
	return "42:" + env.Result.(map[string]any)["streamId"].(string)
}

// turnOn: the person turns notifications on in the bell's preferences,
// off and on again; the hub keeps the subscription, forgets it, has it
// back; while the browser has not answered, the row waits and says so.
func (r pushRun) turnOn(t *testing.T) {
	// The person turns it on in the bell's preferences: the SDK registers
	// the hub's worker, subscribes with the hub's key and hands the
	// subscription over. Only the browser's own call to its push service
	// is stood in for (it needs the internet): it answers a subscription to
	// the stand-in, and keeps the key it was asked for.
	sub := r.ps.Subscription("/push/laptop")
	r.d.Send(t, "EVAL (() => { const p = window.__push = { made: null, subscribes: 0 }; const sub = "+sub+"; "+
		"PushManager.prototype.subscribe = async function (o) { p.subscribes++; p.made = { endpoint: sub.endpoint, options: { applicationServerKey: o.applicationServerKey }, toJSON: () => sub, unsubscribe: async () => { p.made = null; return true; } }; return p.made; }; "+
		"PushManager.prototype.getSubscription = async function () { return p.made; }; return true; })()")
	r.d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	r.d.Send(t, `CLICK roomhub-inbox .gear`)
	// turn clicks the switch and waits for it to say the other way, and for
	// the hub to keep want subscriptions.
	turn := func(on bool, want int) {
		t.Helper()
		labels := []string{"Turn on notifications here", "Turn off notifications here"}
		if !on {
			labels[0], labels[1] = labels[1], labels[0]
		}
		r.d.Send(t, `CLICK roomhub-inbox .push button >> text=`+labels[0])
		r.d.Send(t, `TEXT roomhub-inbox .push button | `+labels[1])
		testhub.Eventually(t, 15*time.Second, fmt.Sprintf("%d of the browser's subscriptions at the hub", want), func() bool {
			subs, err := r.th.SubsOf(t, r.user)
			return err == nil && len(subs) == want
		})
	}
	turn(true, 1)
	r.d.Send(t, "WAIT navigator.serviceWorker.getRegistration('/static/roomhub-sw.js').then((r) => !!(r && r.active))")
	turn(false, 0) // off and on again: the hub forgets it, then has it back
	// ... while the browser takes its time to answer: the row waits and says so
	r.d.Send(t, "EVAL (() => { const real = PushManager.prototype.subscribe; PushManager.prototype.subscribe = function (o) { "+
		"return new Promise((res) => { window.__answer = () => { PushManager.prototype.subscribe = real; res(real.call(this, o)); }; }); }; return true; })()")
	r.d.Send(t, `CLICK roomhub-inbox .push button >> text=Turn on notifications here`)
	row := `document.querySelector('roomhub-inbox').shadowRoot.querySelector('.push')`
	if note, _ := r.d.Send(t, "EVAL "+row+".textContent")["value"].(string); !strings.Contains(note, "Waiting for the browser") {
		t.Fatalf("while the browser has not answered, the row says %q", note)
	}
	if busy, _ := r.d.Send(t, "EVAL "+row+".querySelector('button').disabled")["value"].(bool); !busy {
		t.Fatal("the switch can be clicked again while the browser has not answered")
	}
	r.d.Send(t, "WAIT typeof window.__answer === 'function'") // the SDK has asked the browser
	r.d.Send(t, "EVAL (window.__answer(), true)")
	r.d.Send(t, `TEXT roomhub-inbox .push button | Turn off notifications here`)
	testhub.Eventually(t, 15*time.Second, "the browser's subscription at the hub", func() bool {
		subs, err := r.th.SubsOf(t, r.user)
		return err == nil && len(subs) == 1
	})
	r.d.Send(t, "KEY Escape")
}

// whileLooking: a publish reaches the open page live and pushes nothing; a
// push delivered to the worker shows a notification; opening it as a click
// does tells the page, which marks it read.
func (r pushRun) whileLooking(t *testing.T) {
	nid := r.publish(t, "While you look")
	if rec := r.th.WaitDelivery(t, nid, r.user, "webpush", "skipped"); testhub.Str(rec.Reason) != "online" {
		t.Fatalf("with the page open: %+v", rec)
	}
	r.d.Send(t, `TEXT roomhub-inbox [part="badge"] | 1`)

	msg, _ := json.Marshal(webpush.Message{NotificationID: nid, UserID: "21", Title: "While you look", Body: "Hello", URL: "/?user=21&rooms=42", Severity: "high", Tag: nid})
	// DevTools' delivery (SWPUSH) was now and then lost before the worker's
	// handler ran (about 1 run in 10, even with the worker running; never
	// with the handler instrumented): a push not shown within 5 s is
	// delivered once more, as a push service would retry, and said so.
	shown := func() bool {
		v := r.d.Send(t, `EVAL navigator.serviceWorker.getRegistration('/static/roomhub-sw.js').then((r) => r.getNotifications()).then((ns) => ns.some((n) => n.title === 'While you look' && n.body === 'Hello' && n.tag === '`+nid+`'))`)["value"]
		return v == true
	}
	r.d.Send(t, "SWPUSH /static/ "+string(msg))
	for end, again := time.Now().Add(15*time.Second), time.Now().Add(5*time.Second); !shown(); time.Sleep(50 * time.Millisecond) {
		if now := time.Now(); now.After(end) {
			t.Fatal("the worker never showed the push")
		} else if !again.IsZero() && now.After(again) {
			t.Log("the push was not shown within 5 s: delivered again")
			r.d.Send(t, "SWPUSH /static/ "+string(msg))
			again = time.Time{}
		}
	}
	r.d.Send(t, fmt.Sprintf(`EVAL navigator.serviceWorker.getRegistration('/static/roomhub-sw.js').then((r) => { r.active.postMessage({ type: 'roomhub-open', notificationId: %q, url: '/?user=21&rooms=42' }); return true; })`, nid))
	testhub.Eventually(t, 15*time.Second, "the opened item read by the page", func() bool { return r.th.CountsOf(t, r.user).Unread == 0 })
	r.d.Send(t, `WAIT document.querySelector('roomhub-inbox').shadowRoot.querySelector('[part="badge"]').hidden`)
	if errs := r.d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
	if got := r.ps.Pushes(); len(got) != 0 {
		t.Fatalf("pushes while the page was open: %+v", got)
	}
}

// workerGuards (hardening IV, 8 and 10; V, 19): the worker shows a push
// only for the user signed in, none with nobody signed in; a click opens
// only this site's pages; state() subscribes again under a new key.
func (r pushRun) workerGuards(t *testing.T) {
	// Hardening IV, 8 and 10. The worker shows a push only for the user
	// signed in (the SDK told it: 21): another user's is dropped.
	const reg = `navigator.serviceWorker.getRegistration('/static/roomhub-sw.js')`
	r.d.Send(t, "EVAL (() => { window.__sw = []; navigator.serviceWorker.addEventListener('message', (e) => window.__sw.push(e.data)); return true; })()")
	other, _ := json.Marshal(webpush.Message{NotificationID: "42:1-0", UserID: "22", Title: "For someone else", Severity: "normal", Tag: "42:1-0"})
	r.d.Send(t, "SWPUSH /static/ "+string(other))
	r.d.Send(t, `WAIT window.__sw.some((m) => m.type === 'roomhub-push-dropped' && m.notificationId === '42:1-0')`)
	r.d.Send(t, `WAIT `+reg+`.then((r) => r.getNotifications()).then((ns) => !ns.some((n) => n.title === 'For someone else'))`)
	// Nobody signed in (cookie auth with no userId, or signed out): every
	// push is dropped, the user's own too (hardening V, 19).
	r.d.Send(t, `EVAL `+reg+`.then((r) => { r.active.postMessage({ type: 'roomhub-user', userId: '' }); return true; })`)
	own, _ := json.Marshal(webpush.Message{NotificationID: "42:2-0", UserID: "21", Title: "With nobody signed in", Severity: "normal", Tag: "42:2-0"})
	r.d.Send(t, "SWPUSH /static/ "+string(own))
	r.d.Send(t, `WAIT window.__sw.some((m) => m.type === 'roomhub-push-dropped' && m.notificationId === '42:2-0')`)
	r.d.Send(t, `WAIT document.querySelector('roomhub-inbox').hub.push.state().then((s) => s === 'on')`) // the SDK says 21 again
	// A click opens only this site's pages or https: ones; anything else
	// opens the site's root.
	for _, u := range []string{"javascript:alert(1)", "//evil.example/x", "http://evil.example/x"} {
		r.d.Send(t, fmt.Sprintf(`EVAL `+reg+`.then((r) => { window.__sw.length = 0; r.active.postMessage({ type: 'roomhub-open', notificationId: '', url: %q }); return true; })`, u))
		r.d.Send(t, `WAIT window.__sw.some((m) => m.type === 'roomhub-notification-click' && m.url === location.origin + '/')`)
	}
	// state() subscribes again when the hub's key is not the subscription's.
	r.d.Send(t, `EVAL (() => { window.__push.made.options.applicationServerKey = new Uint8Array(65).buffer; window.__push.subscribes = 0; return true; })()`)
	r.d.Send(t, `WAIT document.querySelector('roomhub-inbox').hub.push.state().then((s) => s === 'on' && window.__push.subscribes === 1)`)
}

// away: once every tab is closed and the user is offline, a publish
// reaches the push service exactly once.
func (r pushRun) away(t *testing.T) {
	r.d.Quit() // every tab closed
	testhub.Eventually(t, 15*time.Second, "the user offline", func() bool {
		code, env := r.th.Do(t, http.MethodGet, "/api/v1/rooms/42/presence", map[string]string{"Authorization": "Bearer " + r.th.Token(t, 99)}, "")
		return code == 200 && !strings.Contains(fmt.Sprint(env.Result), "21")
	})
	nid := r.publish(t, "While you are away")
	r.th.WaitDelivery(t, nid, r.user, "webpush", "sent")
	got := r.ps.Pushes()
	if len(got) != 1 || got[0].Message.NotificationID != nid || got[0].Message.Title != "While you are away" {
		t.Fatalf("pushes %+v, want exactly one of %s", got, nid)
	}
}
