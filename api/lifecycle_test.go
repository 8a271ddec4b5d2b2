package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testredis"
)

// notifyWith publishes one event to recipients with extra publish fields
// (JSON members, e.g. `"severity":"high"`) and returns the notificationId.
func (th *testHub) notifyWith(t testing.TB, room int64, extra string, recipients ...int64) string {
	t.Helper()
	r := th.notifyExtra(t, room, "comment.created", extra, recipients...)
	return fmt.Sprintf("%d:%s", room, r.StreamID)
}

// countsOf reads GET /notifications/counts.
func (th *testHub) countsOf(t testing.TB, user int64) countsData {
	t.Helper()
	code, env := th.get(t, "/api/v1/notifications/counts", th.token(t, user))
	if code != 200 {
		t.Fatalf("counts: %d %+v", code, env)
	}
	var c countsData
	remarshal(t, env.Result, &c)
	return c
}

// listOf reads every item of the user's inbox that passes the query's
// filter, page by page (pages of 7: paging within the filter is tested too).
func (th *testHub) listOf(t testing.TB, user int64, query string) []inbox.Notification {
	t.Helper()
	var all []inbox.Notification
	before := ""
	for pages := 0; ; pages++ {
		q := "/api/v1/notifications?limit=7&" + query
		if before != "" {
			q += "&before=" + url.QueryEscape(before)
		}
		code, env := th.get(t, q, th.token(t, user))
		if code != 200 {
			t.Fatalf("GET %s: %d %+v", q, code, env)
		}
		var p inbox.InboxPage
		remarshal(t, env.Result, &p)
		all = append(all, p.Notifications...)
		if !p.HasMore {
			return all
		}
		if pages > 1000 || p.NextBefore == nil {
			t.Fatalf("paging %s does not end", query)
		}
		before = *p.NextBefore
	}
}

// act sends PATCH /notifications/{id}/{action} and returns the item.
func (th *testHub) act(t testing.TB, user int64, id, action, body string) inbox.Notification {
	t.Helper()
	code, env := th.userDo(t, http.MethodPatch, "/api/v1/notifications/"+url.PathEscape(id)+"/"+action, user, body)
	if code != 200 {
		t.Fatalf("%s %s: %d %+v", action, id, code, env)
	}
	var r struct{ Notification inbox.Notification }
	remarshal(t, env.Result, &r)
	if r.Notification.NotificationID != id {
		t.Fatalf("%s %s answered %+v", action, id, r)
	}
	return r.Notification
}

// checkCountsMatchLists asserts that every count equals what the list
// returns for the same filter. Items may expire meanwhile (every read
// settles the inbox first): a check during which the version moved is
// made again.
func checkCountsMatchLists(t *testing.T, th *testHub, user int64) countsData {
	t.Helper()
	for range 20 {
		c := th.countsOf(t, user)
		problem := countsVersusLists(t, th, user, c)
		if th.countsOf(t, user).Version != c.Version {
			continue // something expired or woke during the check
		}
		if problem != "" {
			t.Fatalf("user %d: %s (%+v)", user, problem, c)
		}
		return c
	}
	t.Fatalf("user %d: the inbox kept changing during 20 checks", user)
	return countsData{}
}

// countsVersusLists describes the first count that differs from its list.
func countsVersusLists(t *testing.T, th *testHub, user int64, c countsData) string {
	t.Helper()
	for q, want := range map[string]int64{"": c.Visible, "state=unread": c.Unread, "state=unseen": c.Unseen,
		"state=read": c.Visible - c.Unread, "state=archived": c.Archived, "state=snoozed": c.Snoozed,
		"state=all": c.Visible + c.Archived + c.Snoozed} {
		if got := int64(len(th.listOf(t, user, q))); got != want {
			return fmt.Sprintf("list ?%s has %d items, counts say %d", q, got, want)
		}
	}
	if n := th.unreadOf(t, user); n != c.Unread {
		return fmt.Sprintf("unread %d, counts say %d", n, c.Unread)
	}
	for name, by := range map[string]map[string]struct{ Visible, Unread, Unseen int64 }{"tags": c.ByTag, "severity": c.BySeverity} {
		for k, v := range by {
			for q, want := range map[string]int64{"": v.Visible, "&state=unread": v.Unread, "&state=unseen": v.Unseen} {
				if got := int64(len(th.listOf(t, user, name+"="+k+q))); got != want {
					return fmt.Sprintf("list ?%s=%s%s has %d items, counts say %d", name, k, q, got, want)
				}
			}
		}
	}
	return ""
}

func TestLifecycle_StatesCountsAndLiveEvents(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	const u = 40
	s := th.userStream(t, u, "")
	s.next(t, wait)
	if c := s.nextCounts(t); c.Visible != 0 {
		t.Fatalf("empty inbox counts %+v", c)
	}
	a := th.notifyWith(t, 120, `"severity":"high","tags":["billing","eu"]`, u)
	b := th.notifyWith(t, 121, `"tags":["eu"]`, u)
	c := th.notifyWith(t, 120, "", u)
	version := int64(0)
	// next reads the next event of the user's stream, of type typ, and checks
	// that its counts are those of the API and that the version rose.
	created := 0
	next := func(typ string) map[string]json.RawMessage {
		t.Helper()
		f := s.next(t, wait)
		var d map[string]json.RawMessage
		if f.Event != typ || f.ID == "" || json.Unmarshal([]byte(f.Data), &d) != nil {
			t.Fatalf("got %+v, want %s with an id", f, typ)
		}
		var counts countsData
		if err := json.Unmarshal(d["counts"], &counts); err != nil || counts.Version <= version {
			t.Fatalf("%s counts %s: version %d after %d", typ, d["counts"], counts.Version, version)
		}
		version = counts.Version
		if typ == inbox.NotificationCreatedType {
			if created++; counts.Visible != int64(created) {
				t.Fatalf("created %d: counts %+v", created, counts)
			}
			return d
		}
		if now := th.countsOf(t, u); now.Version != counts.Version || now.Visible != counts.Visible || now.Unread != counts.Unread {
			t.Fatalf("%s carried counts %+v, the API says %+v", typ, counts, now)
		}
		return d
	}
	for range 3 {
		next(inbox.NotificationCreatedType)
	}
	counts := checkCountsMatchLists(t, th, u)
	if counts.Visible != 3 || counts.Unread != 3 || counts.Unseen != 3 || counts.ByTag["eu"].Visible != 2 ||
		counts.ByTag["billing"].Unread != 1 || counts.BySeverity["high"].Visible != 1 || counts.BySeverity["normal"].Visible != 2 {
		t.Fatalf("counts %+v", counts)
	}
	items := th.listOf(t, u, "")
	if len(items) != 3 || items[0].NotificationID != c || items[2].NotificationID != a || items[2].Severity != "high" ||
		strings.Join(items[2].Tags, ",") != "billing,eu" || items[0].Severity != "normal" || items[0].Tags == nil ||
		items[0].SeenAt != nil || items[0].ActivityAt == "" || items[0].Group != nil {
		t.Fatalf("items %+v", items)
	}

	if n := th.act(t, u, b, "seen", ""); n.SeenAt == nil || n.ReadAt != nil {
		t.Fatalf("seen: %+v", n)
	}
	next(inbox.NotificationUpdatedType)
	if n := th.act(t, u, b, "seen", ""); n.SeenAt == nil {
		t.Fatalf("seen again: %+v", n)
	}
	if n := th.act(t, u, a, "archive", ""); n.ArchivedAt == nil || n.SeenAt == nil {
		t.Fatalf("archive: %+v", n)
	}
	d := next(inbox.NotificationUpdatedType)
	var upd struct{ Notifications []inbox.Notification }
	if json.Unmarshal([]byte(`{"notifications":`+string(d["notifications"])+`}`), &upd) != nil ||
		len(upd.Notifications) != 1 || upd.Notifications[0].ArchivedAt == nil {
		t.Fatalf("notification.updated for the archive: %s", d["notifications"])
	}
	counts = checkCountsMatchLists(t, th, u)
	if counts.Visible != 2 || counts.Archived != 1 || counts.Unseen != 1 || counts.ByTag["billing"].Visible != 0 {
		t.Fatalf("after seen and archive: %+v", counts)
	}
	if _, present := counts.ByTag["billing"]; !present {
		t.Fatal("a tag with an archived item must stay listed")
	}
	th.act(t, u, a, "unarchive", "")
	next(inbox.NotificationUpdatedType)
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if n := th.act(t, u, c, "snooze", `{"until":"`+until+`"}`); n.SnoozedUntil == nil || n.SeenAt == nil {
		t.Fatalf("snooze: %+v", n)
	}
	next(inbox.NotificationUpdatedType)
	counts = checkCountsMatchLists(t, th, u)
	if counts.Snoozed != 1 || counts.Visible != 2 {
		t.Fatalf("after snooze: %+v", counts)
	}
	if n := th.act(t, u, c, "unsnooze", ""); n.SnoozedUntil != nil || n.SeenAt != nil {
		t.Fatalf("unsnooze: %+v (it comes back unseen)", n)
	}
	next(inbox.NotificationUpdatedType)
	if items := th.listOf(t, u, ""); items[0].NotificationID != c {
		t.Fatalf("a woken item is at the top: %+v", items[0])
	}
	code, env := th.userDo(t, http.MethodDelete, "/api/v1/notifications/"+b, u, "")
	if code != 200 || fmt.Sprint(env.Result) != fmt.Sprintf("map[deleted:true notificationId:%s]", b) {
		t.Fatalf("delete: %d %+v", code, env)
	}
	if d := next(inbox.NotificationDeletedType); string(d["reason"]) != `"deleted"` || !strings.Contains(string(d["notificationIds"]), b) {
		t.Fatalf("notification.deleted %v", d)
	}
	if code, _ := th.userDo(t, http.MethodDelete, "/api/v1/notifications/"+b, u, ""); code != 200 {
		t.Fatalf("deleting again: %d, want 200", code)
	}
	if code, _ := th.userDo(t, http.MethodPatch, "/api/v1/notifications/"+b+"/seen", u, ""); code != 404 {
		t.Fatalf("seen of a deleted item: %d, want 404", code)
	}
	counts = checkCountsMatchLists(t, th, u)
	if counts.Visible != 2 || counts.ByTag["eu"].Visible != 1 {
		t.Fatalf("after delete: %+v", counts)
	}
	// Bulk: read over a filter up to an item, then archive by ids.
	code, env = th.userDo(t, http.MethodPost, "/api/v1/notifications/bulk", u,
		`{"action":"read","filter":{"state":"unread","tags":["eu"]}}`)
	var br inbox.BulkResult
	remarshal(t, env.Result, &br)
	if code != 200 || br.Changed != 1 || br.At == "" {
		t.Fatalf("bulk read: %d %+v", code, env)
	}
	next(inbox.NotificationReadType)
	code, env = th.userDo(t, http.MethodPost, "/api/v1/notifications/bulk", u,
		fmt.Sprintf(`{"action":"archive","notificationIds":[%q,%q,"9:1-0"]}`, a, c))
	remarshal(t, env.Result, &br)
	if code != 200 || br.Changed != 2 {
		t.Fatalf("bulk archive: %d %+v", code, env)
	}
	next(inbox.NotificationUpdatedType)
	counts = checkCountsMatchLists(t, th, u)
	if counts.Visible != 0 || counts.Archived != 2 || counts.Unread != 0 {
		t.Fatalf("after bulk: %+v", counts)
	}
}

func TestLifecycle_ValidationAnswersTheDesignCodes(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	const u = 41
	id := th.notifyWith(t, 122, "", u)
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
		code, env := th.userDo(t, tc.method, tc.path, u, tc.body)
		want := map[int]string{200: "COMMON200", 400: "COMMON400", 404: "COMMON404"}[tc.code]
		if code != tc.code || env.Code != want {
			t.Errorf("%s %s %.60s: %d %s, want %d %s", tc.method, tc.path, tc.body, code, env.Code, tc.code, want)
		}
	}
	for _, body := range []string{
		`"severity":"urgent"`, `"severity":""`, `"tags":["UPPER"]`, `"tags":["a","b","c","d","e","f","g","h","i"]`,
		`"expiresAt":"yesterday"`, `"expiresAt":"2020-01-01T00:00:00Z"`, `"expiresAt":"2999-01-01T00:00:00Z"`,
	} {
		code, env := th.publishRaw(t, `{"roomId":122,"eventType":"comment.created","data":{},"recipientIds":[41],`+body+`}`)
		if code != 400 || env.Code != "COMMON400" {
			t.Errorf("publish with %s: %d %s, want 400 COMMON400", body, code, env.Code)
		}
	}
	code, env := th.publishRaw(t, `{"roomId":122,"eventType":"comment.created","data":{},"severity":"high"}`)
	if code != 400 || env.Code != "COMMON400" {
		t.Errorf("severity without recipients: %d %s, want 400", code, env.Code)
	}
}

// Expiry: an item leaves lists and counts at expiresAt (within 5 s), with
// notification.deleted reason expired; a snoozed item whose time came wakes,
// unseen, at the top, by the timer worker, with notification.updated.
func TestLifecycle_ExpiryAndWakeByTheTimerWorker(t *testing.T) {
	t.Parallel() // it mostly waits: see helpers_test.go
	th := startHub(t, testredis.Start(t).Addr(), nil)
	const u = 42
	s := th.settledUserStream(t, u)
	keep := th.notifyWith(t, 123, "", u)
	s.next(t, wait)
	// Far enough ahead that a slow publish is not refused as already past.
	exp := th.notifyWith(t, 123, `"expiresAt":"`+time.Now().Add(5*time.Second).UTC().Format(time.RFC3339Nano)+`"`, u)
	if f := s.next(t, wait); f.Event != inbox.NotificationCreatedType || !strings.Contains(f.Data, `"expiresAt":"`) {
		t.Fatalf("created %+v", f)
	}
	f := s.nextMatching(t, 20*time.Second, func(f frame) bool { return f.Event == inbox.NotificationDeletedType })
	if !strings.Contains(f.Data, exp) || !strings.Contains(f.Data, `"reason":"expired"`) {
		t.Fatalf("expiry: %s", f.Data)
	}
	if c := checkCountsMatchLists(t, th, u); c.Visible != 1 {
		t.Fatalf("after expiry %+v", c)
	}
	// Snooze keep, then let its time come (moved to now in Redis: the API's
	// shortest snooze is a minute).
	th.act(t, u, keep, "snooze", `{"until":"`+time.Now().Add(2*time.Minute).UTC().Format(time.RFC3339)+`"}`)
	s.nextMatching(t, wait, func(f frame) bool { return f.Event == inbox.NotificationUpdatedType })
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	testredis.Do(t, th.rdb, "ZADD", hub.InboxDueKey(u), now, "s:"+keep)
	testredis.Do(t, th.rdb, "ZADD", hub.InboxTimersKey(u%hub.InboxTimerShards), now, strconv.Itoa(u))
	f = s.nextMatching(t, 10*time.Second, func(f frame) bool { return f.Event == inbox.NotificationUpdatedType })
	var upd struct{ Notifications []inbox.Notification }
	if json.Unmarshal([]byte(f.Data), &upd) != nil || len(upd.Notifications) != 1 || upd.Notifications[0].NotificationID != keep ||
		upd.Notifications[0].SnoozedUntil != nil || upd.Notifications[0].SeenAt != nil {
		t.Fatalf("wake: %s", f.Data)
	}
	if c := checkCountsMatchLists(t, th, u); c.Visible != 1 || c.Snoozed != 0 || c.Unseen != 1 {
		t.Fatalf("after wake %+v", c)
	}
	eventually(t, wait, "the timer index emptied", func() bool {
		n, _ := testredis.Do(t, th.rdb, "ZCARD", hub.InboxTimersKey(u%hub.InboxTimerShards)).AsInt64()
		return n == 0
	})
}

// An inbox written by the hub before the lifecycle (items, order, read marks
// and unread_count, nothing else) reads right after the upgrade: items
// without the new fields, counts recounted once, exact.
func TestLifecycle_InboxFromBeforeTheUpgrade(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	const u = 43
	now := time.Now().UnixMilli()
	for i, read := range []bool{false, true, false} {
		id := fmt.Sprintf("7:%d-0", now-int64(3-i)*1000)
		item := fmt.Sprintf(`{"notificationId":%q,"roomId":7,"eventType":"comment.created","data":{"n":%d},"publisherId":null,"timestamp":"2026-11-23T00:00:0%d.000Z"}`, id, i, i)
		testredis.Do(t, th.rdb, "HSET", hub.InboxKey(u), id, item)
		testredis.Do(t, th.rdb, "ZADD", hub.InboxOrderKey(u), strconv.FormatInt((now-int64(3-i)*1000)*1024, 10), id)
		if read {
			testredis.Do(t, th.rdb, "HSET", hub.InboxReadKey(u), id, "2026-11-23T00:00:09.000Z")
		}
	}
	testredis.Do(t, th.rdb, "SET", hub.UnreadCountKey(u), "2")
	c := checkCountsMatchLists(t, th, u)
	if c.Visible != 3 || c.Unread != 2 || c.Unseen != 3 || c.BySeverity["normal"].Visible != 3 {
		t.Fatalf("counts of an old inbox %+v", c)
	}
	items := th.listOf(t, u, "")
	if len(items) != 3 || items[0].Severity != "normal" || items[0].Tags == nil || len(items[0].Tags) != 0 ||
		items[0].ExpiresAt != nil || items[1].ReadAt == nil {
		t.Fatalf("old items %+v", items)
	}
	// An older hub still at work (a rolling deploy) keeps unread_count, not
	// the counts: the next script sees it and recounts.
	testredis.Do(t, th.rdb, "HSET", hub.InboxReadKey(u), items[0].NotificationID, "2026-11-23T00:00:10.000Z")
	testredis.Do(t, th.rdb, "DECR", hub.UnreadCountKey(u))
	if c := checkCountsMatchLists(t, th, u); c.Unread != 1 || c.Version <= 1 {
		t.Fatalf("after an old hub's read %+v", c)
	}
	// The fan-out trusts the counts it finds; an old hub's read before it
	// still shows to the next reader, who recounts.
	testredis.Do(t, th.rdb, "HSET", hub.InboxReadKey(u), items[2].NotificationID, "2026-11-23T00:00:11.000Z")
	testredis.Do(t, th.rdb, "DECR", hub.UnreadCountKey(u))
	th.notify(t, 7, "comment.created", u)
	if c := checkCountsMatchLists(t, th, u); c.Visible != 4 || c.Unread != 1 {
		t.Fatalf("after an old hub's read and a publish %+v", c)
	}
	if got, _ := testredis.Do(t, th.rdb, "GET", hub.UnreadCountKey(u)).ToString(); got != "1" {
		t.Fatalf("unread_count %v, want 1", got)
	}
}

// Counts equal the lists after a random run of every action (publishes
// with retries, groups and expiry too), on two instances of which one dies
// now and then between a room publish and its inbox writes (the outbox
// sweep finishes them). make soak runs it longer (ROOMHUB_LIFECYCLE_OPS).
func TestLifecycle_CountsEqualListsUnderRandomActions(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	randomLifecycle(t, rs.Addr(), 300)
}

// The same on a 3-master Redis Cluster: the users' keys are on every master.
func TestLifecycle_CountsEqualListsOnACluster(t *testing.T) {
	t.Parallel()
	randomLifecycle(t, testredis.StartCluster(t).Addrs()[0], 150)
}

func randomLifecycle(t *testing.T, addr string, ops int) {
	cfg := func(c *hub.Config) { c.InboxMaxEntries, c.OutboxGrace = 40, 300*time.Millisecond }
	hubs := []*testHub{startHub(t, addr, cfg), startHub(t, addr, cfg)}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ROOMHUB_LIFECYCLE_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("random actions from seed %d (ROOMHUB_LIFECYCLE_SEED=%d replays them)", seed, seed)
	rng := rand.New(rand.NewPCG(1, seed))
	var dying atomic.Bool
	hubs[1].Inbox.AfterPublishHook = func() error {
		if dying.Load() {
			return errors.New("instance died")
		}
		return nil
	}
	if n, err := strconv.Atoi(os.Getenv("ROOMHUB_LIFECYCLE_OPS")); err == nil && n > 0 {
		ops = n
	}
	users := []int64{50, 51, 52}
	tags := []string{"a", "b", "c"}
	sevs := []string{"low", "normal", "high", "critical"}
	// A publish that dies between the room's script and the inbox writes
	// also goes to witness, whom nothing else reaches and no action touches:
	// the sweep must leave one item in the witness's inbox for each.
	const witness = 53
	died := 0
	dieOnce := func() {
		dying.Store(true)
		defer dying.Store(false)
		body := fmt.Sprintf(`{"roomId":130,"eventType":"comment.created","data":{},"recipientIds":[50,51,52,%d]}`, witness)
		if code, env := hubs[1].publishRaw(t, body); code < 500 {
			t.Fatalf("a publish through the dying instance: %d %+v", code, env)
		}
		died++
	}
	var known []string
	for i := 0; i < ops; i++ {
		th := hubs[rng.IntN(2)]
		u := users[rng.IntN(len(users))]
		switch op := rng.IntN(10); {
		case op < 4 || len(known) == 0:
			if th == hubs[1] && rng.IntN(10) == 0 {
				dieOnce()
				continue
			}
			extra := fmt.Sprintf(`"severity":%q,"tags":[%q,%q],"idempotencyKey":"k%d"`, sevs[rng.IntN(4)], tags[rng.IntN(3)], tags[rng.IntN(3)], rng.IntN(ops))
			if rng.IntN(2) == 0 {
				extra += fmt.Sprintf(`,"groupKey":"g%d"`, rng.IntN(3))
			}
			var expires time.Time
			if rng.IntN(8) == 0 {
				expires = time.Now().Add(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
				extra += `,"expiresAt":"` + expires.UTC().Format(time.RFC3339Nano) + `"`
			}
			code, env := th.publishRaw(t, fmt.Sprintf(`{"roomId":130,"eventType":"comment.created","data":{},"recipientIds":[50,51,52],%s}`, extra))
			switch {
			case code == 200:
				var r hub.PublishResult
				remarshal(t, env.Result, &r)
				known = append(known, "130:"+r.StreamID)
			case env.Code == "NOTIF4091": // the same key with another body
			case code == 400 && !expires.IsZero() && time.Now().After(expires): // a slow publish: its expiresAt passed first
			default:
				t.Fatalf("publish: %d %+v", code, env)
			}
		case op < 8:
			id := known[rng.IntN(len(known))]
			action := []string{"read", "seen", "archive", "unarchive", "unsnooze", "snooze"}[rng.IntN(6)]
			body := ""
			if action == "snooze" {
				body = `{"until":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`
			}
			if code, env := th.userDo(t, http.MethodPatch, "/api/v1/notifications/"+id+"/"+action, u, body); code != 200 && code != 404 {
				t.Fatalf("%s: %d %+v", action, code, env)
			}
		case op < 9:
			id := known[rng.IntN(len(known))]
			if code, env := th.userDo(t, http.MethodDelete, "/api/v1/notifications/"+id, u, ""); code != 200 && code != 404 {
				t.Fatalf("delete: %d %+v", code, env)
			}
		default:
			action := inbox.BulkActions[rng.IntN(len(inbox.BulkActions))]
			body := fmt.Sprintf(`{"action":%q,"filter":{"state":%q,"tags":[%q]}}`, action,
				[]string{"visible", "unread", "unseen", "read", "archived", "all"}[rng.IntN(6)], tags[rng.IntN(3)])
			if rng.IntN(2) == 0 {
				if code, env := th.userDo(t, http.MethodPost, "/api/v1/notifications/read-all", u, ""); code != 200 {
					t.Fatalf("read-all: %d %+v", code, env)
				}
				continue
			}
			if code, env := th.userDo(t, http.MethodPost, "/api/v1/notifications/bulk", u, body); code != 200 {
				t.Fatalf("bulk %s: %d %+v", body, code, env)
			}
		}
	}
	dieOnce() // at least one, whatever the seed
	// What the dying instance left undone, the sweep finishes: the outbox
	// empties, and every planned inbox write is there.
	eventually(t, 20*time.Second, "the outbox swept", func() bool {
		n, _ := testredis.Do(t, hubs[0].rdb, "HLEN", hub.OutboxKey(130)).AsInt64()
		return n == 0
	})
	if got := hubs[0].listOf(t, witness, "state=all"); len(got) != died {
		t.Fatalf("the witness's inbox holds %d items after the sweep, want one for each of the %d publishes that died", len(got), died)
	}
	if n := hubs[0].unreadOf(t, witness); n != int64(died) {
		t.Fatalf("the witness's unread count is %d, want %d", n, died)
	}
	for _, u := range users {
		c := checkCountsMatchLists(t, hubs[0], u)
		if all := hubs[1].listOf(t, u, "state=all"); int64(len(all)) > 40 || slices.ContainsFunc(all, func(n inbox.Notification) bool { return n.NotificationID == "" }) {
			t.Fatalf("user %d: %d items (INBOX_MAX_ENTRIES 40)", u, len(all))
		}
		t.Logf("user %d after %d actions: %+v", u, ops, c)
	}
}

// Groups: events with one groupKey join the recipient's open group (unread,
// visible, younger than the window from its first event): one item that
// counts once, keeps its notificationId, moves to the top unseen, with the
// last actors; a retry never joins twice; a read or archived group, or one
// past its window, is not joined.
func TestLifecycle_Groups(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), nil)
	const u = 60
	s := th.settledUserStream(t, u)
	publish := func(publisher int, extra string) (int, string) {
		t.Helper()
		code, env := th.publishRaw(t, fmt.Sprintf(`{"roomId":140,"eventType":"comment.created","data":{"by":%d},"publisherId":%d,"recipientIds":[%d],"groupKey":"post:1"%s}`,
			publisher, publisher, u, extra))
		var r hub.PublishResult
		remarshal(t, env.Result, &r)
		return code, "140:" + r.StreamID
	}
	other := th.notifyWith(t, 141, "", u)
	s.next(t, wait)
	_, first := publish(1, "")
	if f := s.next(t, wait); f.Event != inbox.NotificationCreatedType || !strings.Contains(f.Data, `"group":{"key":"post:1","count":1,"actors":["1"],"first":"`+first+`"}`) {
		t.Fatalf("the group's first event: %+v", f)
	}
	th.act(t, u, first, "seen", "")
	s.next(t, wait)
	publish(2, "")
	publish(3, `,"idempotencyKey":"g3"`)
	if code, _ := publish(3, `,"idempotencyKey":"g3"`); code != 200 { // a retry: a duplicate, not a join
		t.Fatalf("retry: %d", code)
	}
	publish(1, "")
	for range 3 {
		if f := s.next(t, wait); f.Event != inbox.NotificationUpdatedType {
			t.Fatalf("a join: %+v, want notification.updated", f)
		}
	}
	items := th.listOf(t, u, "")
	g := items[0]
	if len(items) != 2 || g.NotificationID != first || g.Group == nil || g.Group.Count != 4 ||
		strings.Join(g.Group.Actors, ",") != "1,3,2" || g.Group.First != first || g.SeenAt != nil || string(g.Data) != `{"by":1}` {
		t.Fatalf("the group %+v %+v", items, g.Group)
	}
	if c := checkCountsMatchLists(t, th, u); c.Visible != 2 || c.Unread != 2 {
		t.Fatalf("a group counts once: %+v", c)
	}
	// Read: the next event starts a new group.
	if code, env := th.userDo(t, http.MethodPatch, "/api/v1/notifications/"+first+"/read", u, ""); code != 200 {
		t.Fatalf("read: %d %+v", code, env)
	}
	_, second := publish(2, "")
	if items := th.listOf(t, u, ""); len(items) != 3 || items[0].NotificationID != second || items[0].Group.Count != 1 {
		t.Fatalf("after a read group %+v", items)
	}
	// Archived: not joined either.
	th.act(t, u, second, "archive", "")
	_, third := publish(2, "")
	if items := th.listOf(t, u, ""); items[0].NotificationID != third || items[0].Group.Count != 1 {
		t.Fatalf("after an archived group %+v", items[0])
	}
	// Past the window (counted from the group's first event): a new group.
	rec, _ := testredis.Do(t, th.rdb, "HGET", hub.InboxGroupsKey(u), "g:"+third).ToString()
	_, rest, _ := strings.Cut(rec, "\t")
	old := strconv.FormatInt(time.Now().Add(-2*time.Hour).UnixMilli(), 10)
	testredis.Do(t, th.rdb, "HSET", hub.InboxGroupsKey(u), "g:"+third, old+"\t"+rest)
	_, fourth := publish(2, "")
	if items := th.listOf(t, u, ""); items[0].NotificationID != fourth || items[0].Group.Count != 1 {
		t.Fatalf("past the window %+v", items[0])
	}
	publish(2, `,"groupWindowSecs":86400`)
	if items := th.listOf(t, u, ""); items[0].NotificationID != fourth || items[0].Group.Count != 2 {
		t.Fatalf("within the window %+v", items[0])
	}
	if c := checkCountsMatchLists(t, th, u); c.Visible != 4 || c.Archived != 1 || c.Unread != 3 {
		t.Fatalf("counts %+v (visible: %s, the read group, the one past its window, the last)", c, other)
	}
	for _, body := range []string{`"groupKey":"no spaces"`, `"groupKey":""`, `"groupWindowSecs":60`, `"groupKey":"k","groupWindowSecs":0`,
		`"groupKey":"k","groupWindowSecs":86401`} {
		if code, env := th.publishRaw(t, `{"roomId":140,"eventType":"comment.created","data":{},"recipientIds":[60],`+body+`}`); code != 400 || env.Code != "COMMON400" {
			t.Errorf("publish with %s: %d %s, want 400", body, code, env.Code)
		}
	}
}

// A deleted item's read, not yet flushed, still reaches the backend; and
// trimming by INBOX_MAX_ENTRIES takes the oldest out of the counts with
// notification.deleted, reason retention.
func TestLifecycle_DeletedReadIsFlushedAndRetentionIsAnnounced(t *testing.T) {
	sink := startSink(t, hub.DefaultConfig().InternalAPIKey)
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) {
		c.ReadSinkURL, c.WriteBehindInterval, c.InboxMaxEntries = sink.URL, 0, 2
	})
	const u = 61
	s := th.settledUserStream(t, u)
	a := th.notifyWith(t, 150, "", u)
	if code, _ := th.userDo(t, http.MethodPatch, "/api/v1/notifications/"+a+"/read", u, ""); code != 200 {
		t.Fatalf("read: %d", code)
	}
	if code, _ := th.userDo(t, http.MethodDelete, "/api/v1/notifications/"+a, u, ""); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if st, err := th.Inbox.FlushReads(t.Context()); err != nil || st.Flushed != 1 {
		t.Fatalf("flush after the delete: %+v %v", st, err)
	}
	sink.mu.Lock()
	got := sink.got[fmt.Sprintf("%d/%s", u, a)]
	sink.mu.Unlock()
	if got != 1 {
		t.Fatalf("the deleted item's read reached the sink %d times, want 1", got)
	}
	b := th.notifyWith(t, 150, "", u)
	th.notifyWith(t, 150, "", u)
	th.notifyWith(t, 150, "", u) // the third: b drops out
	f := s.nextMatching(t, wait, func(f frame) bool {
		return f.Event == inbox.NotificationDeletedType && strings.Contains(f.Data, `"reason":"retention"`)
	})
	var d struct {
		NotificationIDs []string
		Counts          countsData
	}
	if err := json.Unmarshal([]byte(f.Data), &d); err != nil || len(d.NotificationIDs) != 1 || d.NotificationIDs[0] != b || d.Counts.Visible != 2 {
		t.Fatalf("retention: %s", f.Data)
	}
	if c := checkCountsMatchLists(t, th, u); c.Visible != 2 {
		t.Fatalf("after retention %+v", c)
	}
}

// Timers live in Redis: an expiry scheduled through one instance fires
// through the other's timer worker when the first is gone.
func TestLifecycle_TimersSurviveAnInstance(t *testing.T) {
	t.Parallel() // it mostly waits: see helpers_test.go
	rs := testredis.Start(t)
	a, b := startHub(t, rs.Addr(), nil), startHub(t, rs.Addr(), nil)
	const u = 62
	s := b.userStream(t, u, "")
	s.next(t, wait)
	s.nextCounts(t)
	id := a.notifyWith(t, 151, `"expiresAt":"`+time.Now().Add(5*time.Second).UTC().Format(time.RFC3339Nano)+`"`, u)
	s.next(t, wait) // created
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Hub.EndStreams(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Hub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f := s.nextMatching(t, 20*time.Second, func(f frame) bool { return f.Event == inbox.NotificationDeletedType })
	if !strings.Contains(f.Data, id) || !strings.Contains(f.Data, `"reason":"expired"`) {
		t.Fatalf("expiry after instance A closed: %s", f.Data)
	}
}
