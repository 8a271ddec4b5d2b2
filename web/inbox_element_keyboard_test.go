package web_test

import (
	"fmt"
	"net/http"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
	"strings"
	"testing"
	"time"
)

// The element with the keyboard alone, and axe-core (WCAG 2 A and AA, and
// best practices) in light and dark, the panel closed and open.
func TestBrowser_InboxElementIsAccessibleAndWorksByKeyboard(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	const user = 8
	for i, extra := range []string{`"severity":"high","tags":["billing","urgent"]`, `"severity":"critical"`, ""} {
		body := fmt.Sprintf(`{"roomId":42,"eventType":"comment.created","data":{"title":"Comment %d","text":"Hello"},"publisherId":5,"recipientIds":[%d]`, i, user)
		if extra != "" {
			body += "," + extra
		}
		if code, env := th.PublishRaw(t, body+"}"); code != 200 {
			t.Fatalf("publish: %d %+v", code, env)
		}
	}
	d := testbrowser.Start(t, "inbox.mjs", th.URL+"/static/inbox.html?user=8", testhub.ArtifactsDir(t))
	badge := `roomhub-inbox [part="badge"]`
	d.Send(t, "TEXT "+badge+" | 3")
	k := keyboardRun{th: th, d: d, user: user, badge: badge}
	k.readByKeyboard(t)
	k.everyAction(t)
	k.darkAndClosed(t)
}

// keyboardRun is what the steps of the keyboard test share: the hub, the
// page's driver, the user and the badge's selector.
type keyboardRun struct {
	th    *testhub.Hub
	d     *testbrowser.Driver
	user  int64
	badge string
}

// axe runs axe-core on the page, which must find nothing.
func (k keyboardRun) axe(t *testing.T, when string) {
	t.Helper()
	if v := k.d.Send(t, "AXE")["value"].([]any); len(v) > 0 {
		t.Fatalf("axe-core, %s: %v", when, v)
	}
}

// focus waits for the focus to be on what is named want.
func (k keyboardRun) focus(t *testing.T, want string) { t.Helper(); k.d.Send(t, "FOCUSED | "+want) }

// items waits for the tab's list to hold n items.
func (k keyboardRun) items(t *testing.T, n int) {
	t.Helper()
	k.d.Send(t, fmt.Sprintf(`COUNT roomhub-inbox [part="item"] | %d`, n))
}

// keys presses each key and waits for the focus to be where the next one
// says.
func (k keyboardRun) keys(t *testing.T, steps ...string) {
	t.Helper()
	for i := 0; i < len(steps); i += 2 {
		k.d.Send(t, "KEY "+steps[i])
		k.focus(t, steps[i+1])
	}
}

// readByKeyboard: the bell, its tabs and an item's read, by keyboard, with
// axe-core in light, the panel closed and open.
func (k keyboardRun) readByKeyboard(t *testing.T) {
	k.axe(t, "light, closed")
	k.d.Send(t, "KEY Tab")
	k.focus(t, "bell")
	k.d.Send(t, "KEY Enter") // opens; the focus goes to the selected tab
	k.d.Send(t, `COUNT roomhub-inbox [part="item"] | 3`)
	k.focus(t, "All3")
	k.axe(t, "light, open")
	k.d.Send(t, "KEY ArrowRight") // the Unread tab
	k.focus(t, "Unread3")
	k.items(t, 3)
	k.d.Send(t, "KEY Tab") // the newest item
	k.focus(t, "Comment 2Hello")
	k.d.Send(t, "KEY Enter") // opens it: read, no url to follow
	k.d.Send(t, "TEXT "+k.badge+" | 2")
	// The read item left the Unread list, which was drawn again: the focus
	// is on the item that took its place, and goes on from there.
	k.focus(t, "Comment 1Hello")
	k.d.Send(t, "KEY Tab")
	k.focus(t, "Mark as read")
	k.d.Send(t, "KEY Enter")
	k.d.Send(t, "TEXT "+k.badge+" | 1")
	k.focus(t, "Comment 0Hello") // the last unread item took its place
}

// everyAction: archive, back to the inbox, snooze, delete, the
// preferences and mark all read, by keyboard alone.
func (k keyboardRun) everyAction(t *testing.T) {
	// Every other action, by keyboard alone. keys presses each key and
	// waits for the focus to be where the next one says.
	// Archive: the Unread list is left empty, the focus on its tab.
	k.keys(t, "Tab", "Mark as read", "Tab", "Archive", "Enter", "Unread0")
	k.d.Send(t, "HIDDEN "+k.badge)
	// Back to the inbox, from the Archived tab.
	k.keys(t, "ArrowRight", "Archived1")
	k.items(t, 1)
	k.keys(t, "Tab", "Comment 0Hello", "Tab", "Mark as read", "Tab", "Move to inbox", "Enter", "Archived0")
	k.d.Send(t, "TEXT "+k.badge+" | 1")
	// Snooze, from a preset the choices open on.
	k.keys(t, "ArrowLeft", "Unread1")
	k.items(t, 1)
	k.keys(t, "Tab", "Comment 0Hello", "Tab", "Mark as read", "Tab", "Archive", "Tab", "Snooze", "Enter", "In an hour", "Enter", "Unread0")
	k.d.Send(t, "HIDDEN "+k.badge)
	// Delete, in the All tab: the focus goes on to the next item.
	k.keys(t, "ArrowLeft", "All2")
	k.items(t, 2)
	k.keys(t, "Tab", "Comment 2Hello", "Tab", "Archive", "Tab", "Snooze", "Tab", "Delete", "Enter", "Comment 1Hello")
	// The preferences: a type muted in the app, saved; the focus comes back to the gear.
	k.keys(t, "Shift+Tab", "All1", "Shift+Tab", "Preferences", "Enter", "Comment created: In app", "Space", "Comment created: In app", "Tab", "Save", "Enter", "Preferences")
	testhub.Eventually(t, 15*time.Second, "comment.created muted from the keyboard", func() bool {
		_, env := k.th.UserDo(t, http.MethodGet, "/api/v1/notifications/settings", k.user, "")
		return strings.Contains(fmt.Sprint(env.Result), "comment.created")
	})
	// Mark all read, once something is unread again.
	k.th.Notify(t, 42, "like.toggled", k.user)
	k.d.Send(t, "TEXT "+k.badge+" | 1")
	k.keys(t, "Shift+Tab", "Mark all as read", "Enter", "All2") // done, it hides: the focus goes to the tab
	k.d.Send(t, "HIDDEN "+k.badge)
}

// darkAndClosed: axe-core in dark, open and closed; Escape gives the focus
// back to the bell; the counts are what the walk did.
func (k keyboardRun) darkAndClosed(t *testing.T) {
	k.d.Send(t, "SCHEME dark")
	k.axe(t, "dark, open")
	k.d.Send(t, "KEY Escape")
	k.d.Send(t, `HIDDEN roomhub-inbox [part="panel"]`)
	k.focus(t, "bell")
	k.axe(t, "dark, closed")
	if c := k.th.CountsOf(t, k.user); c.Unread != 0 || c.Unseen != 0 || c.Snoozed != 1 || c.Visible != 2 || c.Archived != 0 {
		t.Fatalf("counts after the keyboard walk: %+v", c)
	}
	if errs := k.d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}
