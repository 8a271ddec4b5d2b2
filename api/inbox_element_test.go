package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"roomhub/internal/testbrowser"
	"roomhub/internal/testredis"
)

// The <roomhub-inbox> element on the plain HTML example page, in real
// Chromium: the badge follows publishes, a read in another tab and a mark
// all exactly (99+ only as display, the exact count in its name); opening
// the bell lists the items with their text and marks them seen; an item's
// action reads it; Escape closes and gives the focus back to the bell.
func TestBrowser_InboxElementFollowsTheInboxExactly(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	for _, path := range []string{"/static/roomhub-inbox.js", "/static/inbox.html", "/static/inbox-example.js"} {
		resp, err := httpClient.Get(th.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	const user = 7
	d := testbrowser.Start(t, "inbox.mjs", th.URL+"/static/inbox.html?user=7", artifactsDir(t))
	badge := `roomhub-inbox [part="badge"]`
	d.Send(t, "HIDDEN "+badge)
	var ids []string
	for i := range 3 {
		body := fmt.Sprintf(`{"roomId":42,"eventType":"comment.created","data":{"title":"Comment %d","text":"Hello %d"},"publisherId":5,"recipientIds":[%d]}`, i, i, user)
		code, env := th.publishRaw(t, body)
		if code != 200 {
			t.Fatalf("publish: %d %+v", code, env)
		}
		ids = append(ids, "42:"+env.Result.(map[string]any)["streamId"].(string))
	}
	d.Send(t, "TEXT "+badge+" | 3")

	// Open: the items with their text, newest first; the bell opened is seen.
	d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	d.Send(t, `COUNT roomhub-inbox [part="item"] | 3`)
	d.Send(t, `TEXT roomhub-inbox [part="item"] .item-title | Comment 2`)
	d.Send(t, `TEXT roomhub-inbox [part="item"] .item-text | Hello 0`)
	eventually(t, 15*time.Second, "the opened bell to mark the items seen", func() bool { return th.countsOf(t, user).Unseen == 0 })

	// Read in another tab (the API): the badge follows.
	th.markRead(t, user, ids[0])
	d.Send(t, "TEXT "+badge+" | 2")
	// An item's own action.
	d.Send(t, fmt.Sprintf(`CLICK roomhub-inbox [data-id="%s"] [aria-label="Mark as read"]`, ids[2]))
	d.Send(t, "TEXT "+badge+" | 1")
	if c := th.countsOf(t, user).Unread; c != 1 {
		t.Fatalf("unread %d after the item's read, want 1", c)
	}
	// Mark all read.
	d.Send(t, `CLICK roomhub-inbox .all-read`)
	d.Send(t, "HIDDEN "+badge)

	// Escape closes the panel and the focus goes back to the bell.
	d.Send(t, `CLICK roomhub-inbox [role="tab"][data-tab="unread"]`)
	d.Send(t, "KEY Escape")
	d.Send(t, `HIDDEN roomhub-inbox [part="panel"]`)
	if f := d.Send(t, "FOCUS")["value"]; f != "bell" {
		t.Fatalf("after Escape the focus is on %v, want the bell", f)
	}

	// Past 99: the display says 99+, the bell's name the exact count.
	var events []string
	for i := range 150 {
		events = append(events, fmt.Sprintf(`{"roomId":43,"eventType":"like.toggled","data":{"n":%d},"recipientIds":[%d]}`, i, user))
	}
	if code, res := th.batch(t, events...); code != 200 || len(res) != 150 {
		t.Fatalf("batch: %d", code)
	}
	d.Send(t, "TEXT "+badge+" | 99+")
	label := d.Send(t, `EVAL document.querySelector('roomhub-inbox').shadowRoot.querySelector('[part="bell"]').getAttribute('aria-label')`)["value"]
	if s, _ := label.(string); !strings.Contains(s, "150") {
		t.Fatalf("the bell is named %q, want the exact count 150 in it", label)
	}
	d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	d.Send(t, `COUNT roomhub-inbox [part="item"] | 20`) // a page; more on scroll
	d.Send(t, "SHOT inbox-desktop 1280")
	d.Send(t, "SHOT inbox-phone 390")
	if errs := d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}
