package inbox_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// checkCountsMatchLists asserts that every count equals what the list
// returns for the same filter. Items may expire meanwhile (every read
// settles the inbox first): a check during which the version moved is
// made again.
func checkCountsMatchLists(t *testing.T, th *testhub.Hub, user int64) testhub.Counts {
	t.Helper()
	for range 20 {
		c := th.CountsOf(t, user)
		problem := countsVersusLists(t, th, user, c)
		if th.CountsOf(t, user).Version != c.Version {
			continue // something expired or woke during the check
		}
		if problem != "" {
			t.Fatalf("user %d: %s (%+v)", user, problem, c)
		}
		return c
	}
	t.Fatalf("user %d: the inbox kept changing during 20 checks", user)
	return testhub.Counts{}
}

// countsVersusLists describes the first count that differs from its list.
func countsVersusLists(t *testing.T, th *testhub.Hub, user int64, c testhub.Counts) string {
	t.Helper()
	for q, want := range map[string]int64{"": c.Visible, "state=unread": c.Unread, "state=unseen": c.Unseen,
		"state=read": c.Visible - c.Unread, "state=archived": c.Archived, "state=snoozed": c.Snoozed,
		"state=all": c.Visible + c.Archived + c.Snoozed} {
		if got := int64(len(th.ListOf(t, user, q))); got != want {
			return fmt.Sprintf("list ?%s has %d items, counts say %d", q, got, want)
		}
	}
	if n := th.UnreadOf(t, user); n != c.Unread {
		return fmt.Sprintf("unread %d, counts say %d", n, c.Unread)
	}
	for name, by := range map[string]map[string]struct{ Visible, Unread, Unseen int64 }{"tags": c.ByTag, "severity": c.BySeverity} {
		for k, v := range by {
			for q, want := range map[string]int64{"": v.Visible, "&state=unread": v.Unread, "&state=unseen": v.Unseen} {
				if got := int64(len(th.ListOf(t, user, name+"="+k+q))); got != want {
					return fmt.Sprintf("list ?%s=%s%s has %d items, counts say %d", name, k, q, got, want)
				}
			}
		}
	}
	return ""
}

func TestLifecycle_StatesCountsAndLiveEvents(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	const u = 40
	r := &lifecycleRun{th: th, u: u, s: th.UserStream(t, u, "")}
	r.s.Next(t, testhub.Wait)
	if c := r.s.NextCounts(t); c.Visible != 0 {
		t.Fatalf("empty inbox counts %+v", c)
	}
	a := th.NotifyWith(t, 120, `"severity":"high","tags":["billing","eu"]`, u)
	b := th.NotifyWith(t, 121, `"tags":["eu"]`, u)
	c := th.NotifyWith(t, 120, "", u)
	r.threeCreated(t, a, c)
	r.seenAndArchived(t, a, b)
	r.snoozedAndWoken(t, a, c)
	r.deleted(t, b)
	r.bulk(t, a, c)
}

// lifecycleRun is what the steps of the lifecycle test share: the hub,
// the user and their stream, the last version its events carried and how
// many items were created.
type lifecycleRun struct {
	th      *testhub.Hub
	u       int64
	s       *testhub.SSEClient
	version int64
	created int
}

// next reads the next event of the user's stream, of type typ, and checks
// that its counts are those of the API and that the version rose.
func (r *lifecycleRun) next(t *testing.T, typ string) map[string]json.RawMessage {
	t.Helper()
	f := r.s.Next(t, testhub.Wait)
	var d map[string]json.RawMessage
	if f.Event != typ || f.ID == "" || json.Unmarshal([]byte(f.Data), &d) != nil {
		t.Fatalf("got %+v, want %s with an id", f, typ)
	}
	var counts testhub.Counts
	if err := json.Unmarshal(d["counts"], &counts); err != nil || counts.Version <= r.version {
		t.Fatalf("%s counts %s: version %d after %d", typ, d["counts"], counts.Version, r.version)
	}
	r.version = counts.Version
	if typ == inbox.NotificationCreatedType {
		if r.created++; counts.Visible != int64(r.created) {
			t.Fatalf("created %d: counts %+v", r.created, counts)
		}
		return d
	}
	if now := r.th.CountsOf(t, r.u); now.Version != counts.Version || now.Visible != counts.Visible || now.Unread != counts.Unread {
		t.Fatalf("%s carried counts %+v, the API says %+v", typ, counts, now)
	}
	return d
}

// threeCreated: three items created live, counted by tag and severity,
// listed newest first with their fields.
func (r *lifecycleRun) threeCreated(t *testing.T, a, c string) {
	u := r.u
	for range 3 {
		r.next(t, inbox.NotificationCreatedType)
	}
	counts := checkCountsMatchLists(t, r.th, u)
	if counts.Visible != 3 || counts.Unread != 3 || counts.Unseen != 3 || counts.ByTag["eu"].Visible != 2 ||
		counts.ByTag["billing"].Unread != 1 || counts.BySeverity["high"].Visible != 1 || counts.BySeverity["normal"].Visible != 2 {
		t.Fatalf("counts %+v", counts)
	}
	items := r.th.ListOf(t, u, "")
	if len(items) != 3 || items[0].NotificationID != c || items[2].NotificationID != a || items[2].Severity != "high" ||
		strings.Join(items[2].Tags, ",") != "billing,eu" || items[0].Severity != "normal" || items[0].Tags == nil ||
		items[0].SeenAt != nil || items[0].ActivityAt == "" || items[0].Group != nil {
		t.Fatalf("items %+v", items)
	}
}

// seenAndArchived: seen (twice: the same), archived (seen with it), each
// a live update; a tag with only an archived item stays listed.
func (r *lifecycleRun) seenAndArchived(t *testing.T, a, b string) {
	u := r.u
	if n := r.th.Act(t, u, b, "seen", ""); n.SeenAt == nil || n.ReadAt != nil {
		t.Fatalf("seen: %+v", n)
	}
	r.next(t, inbox.NotificationUpdatedType)
	if n := r.th.Act(t, u, b, "seen", ""); n.SeenAt == nil {
		t.Fatalf("seen again: %+v", n)
	}
	if n := r.th.Act(t, u, a, "archive", ""); n.ArchivedAt == nil || n.SeenAt == nil {
		t.Fatalf("archive: %+v", n)
	}
	d := r.next(t, inbox.NotificationUpdatedType)
	var upd struct{ Notifications []inbox.Notification }
	if json.Unmarshal([]byte(`{"notifications":`+string(d["notifications"])+`}`), &upd) != nil ||
		len(upd.Notifications) != 1 || upd.Notifications[0].ArchivedAt == nil {
		t.Fatalf("notification.updated for the archive: %s", d["notifications"])
	}
	counts := checkCountsMatchLists(t, r.th, u)
	if counts.Visible != 2 || counts.Archived != 1 || counts.Unseen != 1 || counts.ByTag["billing"].Visible != 0 {
		t.Fatalf("after seen and archive: %+v", counts)
	}
	if _, present := counts.ByTag["billing"]; !present {
		t.Fatal("a tag with an archived item must stay listed")
	}
}

// snoozedAndWoken: unarchived, snoozed, woken (unseen again, at the top).
func (r *lifecycleRun) snoozedAndWoken(t *testing.T, a, c string) {
	u := r.u
	r.th.Act(t, u, a, "unarchive", "")
	r.next(t, inbox.NotificationUpdatedType)
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if n := r.th.Act(t, u, c, "snooze", `{"until":"`+until+`"}`); n.SnoozedUntil == nil || n.SeenAt == nil {
		t.Fatalf("snooze: %+v", n)
	}
	r.next(t, inbox.NotificationUpdatedType)
	counts := checkCountsMatchLists(t, r.th, u)
	if counts.Snoozed != 1 || counts.Visible != 2 {
		t.Fatalf("after snooze: %+v", counts)
	}
	if n := r.th.Act(t, u, c, "unsnooze", ""); n.SnoozedUntil != nil || n.SeenAt != nil {
		t.Fatalf("unsnooze: %+v (it comes back unseen)", n)
	}
	r.next(t, inbox.NotificationUpdatedType)
	if items := r.th.ListOf(t, u, ""); items[0].NotificationID != c {
		t.Fatalf("a woken item is at the top: %+v", items[0])
	}
}

// deleted: a delete is a live event, deleting again is 200, acting on a
// deleted item is 404.
func (r *lifecycleRun) deleted(t *testing.T, b string) {
	u := r.u
	code, env := r.th.UserDo(t, http.MethodDelete, "/api/v1/notifications/"+b, u, "")
	if code != 200 || fmt.Sprint(env.Result) != fmt.Sprintf("map[deleted:true notificationId:%s]", b) {
		t.Fatalf("delete: %d %+v", code, env)
	}
	if d := r.next(t, inbox.NotificationDeletedType); string(d["reason"]) != `"deleted"` || !strings.Contains(string(d["notificationIds"]), b) {
		t.Fatalf("notification.deleted %v", d)
	}
	if code, _ := r.th.UserDo(t, http.MethodDelete, "/api/v1/notifications/"+b, u, ""); code != 200 {
		t.Fatalf("deleting again: %d, want 200", code)
	}
	if code, _ := r.th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+b+"/seen", u, ""); code != 404 {
		t.Fatalf("seen of a deleted item: %d, want 404", code)
	}
	counts := checkCountsMatchLists(t, r.th, u)
	if counts.Visible != 2 || counts.ByTag["eu"].Visible != 1 {
		t.Fatalf("after delete: %+v", counts)
	}
}

// bulk: read over a filter up to an item, then archive by ids.
func (r *lifecycleRun) bulk(t *testing.T, a, c string) {
	u := r.u
	// Bulk: read over a filter up to an item, then archive by ids.
	code, env := r.th.UserDo(t, http.MethodPost, "/api/v1/notifications/bulk", u,
		`{"action":"read","filter":{"state":"unread","tags":["eu"]}}`)
	var br inbox.BulkResult
	testhub.Remarshal(t, env.Result, &br)
	if code != 200 || br.Changed != 1 || br.At == "" {
		t.Fatalf("bulk read: %d %+v", code, env)
	}
	r.next(t, inbox.NotificationReadType)
	code, env = r.th.UserDo(t, http.MethodPost, "/api/v1/notifications/bulk", u,
		fmt.Sprintf(`{"action":"archive","notificationIds":[%q,%q,"9:1-0"]}`, a, c))
	testhub.Remarshal(t, env.Result, &br)
	if code != 200 || br.Changed != 2 {
		t.Fatalf("bulk archive: %d %+v", code, env)
	}
	r.next(t, inbox.NotificationUpdatedType)
	counts := checkCountsMatchLists(t, r.th, u)
	if counts.Visible != 0 || counts.Archived != 2 || counts.Unread != 0 {
		t.Fatalf("after bulk: %+v", counts)
	}
}

func TestLifecycle_ValidationAnswersTheDesignCodes(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	const u = 41
	id := th.NotifyWith(t, 122, "", u)
	hundredOne := make([]string, 101)
	for i := range hundredOne {
		hundredOne[i] = strconv.Quote(fmt.Sprintf("1:%d-0", i+1))
	}
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{"PATCH", "/api/v1/notifications/x/seen", "", 400},
		{"PATCH", "/api/v1/notifications/9:1-0/archive", "", 404},
		{"DELETE", "/api/v1/notifications/9:1-0", "", 404},
		{"PATCH", "/api/v1/notifications/" + id + "/snooze", `{}`, 400},
		{"PATCH", "/api/v1/notifications/" + id + "/snooze", `{"until":"tomorrow"}`, 400},
		{"PATCH", "/api/v1/notifications/" + id + "/snooze", `{"until":"` + time.Now().Add(30*time.Second).Format(time.RFC3339) + `"}`, 400},
		{"PATCH", "/api/v1/notifications/" + id + "/snooze", `{"until":"` + time.Now().Add(91*24*time.Hour).Format(time.RFC3339) + `"}`, 400},
		{"PATCH", "/api/v1/notifications/" + id + "/explode", "", 404},
		{"POST", "/api/v1/notifications/bulk", `{"action":"explode","notificationIds":["1:1-0"]}`, 400},
		{"POST", "/api/v1/notifications/bulk", `{"action":"snooze","notificationIds":["1:1-0"]}`, 400},
		{"POST", "/api/v1/notifications/bulk", `{"notificationIds":["1:1-0"]}`, 400},
		{"POST", "/api/v1/notifications/bulk", `{"action":"read"}`, 400},
		{"POST", "/api/v1/notifications/bulk", `{"action":"read","notificationIds":["1:1-0"],"filter":{}}`, 400},
		{"POST", "/api/v1/notifications/bulk", `{"action":"read","notificationIds":[` + strings.Join(hundredOne, ",") + `]}`, 400},
		{"POST", "/api/v1/notifications/bulk", `{"action":"read","notificationIds":["x"]}`, 400},
		{"POST", "/api/v1/notifications/bulk", `{"action":"read","filter":{"state":"gone"}}`, 400},
		{"POST", "/api/v1/notifications/bulk", `{"action":"read","filter":{"tags":["Bad Tag"]}}`, 400},
		{"POST", "/api/v1/notifications/bulk", `{"action":"read","filter":{},"upTo":"x"}`, 400},
		{"POST", "/api/v1/notifications/bulk", `{"action":"read","filter":{"unknown":1}}`, 400}, // a typo never widens a filter
		{"POST", "/api/v1/notifications/bulk", `{"action":"read","filter":{}}`, 200},
		{"GET", "/api/v1/notifications?state=gone", "", 400},
		{"GET", "/api/v1/notifications?severity=urgent", "", 400},
		{"GET", "/api/v1/notifications?tags=", "", 400},
		{"GET", "/api/v1/notifications?roomId=0", "", 400},
		{"GET", "/api/v1/notifications?eventType=Bad", "", 400},
		{"GET", "/api/v1/notifications?state=archived&tags=a,b&severity=high,low&eventType=comment.created&roomId=5", "", 200},
	} {
		code, env := th.UserDo(t, tc.method, tc.path, u, tc.body)
		want := map[int]string{200: "COMMON200", 400: "COMMON400", 404: "COMMON404"}[tc.code]
		if code != tc.code || env.Code != want {
			t.Errorf("%s %s %.60s: %d %s, want %d %s", tc.method, tc.path, tc.body, code, env.Code, tc.code, want)
		}
	}
	for _, body := range []string{
		`"severity":"urgent"`, `"severity":""`, `"tags":["UPPER"]`, `"tags":["a","b","c","d","e","f","g","h","i"]`,
		`"expiresAt":"yesterday"`, `"expiresAt":"2020-01-01T00:00:00Z"`, `"expiresAt":"2999-01-01T00:00:00Z"`,
	} {
		code, env := th.PublishRaw(t, `{"roomId":122,"eventType":"comment.created","data":{},"recipientIds":[41],`+body+`}`)
		if code != 400 || env.Code != "COMMON400" {
			t.Errorf("publish with %s: %d %s, want 400 COMMON400", body, code, env.Code)
		}
	}
	code, env := th.PublishRaw(t, `{"roomId":122,"eventType":"comment.created","data":{},"severity":"high"}`)
	if code != 400 || env.Code != "COMMON400" {
		t.Errorf("severity without recipients: %d %s, want 400", code, env.Code)
	}
}

// An inbox written by the hub before the lifecycle (items, order, read marks
// and unread_count, nothing else) reads right after the upgrade: items
// without the new fields, counts recounted once, exact.
func TestLifecycle_InboxFromBeforeTheUpgrade(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	const u = 43
	now := time.Now().UnixMilli()
	for i, read := range []bool{false, true, false} {
		id := fmt.Sprintf("7:%d-0", now-int64(3-i)*1000)
		item := fmt.Sprintf(`{"notificationId":%q,"roomId":7,"eventType":"comment.created","data":{"n":%d},"publisherId":null,"timestamp":"2026-11-23T00:00:0%d.000Z"}`, id, i, i)
		testredis.Do(t, th.Redis, "HSET", inbox.ItemsKey(u), id, item)
		testredis.Do(t, th.Redis, "ZADD", inbox.OrderKey(u), strconv.FormatInt((now-int64(3-i)*1000)*1024, 10), id)
		if read {
			testredis.Do(t, th.Redis, "HSET", inbox.ReadKey(u), id, "2026-11-23T00:00:09.000Z")
		}
	}
	testredis.Do(t, th.Redis, "SET", inbox.UnreadCountKey(u), "2")
	c := checkCountsMatchLists(t, th, u)
	if c.Visible != 3 || c.Unread != 2 || c.Unseen != 3 || c.BySeverity["normal"].Visible != 3 {
		t.Fatalf("counts of an old inbox %+v", c)
	}
	items := th.ListOf(t, u, "")
	if len(items) != 3 || items[0].Severity != "normal" || items[0].Tags == nil || len(items[0].Tags) != 0 ||
		items[0].ExpiresAt != nil || items[1].ReadAt == nil {
		t.Fatalf("old items %+v", items)
	}
	// An older hub still at work (a rolling deploy) keeps unread_count, not
	// the counts: the next script sees it and recounts.
	testredis.Do(t, th.Redis, "HSET", inbox.ReadKey(u), items[0].NotificationID, "2026-11-23T00:00:10.000Z")
	testredis.Do(t, th.Redis, "DECR", inbox.UnreadCountKey(u))
	if c := checkCountsMatchLists(t, th, u); c.Unread != 1 || c.Version <= 1 {
		t.Fatalf("after an old hub's read %+v", c)
	}
	// The fan-out trusts the counts it finds; an old hub's read before it
	// still shows to the next reader, who recounts.
	testredis.Do(t, th.Redis, "HSET", inbox.ReadKey(u), items[2].NotificationID, "2026-11-23T00:00:11.000Z")
	testredis.Do(t, th.Redis, "DECR", inbox.UnreadCountKey(u))
	th.Notify(t, 7, "comment.created", u)
	if c := checkCountsMatchLists(t, th, u); c.Visible != 4 || c.Unread != 1 {
		t.Fatalf("after an old hub's read and a publish %+v", c)
	}
	if got, _ := testredis.Do(t, th.Redis, "GET", inbox.UnreadCountKey(u)).ToString(); got != "1" {
		t.Fatalf("unread_count %v, want 1", got)
	}
}

// A deleted item's read, not yet flushed, still reaches the backend; and
// trimming by INBOX_MAX_ENTRIES takes the oldest out of the counts with
// notification.deleted, reason retention.
func TestLifecycle_DeletedReadIsFlushedAndRetentionIsAnnounced(t *testing.T) {
	sink := testhub.StartSink(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) {
		c.Inbox.ReadSinkURL, c.Inbox.WriteBehindInterval, c.Inbox.MaxEntries = sink.URL, 0, 2
	})
	const u = 61
	s := th.SettledUserStream(t, u)
	a := th.NotifyWith(t, 150, "", u)
	if code, _ := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+a+"/read", u, ""); code != 200 {
		t.Fatalf("read: %d", code)
	}
	if code, _ := th.UserDo(t, http.MethodDelete, "/api/v1/notifications/"+a, u, ""); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if st, err := th.Inbox.FlushReads(t.Context()); err != nil || st.Flushed != 1 {
		t.Fatalf("flush after the delete: %+v %v", st, err)
	}
	sink.Mu.Lock()
	got := sink.Got[fmt.Sprintf("%d/%s", u, a)]
	sink.Mu.Unlock()
	if got != 1 {
		t.Fatalf("the deleted item's read reached the sink %d times, want 1", got)
	}
	b := th.NotifyWith(t, 150, "", u)
	th.NotifyWith(t, 150, "", u)
	th.NotifyWith(t, 150, "", u) // the third: b drops out
	f := s.NextMatching(t, testhub.Wait, func(f testhub.Frame) bool {
		return f.Event == inbox.NotificationDeletedType && strings.Contains(f.Data, `"reason":"retention"`)
	})
	var d struct {
		NotificationIDs []string
		Counts          testhub.Counts
	}
	if err := json.Unmarshal([]byte(f.Data), &d); err != nil || len(d.NotificationIDs) != 1 || d.NotificationIDs[0] != b || d.Counts.Visible != 2 {
		t.Fatalf("retention: %s", f.Data)
	}
	if c := checkCountsMatchLists(t, th, u); c.Visible != 2 {
		t.Fatalf("after retention %+v", c)
	}
}
