package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// startBrowserDriver runs web/e2e/eventsource.mjs: a plain EventSource on
// one room in headless Chromium.
func startBrowserDriver(t *testing.T, url string, room int64, token string) *testbrowser.Driver {
	t.Helper()
	return testbrowser.Start(t, "eventsource.mjs", url, fmt.Sprint(room), token)
}

type browserEvents struct {
	Got   []struct{ ID, Data string }
	Opens int
	Error string
}

func waitEvents(t *testing.T, d *testbrowser.Driver, n int) browserEvents {
	t.Helper()
	d.Write("COUNT %d", n)
	var ev browserEvents
	if err := json.Unmarshal([]byte(d.Line(t, 30*time.Second)), &ev); err != nil || ev.Error != "" {
		t.Fatalf("browser: %v %s", err, ev.Error)
	}
	return ev
}

// TestBrowser_EventSourceResumesAfterDrop: a plain browser EventSource, with
// no client code, gets every event it missed while the server had dropped it,
// because every event (live or replayed) carries its id.
func TestBrowser_EventSourceResumesAfterDrop(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.Retry = 300 * time.Millisecond })
	d := startBrowserDriver(t, th.URL, 42, th.Token(t, 1))
	var want []string
	for i := 0; i < 3; i++ {
		want = append(want, th.Publish(t, 42, "comment.created", map[string]any{"n": i}).StreamID)
	}
	waitEvents(t, d, 3)
	th.DropConnections()                      // the server drops every connection
	testhub.HTTPClient.CloseIdleConnections() // ours too: do not publish on a dead one
	for i := 3; i < 8; i++ {
		want = append(want, th.Publish(t, 42, "comment.created", map[string]any{"n": i}).StreamID)
	}
	ev := waitEvents(t, d, len(want))
	if ev.Opens < 2 {
		t.Fatalf("EventSource opened %d times: it was never dropped", ev.Opens)
	}
	if len(ev.Got) != len(want) {
		t.Fatalf("browser got %d events, want %d: %+v", len(ev.Got), len(want), ev.Got)
	}
	for i, g := range ev.Got {
		if g.ID != want[i] {
			t.Fatalf("event %d: id %s, want %s (got %+v)", i, g.ID, want[i], ev.Got)
		}
	}
}

type pageBrowserEvents struct {
	Got []struct {
		Type   string
		RoomID int64
		K      string
	}
	Count int64
	Opens int
	Error string
}

// TestBrowser_PageStreamSurvivesACut: one PageStream in Chromium holds three
// rooms and the bell on one connection. Its connection is cut while events go
// to every room and to the user: the page ends with every event exactly once,
// in per-room order, and the badge right.
func TestBrowser_PageStreamSurvivesACut(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.Retry = 300 * time.Millisecond })
	rooms := []int64{181, 182, 183}
	d := testbrowser.Start(t, "pagestream.mjs", th.URL, "181,182,183", th.Token(t, 20))
	testhub.Eventually(t, testhub.Wait, "one connection for the whole page", func() bool {
		_, env := th.Get(t, "/health", "")
		return env.Result.(map[string]any)["activeConnections"] == 1.0
	})
	want := map[int64][]string{}
	var notes []string
	round := func(r int) {
		for _, room := range rooms {
			for i := 0; i < 3; i++ {
				k := fmt.Sprintf("%d-%d-%d", room, r, i)
				th.Publish(t, room, "comment.created", map[string]any{"k": k})
				want[room] = append(want[room], k)
			}
		}
		notes = append(notes, "184:"+th.Notify(t, 184, "comment.created", 20).StreamID)
	}
	round(0)
	total := func() int { return 9*len(notes) + len(notes) }
	d.Write("COUNT %d", total())
	if l := d.Line(t, 30*time.Second); strings.Contains(l, "error") {
		t.Fatalf("browser: %s", l)
	}
	th.DropConnections()                      // the page's one connection is cut
	testhub.HTTPClient.CloseIdleConnections() // ours too: do not publish on a dead one
	for r := 1; r <= 3; r++ {
		round(r)
	}
	d.Write("COUNT %d", total())
	var ev pageBrowserEvents
	if err := json.Unmarshal([]byte(d.Line(t, 30*time.Second)), &ev); err != nil || ev.Error != "" {
		t.Fatalf("browser: %v %s", err, ev.Error)
	}
	if ev.Opens < 2 {
		t.Fatalf("the page stream opened %d times: it was never cut", ev.Opens)
	}
	got := map[int64][]string{}
	var gotNotes []string
	for _, g := range ev.Got {
		if g.Type == "notification.created" {
			gotNotes = append(gotNotes, g.K)
		} else {
			got[g.RoomID] = append(got[g.RoomID], g.K)
		}
	}
	for _, room := range rooms {
		if strings.Join(got[room], " ") != strings.Join(want[room], " ") {
			t.Fatalf("room %d: got %v\nwant %v", room, got[room], want[room])
		}
	}
	if strings.Join(gotNotes, " ") != strings.Join(notes, " ") {
		t.Fatalf("notifications: got %v, want %v", gotNotes, notes)
	}
	if n := th.UnreadOf(t, 20); ev.Count != n || n != int64(len(notes)) {
		t.Fatalf("badge %d, unread %d, want %d", ev.Count, n, len(notes))
	}
}

// TestBrowser_DemoPage: the demo page opens its stream without a click, shows
// an event published through the API as a card and the bell's badge (the
// inbox element's) for a notification, under its strict CSP with no console
// error; screenshots at
// desktop and phone width go to ROOMHUB_ARTIFACTS (default: a temp folder).
func TestBrowser_DemoPage(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	dir := testhub.ArtifactsDir(t)
	resp, err := testhub.HTTPClient.Get(th.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q", csp)
	}
	for path, typ := range map[string]string{"/static/roomhub.js": "javascript", "/static/demo.css": "text/css", "/static/roomhub.d.ts": "text/plain"} {
		resp, err := testhub.HTTPClient.Get(th.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), typ) || resp.Header.Get("Cache-Control") == "" {
			t.Fatalf("%s: %d %q %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
		}
	}

	d := testbrowser.Start(t, "demo.mjs", th.URL+"/?user=7&rooms=42,43", dir)
	d.Send(t, "TEXT #online 7 in 43") // the stream is open: an event before it would be history, not live
	th.Publish(t, 43, "comment.created", map[string]any{"text": "hello from the API"})
	d.Send(t, "TEXT #cards hello from the API")
	th.Notify(t, 42, "like.toggled", 7)
	d.Send(t, `TEXT roomhub-inbox [part="badge"] | 1`)
	d.Send(t, "SHOT desktop 1200")
	d.Send(t, "SHOT phone 390")
	if errs := d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
	for _, name := range []string{"desktop", "phone"} {
		if fi, err := os.Stat(filepath.Join(dir, name+".png")); err != nil || fi.Size() < 1000 {
			t.Fatalf("screenshot %s: %v", name, err)
		}
	}
}

// TestBrowser_DemoInboxInTwoTabsAndMute: a notification raises the badge in
// two tabs of one user; marking it read in one clears both and the list shows
// it read; a type muted in the bell's preferences does not appear, the others
// do.
func TestBrowser_DemoInboxInTwoTabsAndMute(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	page := th.URL + "/?user=8&rooms=44"
	tab1 := testbrowser.Start(t, "demo.mjs", page, t.TempDir())
	tab2 := testbrowser.Start(t, "demo.mjs", page, t.TempDir())
	th.Notify(t, 44, "comment.created", 8)
	for _, tab := range []*testbrowser.Driver{tab1, tab2} {
		tab.Send(t, `TEXT roomhub-inbox [part="badge"] | 1`)
	}
	tab1.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	tab1.Send(t, `TEXT roomhub-inbox [part="item"] | Comment created`)
	tab1.Send(t, `CLICK roomhub-inbox [part="item"] [aria-label="Mark as read"]`)
	for _, tab := range []*testbrowser.Driver{tab1, tab2} {
		tab.Send(t, "WAIT "+inboxJS+`.querySelector('[part="badge"]').hidden`)
	}
	tab1.Send(t, "WAIT !"+inboxJS+".querySelector('li.item').classList.contains('unread')")

	tab1.Send(t, `CLICK roomhub-inbox .gear`)
	tab1.Send(t, `CLICK roomhub-inbox input[aria-label="Like toggled: In app"]`)
	tab1.Send(t, `CLICK roomhub-inbox .prefs button[type="submit"]`)
	testhub.Eventually(t, testhub.Wait, "like.toggled muted", func() bool {
		_, env := th.UserDo(t, http.MethodGet, "/api/v1/notifications/settings", 8, "")
		return strings.Contains(fmt.Sprint(env.Result), "like.toggled")
	})
	th.Publish(t, 44, "like.toggled", map[string]any{"text": "muted one"})
	th.Publish(t, 44, "comment.created", map[string]any{"text": "shown one"})
	for _, tab := range []*testbrowser.Driver{tab1, tab2} {
		tab.Send(t, "TEXT #cards shown one")
		if v := tab.Send(t, "EVAL document.getElementById('cards').textContent.includes('muted one')")["value"]; v != false {
			t.Fatal("a muted type appeared")
		}
	}
}

// inboxJS is the demo page's inbox element's shadow root, in page script.
const inboxJS = "document.querySelector('roomhub-inbox').shadowRoot"

// TestBrowser_DemoRenewsShortLivedTokens: with 2-second tokens the page's
// stream ends at each expiry; the SDK fetches a new token and resumes from
// its last id, and the page shows every event published meanwhile.
func TestBrowser_DemoRenewsShortLivedTokens(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.KeepAlive = time.Second })
	d := testbrowser.Start(t, "demo.mjs", th.URL+"/?user=9&rooms=46&ttlSecs=2", t.TempDir())
	d.Send(t, "TEXT #online 9 in 46") // the stream is open: an event before it would be history, not live
	const n = 30
	for i := 0; i < n; i++ { // about 6 s: the token expires three times
		th.Publish(t, 46, "comment.created", map[string]any{"text": fmt.Sprintf("event-%02d", i)})
		time.Sleep(200 * time.Millisecond)
	}
	d.Send(t, fmt.Sprintf("TEXT #cards event-%02d", n-1))
	got := d.Send(t, `EVAL [...document.querySelectorAll('#cards .card div:last-child')].map((e) => e.textContent).reverse().join(' ')`)["value"].(string)
	var want []string
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("event-%02d", i))
	}
	if got != strings.Join(want, " ") {
		t.Fatalf("cards %q\nwant  %q", got, strings.Join(want, " "))
	}
	// The stream was opened again after each expiry, each time with a new token.
	var opens int
	fmt.Sscan(testhub.MetricValue(t, th, `http_requests_total{method="GET",route="/api/v1/stream",status="200"}`), &opens)
	if opens < 3 {
		t.Fatalf("the page stream opened %d times in ~6 s of 2 s tokens: the tokens were not renewed", opens)
	}
}

// TestBrowser_DemoShowsTwoUsersPresence: two pages as two users in one room
// each list the other as online; when one page closes, the other shows the
// leave.
func TestBrowser_DemoShowsTwoUsersPresence(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	ann := testbrowser.Start(t, "demo.mjs", th.URL+"/?user=12&rooms=48", t.TempDir())
	bob := testbrowser.Start(t, "demo.mjs", th.URL+"/?user=13&rooms=48", t.TempDir())
	ann.Send(t, "TEXT #online 13 in 48")
	bob.Send(t, "TEXT #online 12 in 48")
	bob.Quit() // the browser closes: its stream's connection ends
	ann.Send(t, "GONE #online 13 in 48")
	ann.Send(t, "TEXT #online 12 in 48")
	if errs := ann.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}

// TestBrowser_DemoTabsAreTwoPeople: the newcomer's path. Two tabs of the demo
// page with no user chosen are two users: each sees both online; a publish
// from one tab's form that notifies everyone online shows as a card in both
// and raises the other tab's bell.
func TestBrowser_DemoTabsAreTwoPeople(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	tab1 := testbrowser.Start(t, "demo.mjs", th.URL+"/?rooms=50", t.TempDir())
	tab2 := testbrowser.Start(t, "demo.mjs", th.URL+"/?rooms=50", t.TempDir())
	for _, tab := range []*testbrowser.Driver{tab1, tab2} {
		tab.Send(t, "WAIT document.querySelectorAll('#online li').length === 2")
	}
	u1 := tab1.Send(t, "EVAL document.getElementById('user').value")["value"]
	u2 := tab2.Send(t, "EVAL document.getElementById('user').value")["value"]
	if u1 == u2 {
		t.Fatalf("both tabs are user %v", u1)
	}
	tab1.Send(t, "EVAL document.getElementById('pub-text').value = 'from tab one'")
	tab1.Send(t, "CLICK #pub-notify")
	tab1.Send(t, "CLICK #publish button")
	for _, tab := range []*testbrowser.Driver{tab1, tab2} {
		tab.Send(t, "TEXT #cards from tab one")
		tab.Send(t, `TEXT roomhub-inbox [part="badge"] | 1`)
	}
	for _, tab := range []*testbrowser.Driver{tab1, tab2} {
		if errs := tab.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
			t.Fatalf("console errors: %v", errs)
		}
	}
}

// TestBrowser_DemoWholeInbox: two tabs of one user on the demo page, whose
// bell is <roomhub-inbox>; a mix of seen (opening the bell), read, archive,
// snooze, delete and bulk from both tabs and from the API. Both badges equal
// GET /notifications/counts, and the first tab's list equals the API's in
// each of its tabs (All, Unread, Archived); a group is one item, "and 3
// others". Screenshots at desktop and phone width; no sideways scroll at 390
// px.
func TestBrowser_DemoWholeInbox(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	dir := testhub.ArtifactsDir(t)
	const user = 11
	page := th.URL + "/?user=11&rooms=50"
	tab1 := testbrowser.Start(t, "demo.mjs", page, dir)
	tab2 := testbrowser.Start(t, "demo.mjs", page, t.TempDir())
	var ids []string
	for i := range 5 {
		ids = append(ids, th.NotifyWith(t, 50, fmt.Sprintf(`"severity":"%s"`, []string{"normal", "high", "low", "normal", "critical"}[i]), user))
	}
	for _, p := range []int{2, 3, 4, 6} { // a group: "User 6, User 4 and 2 others"
		th.NotifyExtra(t, 50, "like.toggled", fmt.Sprintf(`"groupKey":"likes","publisherId":%d`, p), user)
	}
	// The tabs' clicks answer before their requests do: compare the badges
	// with the counts until both settle (or fail after 15 s).
	badgesMatch := func() {
		t.Helper()
		testhub.Eventually(t, 15*time.Second, "both badges equal GET /notifications/counts", func() bool {
			want := fmt.Sprint(th.CountsOf(t, user).Unread)
			ok := true
			for _, tab := range []*testbrowser.Driver{tab1, tab2} {
				ok = ok && tab.Send(t, "EVAL "+inboxJS+`.querySelector('[part="badge"]').textContent`)["value"] == want
			}
			return ok
		})
	}
	badgesMatch()

	tab1.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	tab1.Send(t, `TEXT roomhub-inbox [part="item"] .meta | User 6, User 4 and 2 others`)
	testhub.Eventually(t, testhub.Wait, "opening the bell marks everything seen", func() bool { return th.CountsOf(t, user).Unseen == 0 })

	// Actions from the first tab, the second, and the API.
	tab1.Send(t, fmt.Sprintf(`CLICK roomhub-inbox [data-id="%s"] [aria-label="Archive"]`, ids[0]))
	tab2.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	tab2.Send(t, fmt.Sprintf(`CLICK roomhub-inbox [data-id="%s"] [aria-label="Mark as read"]`, ids[1]))
	tab2.Send(t, fmt.Sprintf(`CLICK roomhub-inbox [data-id="%s"] [aria-label="Delete"]`, ids[2]))
	th.Act(t, user, ids[3], "snooze", fmt.Sprintf(`{"until":%q}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	if code, env := th.UserDo(t, http.MethodPost, "/api/v1/notifications/bulk", user, `{"action":"read","filter":{"severity":["critical"]}}`); code != 200 {
		t.Fatalf("bulk: %d %+v", code, env)
	}
	badgesMatch()

	for _, tab := range []struct{ key, state string }{{"all", "visible"}, {"unread", "unread"}, {"archived", "archived"}} {
		tab1.Send(t, fmt.Sprintf(`CLICK roomhub-inbox [role="tab"][data-tab="%s"]`, tab.key))
		var want, got string
		testhub.Eventually(t, 15*time.Second, "the page's "+tab.state+" list equals the API's", func() bool {
			var ids []string
			for _, n := range th.ListOf(t, user, "state="+tab.state) {
				ids = append(ids, n.NotificationID)
			}
			b, _ := json.Marshal(ids)
			want = string(b)
			got = fmt.Sprint(tab1.Send(t, "EVAL JSON.stringify([..."+inboxJS+".querySelectorAll('li.item')].map((li) => li.dataset.id))")["value"])
			if want == "null" {
				want = "[]"
			}
			return got == want
		})
	}
	tab1.Send(t, `CLICK roomhub-inbox [role="tab"][data-tab="all"]`)
	tab1.Send(t, "SHOT demo-inbox-desktop 1200")
	tab1.Send(t, "SHOT demo-inbox-phone 390")
	if v := tab1.Send(t, "EVAL document.documentElement.scrollWidth <= 390")["value"]; v != true {
		t.Fatalf("the page scrolls sideways at 390 px")
	}
	for _, tab := range []*testbrowser.Driver{tab1, tab2} {
		if errs := tab.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
			t.Fatalf("console errors: %v", errs)
		}
	}
}
