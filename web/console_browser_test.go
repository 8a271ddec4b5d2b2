package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"roomhub/api"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

const consolePassword = "an operator's console password"

// The walk an operator makes in the console, in Chromium: sign in, find a
// person whose push died and see why, re-drive it by keyboard and see it
// sent at the stand-in; the notification's page; a topic's running
// fan-out watched and cancelled; the dead letters re-driven all at once;
// the overview live (a stream opened shows without a reload). axe finds
// nothing in light or dark (issue 58).
func TestBrowser_ConsoleOperatorsWalk(t *testing.T) {
	t.Parallel()
	w := startWalk(t)
	w.signIn()
	w.person()
	w.notification()
	w.topic()
	w.dead()
	w.overview()
	if errs := w.d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}

// walk is the console's walk: a hub with the console on, its stand-in
// gateway, the browser, and what the steps look at.
type walk struct {
	t             *testing.T
	th            *testhub.Hub
	g             *testhub.Gateway
	heal          func()
	d             *testbrowser.Driver
	first, second string // user 8's and user 9's dead pushes
	key           map[string]string
}

// fanout is the running fan-out the walk watches and cancels.
const fanout = "42:1700000000000-0"

// startWalk starts the hub, kills a push to user 8 and one to user 9 at
// the stand-in, and plants a running fan-out of product:1 (3 followers).
func startWalk(t *testing.T) *walk {
	w := &walk{t: t}
	w.g, w.heal = testhub.StartFlippingGateway(t, testhub.GatewayAnswer{Status: 400, Body: `{"errorCode":"UNREGISTERED"}`})
	w.th = testhub.StartWith(t, testredis.Start(t).Addr(), testhub.DeliveryConfig(w.g, `{"comment.created":{"push":{}}}`),
		func(c *api.Config) { c.ConsolePassword = consolePassword })
	// Its data would be markup, were anything of it HTML.
	code, env := w.th.PublishRaw(t, `{"roomId":42,"eventType":"comment.created","data":{"title":"<img src=x onerror=alert(1)>"},"recipientIds":[8]}`)
	if code != 200 {
		t.Fatalf("publish: %d %+v", code, env)
	}
	w.first = "42:" + env.Result.(map[string]any)["streamId"].(string)
	w.second = w.th.NotifyWith(t, 42, "", 9)
	w.th.WaitDelivery(t, w.first, 8, "push", "dead")
	w.th.WaitDelivery(t, w.second, 9, "push", "dead")
	w.key = map[string]string{"X-Internal-Key": w.th.Cfg.InternalAPIKey}
	if code, env := w.th.Do(t, http.MethodPut, "/api/v1/internal/topics/product:1/followers", w.key, `{"userIds":[1,2,3]}`); code != 200 {
		t.Fatalf("follow: %d %+v", code, env)
	}
	w.th.PlantRunningFanout(t, fanout, "product:1", 1000, 300)
	return w
}

// signIn opens a person's link, signs in on the form, and lands there.
func (w *walk) signIn() {
	w.d = testbrowser.Start(w.t, "inbox.mjs", w.th.URL+"/console/users/8#no-element", testhub.ArtifactsDir(w.t))
	axeClean(w.t, w.d, "the sign-in form")
	w.d.Send(w.t, `FILL #password | `+consolePassword)
	w.d.Send(w.t, `CLICK button[type="submit"]`)
	w.d.Send(w.t, `TEXT h1 | User 8`)
}

// person: why user 8 did not get it, and its re-drive by keyboard (the
// dialog opens on Cancel; Tab, Enter), sent at the stand-in.
func (w *walk) person() {
	t, d := w.t, w.d
	d.Send(t, `TEXT .offline | Offline: no stream open`)
	d.Send(t, `TEXT td .state-dead | dead`)
	d.Send(t, `TEXT td | UNREGISTERED (#1)`) // why: the push service's answer, at the first attempt
	axeClean(t, d, "a person")
	w.heal()
	d.Send(t, `CLICK button[aria-label="Re-drive push `+w.first+`"]`)
	d.Send(t, `FOCUSED | Cancel`)
	d.Send(t, `KEY Tab`)
	d.Send(t, `FOCUSED | Confirm`)
	d.Send(t, `KEY Enter`)
	d.Send(t, `TEXT #status | 1 re-driven.`)
	d.Send(t, `TEXT td .state-sent | sent`)
	to8 := 0
	for _, c := range w.g.Calls() {
		if c.Body.UserID == 8 {
			to8++
		}
	}
	if to8 != 2 { // the one that died, the one re-driven
		t.Fatalf("the stand-in got %d pushes for user 8, want 2", to8)
	}
}

// notification: its page, from the person's; its data stays text.
func (w *walk) notification() {
	t, d := w.t, w.d
	d.Send(t, `CLICK a[href="/console/notifications/`+strings.Replace(w.first, ":", "%3A", 1)+`"]`)
	d.Send(t, `TEXT h1 | Notification `+w.first)
	d.Send(t, `TEXT dd | comment.created`)
	if v := d.Send(t, `EVAL document.querySelector("main pre").textContent`)["value"]; !strings.Contains(v.(string), `"title": "<img src=x onerror=alert(1)>"`) {
		t.Fatalf("the event's data as text: %q", v)
	}
	d.Send(t, `COUNT main img | 0`) // the data stayed text
	d.Send(t, `TEXT td .state-sent | sent`)
}

// topic: found from the header, its followers, a fan-out running that
// moves live, then cancelled.
func (w *walk) topic() {
	t, d := w.t, w.d
	d.Send(t, `FILL #find-q | product:1`)
	d.Send(t, `KEY Enter`)
	d.Send(t, `TEXT h1 | Topic product:1`)
	d.Send(t, `TEXT .figures .value | 3`)
	d.Send(t, `TEXT .reached | 300 of 1000 reached`)
	w.th.SetReached(t, fanout, 600)
	d.Send(t, `TEXT .reached | 600 of 1000 reached`) // live
	axeClean(t, d, "a topic")
	d.Send(t, `CLICK button.danger`)
	d.Send(t, `CLICK dialog button[value="yes"]`)
	d.Send(t, `TEXT #status | Fan-out canceled.`)
	d.Send(t, `TEXT p.muted | No fan-out running.`)
	var f struct{ State string }
	code, env := w.th.Do(t, http.MethodGet, "/api/v1/internal/fanouts/"+fanout, w.key, "")
	if testhub.Remarshal(t, env.Result, &f); code != 200 || f.State != "canceled" {
		t.Fatalf("the fan-out after its cancel: %d %+v", code, f)
	}
}

// dead: user 9's dead push, re-driven with every other one.
func (w *walk) dead() {
	t, d := w.t, w.d
	d.Send(t, `GOTO /console/dead`)
	d.Send(t, `TEXT td a | 9`)
	axeClean(t, d, "the dead letters")
	d.Send(t, `CLICK button.danger`)
	d.Send(t, `CLICK dialog button[value="yes"]`)
	d.Send(t, `TEXT p.muted | No dead delivery.`)
	w.th.WaitDelivery(t, w.second, 9, "push", "sent")
}

// overview: the dead count back to 0, this instance listed, both charts;
// a stream opened shows without a reload.
func (w *walk) overview() {
	t, d := w.t, w.d
	d.Send(t, `GOTO /console/`)
	d.Send(t, `TEXT td | `+w.th.Hub.InstanceID())
	d.Send(t, `TEXT a[href="/console/dead"] | 0`)
	d.Send(t, `COUNT svg.chart | 2`)
	s := w.th.OpenStream(t, 42, 7, "")
	defer s.Close()
	d.Send(t, `TEXT .figures li:first-child .value | 1`)
	axeClean(t, d, "the overview")
}

// axeClean runs axe on the page in light and dark.
func axeClean(t *testing.T, d *testbrowser.Driver, what string) {
	t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		d.Send(t, "SCHEME "+scheme)
		if v := d.Send(t, "AXE")["value"].([]any); len(v) > 0 {
			t.Fatalf("axe on %s (%s): %v", what, scheme, v)
		}
	}
}

// The console speaks Korean to a browser that asks for it first.
func TestConsole_SpeaksKorean(t *testing.T) {
	t.Parallel()
	th := testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) { c.ConsolePassword = consolePassword })
	req, _ := http.NewRequest(http.MethodGet, th.URL+"/console/", nil)
	req.Header.Set("Accept-Language", "ko-KR,ko;q=0.9,en;q=0.8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `<html lang="ko">`) || !strings.Contains(string(b), "콘솔 로그인") {
		t.Fatalf("the sign-in form for a Korean browser:\n%s", b)
	}
}
