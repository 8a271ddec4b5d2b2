package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"roomhub/api"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// The <roomhub-inbox> element on the plain HTML example page, in real
// Chromium: the badge follows publishes, a read in another tab and a mark
// all exactly (99+ only as display, the exact count in its name); opening
// the bell lists the items with their text and marks them seen; an item's
// action reads it; Escape closes and gives the focus back to the bell; a
// snooze preset snoozes; the preferences view saves a muted type, a type
// muted on a channel and quiet hours. (One browser for all: each costs
// seconds.)
func TestBrowser_InboxElementFollowsTheInboxExactly(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { // a channel, for the preferences
		c.Delivery.Channels, c.Delivery.SinkURL = []string{"email"}, "http://127.0.0.1:1/"
	})
	for _, path := range []string{"/static/roomhub-inbox.js", "/static/inbox.html", "/static/inbox-example.js"} {
		resp, err := testhub.HTTPClient.Get(th.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	const user = 7
	d := testbrowser.Start(t, "inbox.mjs", th.URL+"/static/inbox.html?user=7", testhub.ArtifactsDir(t))
	badge := `roomhub-inbox [part="badge"]`
	d.Send(t, "HIDDEN "+badge)
	var ids []string
	for i := range 3 {
		body := fmt.Sprintf(`{"roomId":42,"eventType":"comment.created","data":{"title":"Comment %d","text":"Hello %d"},"publisherId":5,"recipientIds":[%d]}`, i, i, user)
		code, env := th.PublishRaw(t, body)
		if code != 200 {
			t.Fatalf("publish: %d %+v", code, env)
		}
		ids = append(ids, "42:"+env.Result.(map[string]any)["streamId"].(string))
	}
	d.Send(t, "TEXT "+badge+" | 3")

	e := elementRun{th: th, d: d, user: user, badge: badge}
	e.openReadAndClose(t, ids)
	e.past99(t)
	e.snoozeAndPreferences(t)
	e.groupAndBurst(t)
}

// elementRun is what the steps of the element's test share: the hub, the
// page's driver, the user and the badge's selector.
type elementRun struct {
	th    *testhub.Hub
	d     *testbrowser.Driver
	user  int64
	badge string
}

// openReadAndClose: opening the bell lists the items with their text and
// marks them seen; a read in another tab, an item's action and mark all
// move the badge; Escape closes and gives the focus back to the bell.
func (e elementRun) openReadAndClose(t *testing.T, ids []string) {
	// Open: the items with their text, newest first; the bell opened is seen.
	e.d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	e.d.Send(t, `COUNT roomhub-inbox [part="item"] | 3`)
	e.d.Send(t, `TEXT roomhub-inbox [part="item"] .item-title | Comment 2`)
	e.d.Send(t, `TEXT roomhub-inbox [part="item"] .item-text | Hello 0`)
	testhub.Eventually(t, 15*time.Second, "the opened bell to mark the items seen", func() bool { return e.th.CountsOf(t, e.user).Unseen == 0 })

	// Read in another tab (the API): the badge follows.
	e.th.MarkRead(t, e.user, ids[0])
	e.d.Send(t, "TEXT "+e.badge+" | 2")
	// An item's own action.
	e.d.Send(t, fmt.Sprintf(`CLICK roomhub-inbox [data-id="%s"] [aria-label="Mark as read"]`, ids[2]))
	e.d.Send(t, "TEXT "+e.badge+" | 1")
	if c := e.th.CountsOf(t, e.user).Unread; c != 1 {
		t.Fatalf("unread %d after the item's read, want 1", c)
	}
	// Mark all read.
	e.d.Send(t, `CLICK roomhub-inbox .all-read`)
	e.d.Send(t, "HIDDEN "+e.badge)

	// Escape closes the panel and the focus goes back to the bell.
	e.d.Send(t, `CLICK roomhub-inbox [role="tab"][data-tab="unread"]`)
	e.d.Send(t, "KEY Escape")
	e.d.Send(t, `HIDDEN roomhub-inbox [part="panel"]`)
	if f := e.d.Send(t, "FOCUS")["value"]; f != "bell" {
		t.Fatalf("after Escape the focus is on %v, want the bell", f)
	}
}

// past99: the badge says 99+, the bell's name the exact count; the open
// panel fits a 360 px phone and a right-to-left page.
func (e elementRun) past99(t *testing.T) {
	// Past 99: the display says 99+, the bell's name the exact count.
	for b := range 3 { // batches of 50: one room's events go one at a time, each well within the client's 30 s on a loaded machine
		var events []string
		for i := range 50 {
			events = append(events, fmt.Sprintf(`{"roomId":43,"eventType":"like.toggled","data":{"n":%d},"recipientIds":[%d]}`, 50*b+i, e.user))
		}
		if code, res := e.th.Batch(t, events...); code != 200 || len(res) != 50 {
			t.Fatalf("batch: %d", code)
		}
	}
	e.d.Send(t, "TEXT "+e.badge+" | 99+")
	// The badge says 99+ from the 100th on; the name follows to 150.
	e.d.Send(t, `SHOWN roomhub-inbox [part="bell"][aria-label="Notifications, 150 unread"]`)
	e.d.Send(t, "TEXT "+e.badge+" | 99+")
	e.d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	// The first rows of 150 (the list says how many it has in all).
	e.d.Send(t, `COUNT roomhub-inbox [part="item"][aria-posinset="1"][aria-setsize="150"] | 1`)
	e.d.Send(t, "SHOT inbox-desktop 1280")
	e.d.Send(t, "SHOT inbox-phone 390")
	// The open panel fits a 360 px phone, and a right-to-left page (the
	// bell then on the left: the panel grows rightward) at 1280 px.
	fits := func(width int) {
		t.Helper()
		js := fmt.Sprintf(`EVAL (() => { const r = document.querySelector('roomhub-inbox').shadowRoot.querySelector('[part="panel"]').getBoundingClientRect();
  return r.width > 200 && r.left >= 0 && r.right <= %[1]d && document.documentElement.scrollWidth <= %[1]d; })()`, width)
		if v := e.d.Send(t, strings.ReplaceAll(js, "\n", " "))["value"]; v != true {
			t.Fatalf("the open panel does not fit %d px (dir %v)", width, e.d.Send(t, "EVAL document.documentElement.dir")["value"])
		}
	}
	e.d.Send(t, "SIZE 360")
	fits(360)
	e.d.Send(t, "SIZE 1280")
	e.d.Send(t, "EVAL document.documentElement.dir = 'rtl'")
	e.d.Send(t, `CLICK roomhub-inbox [part="bell"]`) // closes
	e.d.Send(t, `CLICK roomhub-inbox [part="bell"]`) // opens, placed for this page
	fits(1280)
	e.d.Send(t, "EVAL document.documentElement.dir = ''")
}

// snoozeAndPreferences: a snooze preset snoozes; the preferences view saves
// a muted type, a type muted on a channel and quiet hours.
func (e elementRun) snoozeAndPreferences(t *testing.T) {
	// Snooze from a preset: the newest item leaves the list.
	e.d.Send(t, `CLICK roomhub-inbox [role="tab"][data-tab="all"]`)
	e.d.Send(t, `CLICK roomhub-inbox [part="item"] [aria-label="Snooze"]`)
	e.d.Send(t, `CLICK roomhub-inbox .snooze button >> text=Tomorrow morning`)
	testhub.Eventually(t, 15*time.Second, "the snoozed item", func() bool { return e.th.CountsOf(t, e.user).Snoozed == 1 })

	// The preferences: a type muted in the app, another on email, quiet hours.
	e.d.Send(t, `CLICK roomhub-inbox .gear`)
	e.d.Send(t, `CLICK roomhub-inbox input[aria-label="Comment created: In app"]`)
	e.d.Send(t, `CLICK roomhub-inbox input[aria-label="Like toggled: Email"]`)
	e.d.Send(t, `CLICK roomhub-inbox input[name="quiet"]`)
	e.d.Send(t, `CLICK roomhub-inbox .prefs button[type="submit"]`)
	e.d.Send(t, `SHOWN roomhub-inbox .scroll`)
	code, env := e.th.UserDo(t, http.MethodGet, "/api/v1/notifications/settings", e.user, "")
	var st struct {
		MutedEventTypes []string
		Channels        map[string]struct {
			Enabled         bool
			MutedEventTypes []string
		}
		QuietHours *struct{ Start, End, TimeZone string }
	}
	testhub.Remarshal(t, env.Result, &st)
	if code != 200 || fmt.Sprint(st.MutedEventTypes) != "[comment.created]" || fmt.Sprint(st.Channels["email"].MutedEventTypes) != "[like.toggled]" ||
		!st.Channels["email"].Enabled || st.QuietHours == nil || st.QuietHours.Start != "22:00" || st.QuietHours.TimeZone == "" {
		t.Fatalf("settings after saving: %d %+v (quiet %+v)", code, st, st.QuietHours)
	}
}

// groupAndBurst: a group is one line, expandable; a burst of 500 with the
// list open drops no count.
func (e elementRun) groupAndBurst(t *testing.T) {
	// A group: one line, expandable to how many and from whom.
	for _, pub := range []int{6, 5, 6} {
		body := fmt.Sprintf(`{"roomId":44,"eventType":"like.toggled","data":{},"publisherId":%d,"recipientIds":[%d],"groupKey":"likes"}`, pub, e.user)
		if code, env := e.th.PublishRaw(t, body); code != 200 {
			t.Fatalf("publish: %d %+v", code, env)
		}
	}
	e.d.Send(t, `TEXT roomhub-inbox [part="item"] .group | Show all 3`)
	e.d.Send(t, `CLICK roomhub-inbox [part="item"] .group`)
	e.d.Send(t, `TEXT roomhub-inbox [part="item"] .meta | 3 events from User 6 and User 5`)

	// A burst of 500 with the list open: no count dropped (the element
	// paints once a frame and draws the list once the burst has passed).
	before := e.th.CountsOf(t, e.user).Unread
	e.d.Send(t, "EVAL window.__longtasks.length = 0; window.__loaf.length = 0")
	var burst []string
	for i := range 500 {
		burst = append(burst, fmt.Sprintf(`{"roomId":45,"eventType":"like.toggled","data":{"n":%d},"recipientIds":[%d]}`, i, e.user))
	}
	if code, res := e.th.Batch(t, burst...); code != 200 || len(res) != 500 {
		t.Fatalf("batch: %d", code)
	}
	e.d.Send(t, fmt.Sprintf(`SHOWN roomhub-inbox [part="bell"][aria-label="Notifications, %d unread"]`, before+500))
	e.d.Send(t, `TEXT roomhub-inbox [part="item"] .item-title | Like toggled`)
	// Measured, not asserted (a busy machine stretches any task): logged,
	// and written down in web/README.md.
	t.Logf("long tasks during the burst (ms): %v; the longest script in them (ms): %v", e.d.Send(t, "EVAL window.__longtasks")["value"],
		e.d.Send(t, "EVAL Math.max(0, ...window.__loaf.flatMap((f) => f.scripts.map((s) => Math.round(s.duration))))")["value"])
	if errs := e.d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}

// The "done when": web/README.md's two lines, as printed (the hub's
// URL for hub.example), in a blank page served from another origin, which
// ALLOWED_ORIGINS lists, give a working bell and feed; the token comes from
// the app's own route.
func TestBrowser_InboxElementInAPageOfAnotherOrigin(t *testing.T) {
	t.Parallel()
	readmeElement := testhub.SnippetAfter(t, "web/README.md", "## The bell and feed in two lines", "html")
	if !strings.Contains(readmeElement, "<roomhub-inbox") || !strings.Contains(readmeElement, "/my/token") {
		t.Fatalf("web/README.md's element example is not the one this test knows:\n%s", readmeElement)
	}
	// The app's server is made first, for its origin, and started once the
	// hub it names exists.
	var th *testhub.Hub
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/my/token": // the app's backend mints the user's token
			_, _ = io.WriteString(w, th.Token(t, 11))
		default: // web/README.md's two lines, as printed, for this hub
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>app</title><link rel="icon" href="data:,"></head>
<body><main><h1>App</h1>%s</main></body></html>`, strings.ReplaceAll(readmeElement, "https://hub.example", th.URL))
		}
	}))
	origin := "http://" + app.Listener.Addr().String()
	th = testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) { c.AllowedOrigins = []string{origin} })
	app.Start()
	defer app.Close()
	d := testbrowser.Start(t, "inbox.mjs", app.URL+"/", testhub.ArtifactsDir(t))
	th.Notify(t, 42, "comment.created", 11)
	d.Send(t, `TEXT roomhub-inbox [part="badge"] | 1`)
	d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	d.Send(t, `COUNT roomhub-inbox [part="item"] | 1`)
	d.Send(t, `CLICK roomhub-inbox [part="item"] [aria-label="Mark as read"]`)
	d.Send(t, `HIDDEN roomhub-inbox [part="badge"]`)
	if errs := d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}

// 5,000 items in the list: scrolled to the end, the element holds a few
// dozen rows, not 5,000, and the last is the oldest item; halfway and back
// at the top the rows are those of the view. While the reader is down the
// list, a read of an item far down reaches its row, and a new item waits
// behind the "1 new" pill without moving the list.
func TestBrowser_InboxElementListsFiveThousandItemsWithFewRows(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.Inbox.MaxEntries = 6000 })
	const user, n = 12, 5000
	ids := th.FillInbox(t, user, n) // newest first
	d := testbrowser.Start(t, "inbox.mjs", th.URL+"/static/inbox.html?user=12", testhub.ArtifactsDir(t))
	d.Send(t, `TEXT roomhub-inbox [part="badge"] | 99+`)
	d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	d.Send(t, `COUNT roomhub-inbox [part="item"][aria-posinset="1"] | 1`)

	type view struct {
		Rows, Nodes, First, Last int
		FirstID, LastID, Pill    string
		Top                      float64
		Loading, Failed          bool
		Next                     string
		Gen, Items               int
		Errors                   []any
	}
	// scroll moves the list (to: a fraction of its height, or -1 for the
	// end), waits for the page being loaded and two frames, and says what
	// the page holds.
	scroll := func(to float64) view {
		t.Helper()
		v := d.Send(t, strings.ReplaceAll(fmt.Sprintf(`EVAL (async () => {
  const el = document.querySelector('roomhub-inbox'), sc = el.shadowRoot.querySelector('.scroll');
  sc.scrollTop = %[1]v < 0 ? sc.scrollHeight : sc.scrollHeight * %[1]v;
  for (let i = 0; i < 200 && el.loading; i++) await new Promise((r) => setTimeout(r, 25));
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const rows = [...el.shadowRoot.querySelectorAll('li.item')], at = (li) => Number(li?.getAttribute('aria-posinset') || 0);
  return { rows: rows.length, nodes: el.shadowRoot.querySelectorAll('*').length, first: at(rows[0]), last: at(rows.at(-1)),
    firstID: rows[0]?.dataset.id || '', lastID: rows.at(-1)?.dataset.id || '', pill: el.shadowRoot.querySelector('.pill').hidden ? '' : el.shadowRoot.querySelector('.pill').textContent,
    top: sc.scrollTop, loading: el.loading, failed: el.failed, next: String(el.next), gen: el.gen, items: el.items.length, errors: window.__hubErrors };
})()`, to), "\n", " "))["value"]
		var out view
		testhub.Remarshal(t, v, &out)
		return out
	}
	var end view
	for i := 0; ; i++ { // each scroll to the end loads a page of 50
		if end = scroll(-1); end.Last == n {
			break
		}
		if i > 2*n/50 {
			t.Fatalf("after %d scrolls to the end the last row is item %d of %d: %+v", i, end.Last, n, end)
		}
	}
	const maxRows, maxNodes = 60, 2000
	t.Logf("at the end: %+v", end)
	if end.Rows > maxRows || end.Nodes > maxNodes || end.LastID != ids[n-1] {
		t.Fatalf("at the end of %d items: %+v, want at most %d rows and %d nodes, the last %s", n, end, maxRows, maxNodes, ids[n-1])
	}
	// A read far down reaches its row (the list is patched from the event).
	th.MarkRead(t, user, ids[n-1])
	d.Send(t, fmt.Sprintf(`SHOWN roomhub-inbox li.item[data-id="%s"]:not(.unread)`, ids[n-1]))
	// A new item while the reader is down there: the pill, the list stays.
	th.Notify(t, 901, "comment.created", user)
	d.Send(t, `TEXT roomhub-inbox .pill | 1 new`)
	if v := scroll(-1); v.LastID != ids[n-1] || v.Last != n {
		t.Fatalf("the list moved under the reader: %+v", v)
	}

	mid := scroll(0.5)
	if mid.Rows > maxRows || mid.First < n/2-maxRows || mid.Last > n/2+maxRows || mid.FirstID != ids[mid.First-1] {
		t.Fatalf("halfway: %+v, want rows around item %d", mid, n/2)
	}
	scroll(0) // at the top the pill's new item is listed first
	d.Send(t, fmt.Sprintf(`SHOWN roomhub-inbox li.item[aria-posinset="2"][data-id="%s"]`, ids[0]))
	if top := scroll(0); top.Rows > maxRows || top.First != 1 || top.Pill != "" {
		t.Fatalf("at the top: %+v", top)
	}
	if errs := d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}

// Cookie auth: the app sets the hub's access_token cookie (HttpOnly: the
// page's script never sees it, and the page has no other credential) and
// the element, auth="cookie" with the user's id, needs no tokenProvider: its
// stream, counts, list, seen on opening and a read all go with the cookie,
// from another origin that ALLOWED_ORIGINS lists.
func TestBrowser_InboxElementWithCookieAuth(t *testing.T) {
	t.Parallel()
	var th *testhub.Hub
	const user = 13
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" { // signed in: the app's backend sets the cookie (cookies name a host, not a port)
			http.SetCookie(w, &http.Cookie{Name: "access_token", Value: th.Token(t, user), Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>app</title><link rel="icon" href="data:,">
<script type="module" src="%[1]s/static/roomhub-inbox.js"></script></head>
<body><main><h1>App</h1><roomhub-inbox auth="cookie" user-id="%[2]d" base-url="%[1]s"></roomhub-inbox></main></body></html>`, th.URL, user)
	}))
	origin := "http://" + app.Listener.Addr().String()
	th = testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) { c.AllowedOrigins = []string{origin} })
	app.Start()
	defer app.Close()
	d := testbrowser.Start(t, "inbox.mjs", app.URL+"/", testhub.ArtifactsDir(t))
	th.Notify(t, 42, "comment.created", user)
	d.Send(t, `TEXT roomhub-inbox [part="badge"] | 1`)
	d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	d.Send(t, `COUNT roomhub-inbox [part="item"] | 1`)
	testhub.Eventually(t, 15*time.Second, "the opened bell to mark the item seen", func() bool { return th.CountsOf(t, user).Unseen == 0 })
	// The element hears of it too, and draws it, before the click: a click
	// while the list is drawn again may land on a row that is gone.
	if v := d.Send(t, `EVAL (async () => { const el = document.querySelector('roomhub-inbox'); for (let i = 0; i < 300 && el.counts?.unseen !== 0; i++) await new Promise((r) => setTimeout(r, 50)); await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))); return el.counts?.unseen; })()`)["value"]; v != float64(0) {
		t.Fatalf("the element's unseen count is %v after the bell was opened, want 0", v)
	}
	d.Send(t, `CLICK roomhub-inbox [part="item"] [aria-label="Mark as read"]`)
	testhub.Eventually(t, 15*time.Second, "the read by cookie to reach the hub", func() bool { return th.CountsOf(t, user).Unread == 0 })
	d.Send(t, `HIDDEN roomhub-inbox [part="badge"]`)
	if c := th.CountsOf(t, user); c.Unread != 0 {
		t.Fatalf("unread %d after the read by cookie", c.Unread)
	}
	if errs := d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}

// A page on an origin the hub does not allow, with the element served from
// the page's own origin (as web/README says to): the browser hides the
// CORS refusal from the page, so the element says it itself, a
// roomhub-error naming ALLOWED_ORIGINS (issue 43, 5).
func TestBrowser_InboxElementRefusedForItsOriginSaysSo(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil) // ALLOWED_ORIGINS: the hub's own
	hubURL, _ := url.Parse(th.URL)
	files := httputil.NewSingleHostReverseProxy(hubURL)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/static/"): // the element from the app's own origin
			files.ServeHTTP(w, r)
		case r.URL.Path == "/token":
			_, _ = io.WriteString(w, th.Token(t, 11))
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>app</title><link rel="icon" href="data:,">
<script type="module">window.__errs = []; document.addEventListener('roomhub-error', (e) => window.__errs.push(e.detail));</script>
<script type="module" src="/static/roomhub-inbox.js"></script></head>
<body><main><h1>App</h1><roomhub-inbox id="inbox" base-url="%s"></roomhub-inbox></main>
<script type="module">document.getElementById('inbox').tokenProvider = async () => (await fetch('/token')).text();</script></body></html>`, th.URL)
		}
	}))
	defer app.Close()
	d := testbrowser.Start(t, "inbox.mjs", app.URL+"/#no-counts", testhub.ArtifactsDir(t))
	testhub.Eventually(t, 15*time.Second, "a roomhub-error naming ALLOWED_ORIGINS and the page's origin", func() bool {
		return d.Send(t, "EVAL window.__errs.some((e) => e.code === 'UNREACHABLE' && e.message.includes('ALLOWED_ORIGINS') && e.message.includes(location.origin))")["value"] == true
	})
}
