package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
	"slices"
	"strings"
	"testing"
	"time"
)

// web/README.md's SDK snippet runs as printed, in Chromium, on a page of
// an app that serves the hub at its own origin (the snippet imports
// /static/roomhub.js and fetches /my/token): the page gives it what it
// takes from the app (statusEl, show, badge…), and the snippet reaches its
// end (the item it listed read, the muted type saved), then shows a room's
// event and counts and lists a new notification.
func TestBrowser_WebReadmeSDKSnippetRunsAsPrinted(t *testing.T) {
	t.Parallel()
	snippet := testhub.SnippetAfter(t, "web/README.md", "# roomhub in the browser", "html")
	if !strings.Contains(snippet, "new RoomHub(") || !strings.Contains(snippet, "'/my/token'") {
		t.Fatalf("web/README.md's first html snippet is not the SDK one this test knows:\n%s", snippet)
	}
	const user = 21
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	hubURL, _ := url.Parse(th.URL)
	toHub := httputil.NewSingleHostReverseProxy(hubURL)
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/my/token":
			_, _ = io.WriteString(w, th.Token(t, user))
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>app</title><link rel="icon" href="data:,"></head>
<body><p id="status"></p><span id="badge"></span>
<script>
window.__seen = [];
const statusEl = document.getElementById('status'), badge = document.getElementById('badge');
const note = (...a) => window.__seen.push(a.map((x) => typeof x === 'string' ? x : JSON.stringify(x)).join(' '));
const showOnline = (users) => note('online', users.length), show = (type, data) => note('show', type, data);
const banner = (m) => note('banner', m), debug = (type) => note('debug', type), prependToList = (n) => note('list', n.eventType);
</script>
%s</body></html>`, snippet)
		default: // the hub, at the app's origin
			toHub.ServeHTTP(w, r)
		}
	}))
	app.Start()
	t.Cleanup(app.Close) // after the browser quits: its streams hold the app's connections
	first := "43:" + th.Notify(t, 43, "comment.created", user).StreamID
	d := testbrowser.Start(t, "inbox.mjs", app.URL+"/#no-element", testhub.ArtifactsDir(t))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the page's errors: %v; what it saw: %v; badge %q", d.Send(t, "ERRORS")["errors"],
				d.Send(t, "EVAL window.__seen")["value"], d.Send(t, "EVAL badge.textContent")["value"])
		}
	})
	testhub.Eventually(t, 15*time.Second, "the snippet run to its end (like.toggled muted)", func() bool {
		return slices.Contains(th.SettingsOf(t, user).MutedEventTypes, "like.toggled")
	})
	if c := th.CountsOf(t, user); c.Unread != 0 {
		t.Fatalf("%s unread (%+v) after the snippet's markRead and markAllRead", first, c)
	}
	testhub.Eventually(t, 15*time.Second, "the room's stream open", func() bool {
		return d.Send(t, "EVAL document.getElementById('status').textContent")["value"] == "open"
	})
	th.Publish(t, 42, "comment.created", map[string]any{"text": "hi"})
	th.Notify(t, 43, "comment.created", user)
	seen := func(want string) bool {
		return d.Send(t, fmt.Sprintf("EVAL window.__seen.some((s) => s.startsWith(%q))", want))["value"] == true
	}
	testhub.Eventually(t, 15*time.Second, "the room's event shown, the notification listed and counted", func() bool {
		return seen(`show comment {"text":"hi"`) && seen("debug comment.created") && seen("list comment.created") &&
			d.Send(t, "EVAL document.getElementById('badge').textContent")["value"] == "1"
	})
	if errs := d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}
