package inbox_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// A bulk action over a filter does bounded work: each call looks at (and
// changes) at most 1,000 items and says more; repeating the same call goes
// on where it left off, never changing an item twice, and gets through
// however many items it must pass over that it does not change (calls that
// started from the top each time would look at those forever). read-all is
// bounded the same way. The counts equal the lists afterwards.
func TestBulk_BoundedCallsGoOnWhereTheyLeftOff(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.Inbox.MaxEntries = 5000 })
	const u = 95
	const n = 1300
	ids := th.FillInbox(t, u, n)
	changed, calls := th.BulkUntilDone(t, u, "/api/v1/notifications/bulk", `{"action":"archive","filter":{"state":"all"}}`)
	if changed != n || calls != 2 {
		t.Fatalf("archive all: %d changed in %d calls, want %d in 2", changed, calls, n)
	}
	if c := th.CountsOf(t, u); c.Archived != n || c.Visible != 0 {
		t.Fatalf("after archiving all: %+v", c)
	}
	// All back, then the oldest 250 archived again; then unarchive all: the
	// calls pass over the newest 1,050 (nothing to change) once, and change
	// the 250 below them.
	changed, _ = th.BulkUntilDone(t, u, "/api/v1/notifications/bulk",
		fmt.Sprintf(`{"action":"unarchive","filter":{"state":"all"},"upTo":%q}`, ids[0]))
	if changed != n {
		t.Fatalf("unarchive all: %d changed", changed)
	}
	changed, _ = th.BulkUntilDone(t, u, "/api/v1/notifications/bulk",
		fmt.Sprintf(`{"action":"archive","filter":{"state":"all"},"upTo":%q}`, ids[1050]))
	if changed != 250 {
		t.Fatalf("archive from the 1,051st down: %d changed, want 250", changed)
	}
	changed, calls = th.BulkUntilDone(t, u, "/api/v1/notifications/bulk", `{"action":"unarchive","filter":{"state":"all"}}`)
	if changed != 250 || calls != 2 {
		t.Fatalf("unarchive past 1,050 unarchived: %d changed in %d calls, want 250 in 2", changed, calls)
	}
	marked, calls := th.BulkUntilDone(t, u, "/api/v1/notifications/read-all", "")
	if marked != n || calls != 2 {
		t.Fatalf("read-all: %d marked in %d calls, want %d in 2", marked, calls, n)
	}
	if c := th.CountsOf(t, u); c.Unread != 0 || c.Visible != n || c.Archived != 0 {
		t.Fatalf("after read-all: %+v", c)
	}
	// A list with a filter few items pass looks at a bounded number a page
	// too: short (even empty) pages with hasMore, which page on to the end.
	th.Publish(t, 901, "comment.created", map[string]any{}) // no recipient: not in the inbox
	code, env := th.UserDo(t, http.MethodPost, "/api/v1/notifications/bulk", u, fmt.Sprintf(`{"action":"archive","notificationIds":[%q]}`, ids[n-1]))
	if code != 200 {
		t.Fatalf("archive the oldest: %d %+v", code, env)
	}
	got := th.ListOf(t, u, "state=archived")
	if len(got) != 1 || got[0].NotificationID != ids[n-1] {
		t.Fatalf("the archived list: %d items", len(got))
	}
	code, env = th.UserDo(t, http.MethodGet, "/api/v1/notifications?state=archived&limit=10", u, "")
	var page inbox.InboxPage
	testhub.Remarshal(t, env.Result, &page)
	if code != 200 || len(page.Notifications) != 0 || !page.HasMore || page.NextBefore == nil {
		t.Fatalf("the first page of a filter only the oldest of 1,300 passes: %d %d items, hasMore %v, want an empty page with more", code, len(page.Notifications), page.HasMore)
	}
}

// A bulk call spends from the user's request budget by the items it looked
// at (a token per 100 beyond its own), not one token a call.
func TestBulk_ChargesTheBudgetByItems(t *testing.T) {
	th := testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) {
		c.UserRequests = api.Budget{PerSec: 0.001, Burst: 5} // no token back within the test
	})
	const u = 96
	th.FillInbox(t, u, 300)
	if code, env := th.UserDo(t, http.MethodPost, "/api/v1/notifications/read-all", u, ""); code != 200 {
		t.Fatalf("read-all: %d %+v", code, env)
	}
	// 300 items looked at: 3 tokens of 5. Two requests are left.
	for i := range 2 {
		if code, _ := th.UserDo(t, http.MethodGet, "/api/v1/notifications/unread", u, ""); code != 200 {
			t.Fatalf("request %d after read-all: %d, want 200", i, code)
		}
	}
	if code, env := th.UserDo(t, http.MethodGet, "/api/v1/notifications/unread", u, ""); code != 429 || env.Code != "COMMON429" {
		t.Fatalf("a request past what read-all of 300 items spent: %d %+v, want 429", code, env)
	}
}

// Settling due items is bounded per script (DESIGN's Cost rule): of 500
// items that expire at once, one script removes 200; the timers job, in
// further scripts, the rest (hardening IV, 10: settle() woke or removed up
// to 1,000 in one script).
func TestInbox_ManyDueItemsAreSettledInChunks(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	const u = 96
	// This test runs the timers job itself: the hub's waits for the lock.
	testredis.Do(t, th.Redis, "SET", hub.LockKey("inbox-timers"), "the-test", "PX", "60000")
	// Far enough ahead that a loaded machine's batch of 500 is checked before
	// it (each must lie in the future when published), near enough to wait for.
	expires := time.Now().Add(5 * time.Second).UTC().Format(time.RFC3339Nano)
	var events []string
	for i := range 500 {
		events = append(events, fmt.Sprintf(`{"roomId":901,"eventType":"comment.created","data":{"n":%d},"recipientIds":[%d],"expiresAt":%q}`, i, u, expires))
	}
	if code, res := th.Batch(t, events...); code != 200 || !res[499].IsSuccess {
		t.Fatalf("batch: %d %+v", code, res[499])
	}
	if c := th.CountsOf(t, u); c.Visible != 500 {
		t.Fatalf("before they expire: %+v", c)
	}
	testhub.Eventually(t, 15*time.Second, "the first chunk to expire", func() bool { return th.CountsOf(t, u).Visible < 500 })
	if c := th.CountsOf(t, u); c.Visible != 100 { // two scripts so far: the one that saw them go and this one
		t.Fatalf("after two scripts: %d visible, want 100 (chunks of 200)", c.Visible)
	}
	if _, err := th.Inbox.SettleDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c := th.CountsOf(t, u); c.Visible != 0 {
		t.Fatalf("after the timers job: %+v, want none left", c)
	}
}

// An inbox counting thousands of tags writes its counts in chunks: a bulk
// unarchive of 250 items of 8 tags each and a recount answer as any other
// (hardening V, 18: 8,000 count fields in one HSET failed, "too many
// results to unpack", REDIS5002).
func TestBulk_ThousandsOfTagCountsAreWrittenInChunks(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	const user, items = 9, 250
	events := make([]string, items)
	for i := range events {
		tags := make([]string, 8)
		for j := range tags {
			tags[j] = fmt.Sprintf(`"t%d-%d"`, i, j)
		}
		events[i] = fmt.Sprintf(`{"roomId":70,"eventType":"comment.created","data":{},"recipientIds":[%d],"tags":[%s]}`, user, strings.Join(tags, ","))
	}
	for i := 0; i < items; i += 50 { // 50 a request: each well within the client's 30 s on a loaded machine
		if code, res := th.Batch(t, events[i:i+50]...); code != 200 || len(res) != 50 || !res[49].IsSuccess {
			t.Fatalf("batch: %d %+v", code, res)
		}
	}
	th.BulkUntilDone(t, user, "/api/v1/notifications/bulk", `{"action":"archive","filter":{"state":"visible"}}`)
	if c := th.CountsOf(t, user); c.Archived != items || c.Visible != 0 {
		t.Fatalf("after archiving all: %d archived, %d visible", c.Archived, c.Visible)
	}
	th.BulkUntilDone(t, user, "/api/v1/notifications/bulk", `{"action":"unarchive","filter":{"state":"archived"}}`)
	if c := th.CountsOf(t, user); c.Visible != items || len(c.ByTag) != 8*items {
		t.Fatalf("after unarchiving all: %d visible, %d tags counted; want %d and %d", c.Visible, len(c.ByTag), items, 8*items)
	}
	if err := th.Redis.Do(t.Context(), th.Redis.B().Del().Key(inbox.CountsKey(user)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	th.NotifyExtra(t, 70, "comment.created", "", user) // counts again from the items
	if c := th.CountsOf(t, user); c.Visible != items+1 || c.Unread != items+1 || len(c.ByTag) != 8*items {
		t.Fatalf("after a recount: %d visible, %d unread, %d tags counted; want %d, %d, %d", c.Visible, c.Unread, len(c.ByTag), items+1, items+1, 8*items)
	}
}
