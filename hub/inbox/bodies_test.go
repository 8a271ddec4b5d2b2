package inbox_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// An event's body is kept once for all its recipients; each item holds
// only a reference, yet lists, groups and the log show the whole item.
func TestBodies_KeptOnceForAllRecipients(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	id := "99:" + th.NotifyExtra(t, 99, "comment.created", `"groupKey":"post-1"`, 40, 41, 42).StreamID
	body, _ := testredis.Do(t, th.Redis, "GET", inbox.BodyPrefix+id).ToString()
	if !strings.HasPrefix(body, `{"notificationId":"`+id+`","roomId":99,"eventType":"comment.created"`) {
		t.Fatalf("the body kept: %q", body)
	}
	retention := int64(th.Cfg.Inbox.Retention / time.Second)
	if ttl, _ := testredis.Do(t, th.Redis, "TTL", inbox.BodyPrefix+id).AsInt64(); ttl <= retention {
		t.Fatalf("the body lives %d s, not longer than the retention (%d s)", ttl, retention)
	}
	for _, u := range []int64{40, 41, 42} {
		if v, err := testredis.Do(t, th.Redis, "HGET", inbox.ItemsKey(u), id).ToString(); err != nil || strings.Trim(v, "0123456789") != "" {
			t.Fatalf("user %d's item holds %q (%v), want its place alone (a small inbox's)", u, v, err)
		}
		if l := th.ListOf(t, u, ""); len(l) != 1 || l[0].NotificationID != id || l[0].EventType != "comment.created" || string(l[0].Data) != `{"k":1}` {
			t.Fatalf("user %d's list: %+v", u, l)
		}
	}
	// A second event of the group: the item shows its body, under its own id.
	next := "98:" + th.NotifyExtra(t, 98, "like.toggled", `"groupKey":"post-1"`, 40).StreamID
	if v, _ := testredis.Do(t, th.Redis, "HGET", inbox.ItemsKey(40), id).ToString(); strings.TrimLeft(v, "0123456789") != "\t"+next {
		t.Fatalf("the group item holds %q, want a reference to %s", v, next)
	}
	l := th.ListOf(t, 40, "")
	if len(l) != 1 || l[0].NotificationID != id || l[0].RoomID != 98 || l[0].EventType != "like.toggled" || l[0].Group == nil || l[0].Group.Count != 2 {
		t.Fatalf("the group after a second event: %+v", l)
	}
	if l := th.ListOf(t, 40, "eventType=like.toggled&roomId=98"); len(l) != 1 {
		t.Fatalf("filtered by the shown event's type and room: %+v", l)
	}
}

// While a hub older than this version lives (its id has no version), items
// hold their bodies as it reads them; once it is gone they are kept once.
func TestBodies_HeldByItemsWhileAnOlderHubLives(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.PresenceUserTTL = 600 * time.Millisecond })
	old := "0123456789abcdef" // an older hub's id: 16 hex digits
	testredis.Do(t, th.Redis, "ZADD", hub.PresenceInstancesKey, "99999999999999", old)
	testhub.Eventually(t, testhub.Wait, "the older hub is seen", func() bool { return th.Hub.FleetVersion() == 0 })
	held := "97:" + th.Notify(t, 97, "comment.created", 43).StreamID
	if v, _ := testredis.Do(t, th.Redis, "HGET", inbox.ItemsKey(43), held).ToString(); !strings.HasPrefix(v, `{"notificationId":"`+held+`"`) {
		t.Fatalf("with an older hub alive the item holds %q, want its body", v)
	}
	if n, _ := testredis.Do(t, th.Redis, "EXISTS", inbox.BodyPrefix+held).AsInt64(); n != 0 {
		t.Fatal("a body kept apart while an older hub lives")
	}
	testredis.Do(t, th.Redis, "ZREM", hub.PresenceInstancesKey, old)
	testhub.Eventually(t, testhub.Wait, "the older hub is gone", func() bool { return th.Hub.FleetVersion() == hub.InstanceVersion })
	shared := "97:" + th.Notify(t, 97, "comment.created", 43).StreamID
	if v, _ := testredis.Do(t, th.Redis, "HGET", inbox.ItemsKey(43), shared).ToString(); strings.TrimLeft(v, "0123456789") != "" {
		t.Fatalf("once the older hub is gone the item holds %q, want a reference", v)
	}
	if l := th.ListOf(t, 43, ""); len(l) != 2 || l[0].NotificationID != shared || l[1].NotificationID != held || string(l[1].Data) != `{"k":1}` {
		t.Fatalf("both kinds listed: %+v", l)
	}
	if code, _ := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+held+"/read", 43, ""); code != 200 {
		t.Fatalf("read of a held item: %d", code)
	}
}
