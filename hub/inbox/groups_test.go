package inbox_test

import (
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

// Groups: events with one groupKey join the recipient's open group (unread,
// visible, younger than the window from its first event): one item that
// counts once, keeps its notificationId, moves to the top unseen, with the
// last actors; a retry never joins twice; a read or archived group, or one
// past its window, is not joined.
func TestLifecycle_Groups(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	const u = 60
	s := th.SettledUserStream(t, u)
	publish := func(publisher int, extra string) (int, string) {
		t.Helper()
		code, env := th.PublishRaw(t, fmt.Sprintf(`{"roomId":140,"eventType":"comment.created","data":{"by":%d},"publisherId":%d,"recipientIds":[%d],"groupKey":"post:1"%s}`,
			publisher, publisher, u, extra))
		var r hub.PublishResult
		testhub.Remarshal(t, env.Result, &r)
		return code, "140:" + r.StreamID
	}
	other := th.NotifyWith(t, 141, "", u)
	s.Next(t, testhub.Wait)
	_, first := publish(1, "")
	if f := s.Next(t, testhub.Wait); f.Event != inbox.NotificationCreatedType || !strings.Contains(f.Data, `"group":{"key":"post:1","count":1,"actors":["1"],"first":"`+first+`"}`) {
		t.Fatalf("the group's first event: %+v", f)
	}
	th.Act(t, u, first, "seen", "")
	s.Next(t, testhub.Wait)
	publish(2, "")
	publish(3, `,"idempotencyKey":"g3"`)
	if code, _ := publish(3, `,"idempotencyKey":"g3"`); code != 200 { // a retry: a duplicate, not a join
		t.Fatalf("retry: %d", code)
	}
	publish(1, "")
	for range 3 {
		if f := s.Next(t, testhub.Wait); f.Event != inbox.NotificationUpdatedType {
			t.Fatalf("a join: %+v, want notification.updated", f)
		}
	}
	items := th.ListOf(t, u, "")
	g := items[0]
	if len(items) != 2 || g.NotificationID != first || g.Group == nil || g.Group.Count != 4 ||
		strings.Join(g.Group.Actors, ",") != "1,3,2" || g.Group.First != first || g.SeenAt != nil || string(g.Data) != `{"by":1}` {
		t.Fatalf("the group %+v %+v", items, g.Group)
	}
	if c := checkCountsMatchLists(t, th, u); c.Visible != 2 || c.Unread != 2 {
		t.Fatalf("a group counts once: %+v", c)
	}
	// Read: the next event starts a new group.
	if code, env := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+first+"/read", u, ""); code != 200 {
		t.Fatalf("read: %d %+v", code, env)
	}
	_, second := publish(2, "")
	if items := th.ListOf(t, u, ""); len(items) != 3 || items[0].NotificationID != second || items[0].Group.Count != 1 {
		t.Fatalf("after a read group %+v", items)
	}
	// Archived: not joined either.
	th.Act(t, u, second, "archive", "")
	_, third := publish(2, "")
	if items := th.ListOf(t, u, ""); items[0].NotificationID != third || items[0].Group.Count != 1 {
		t.Fatalf("after an archived group %+v", items[0])
	}
	// Past the window (counted from the group's first event): a new group.
	rec, _ := testredis.Do(t, th.Redis, "HGET", inbox.GroupsKey(u), "g:"+third).ToString()
	_, rest, _ := strings.Cut(rec, "\t")
	old := strconv.FormatInt(time.Now().Add(-2*time.Hour).UnixMilli(), 10)
	testredis.Do(t, th.Redis, "HSET", inbox.GroupsKey(u), "g:"+third, old+"\t"+rest)
	_, fourth := publish(2, "")
	if items := th.ListOf(t, u, ""); items[0].NotificationID != fourth || items[0].Group.Count != 1 {
		t.Fatalf("past the window %+v", items[0])
	}
	publish(2, `,"groupWindowSecs":86400`)
	if items := th.ListOf(t, u, ""); items[0].NotificationID != fourth || items[0].Group.Count != 2 {
		t.Fatalf("within the window %+v", items[0])
	}
	if c := checkCountsMatchLists(t, th, u); c.Visible != 4 || c.Archived != 1 || c.Unread != 3 {
		t.Fatalf("counts %+v (visible: %s, the read group, the one past its window, the last)", c, other)
	}
	for _, body := range []string{`"groupKey":"no spaces"`, `"groupKey":""`, `"groupWindowSecs":60`, `"groupKey":"k","groupWindowSecs":0`,
		`"groupKey":"k","groupWindowSecs":86401`} {
		if code, env := th.PublishRaw(t, `{"roomId":140,"eventType":"comment.created","data":{},"recipientIds":[60],`+body+`}`); code != 400 || env.Code != "COMMON400" {
			t.Errorf("publish with %s: %d %s, want 400", body, code, env.Code)
		}
	}
}
