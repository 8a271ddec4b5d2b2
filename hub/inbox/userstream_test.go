package inbox_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestUserStream_CountCreatedAndReadAcrossInstances(t *testing.T) {
	rs := testredis.Start(t)
	a := testhub.Start(t, rs.Addr(), nil)
	b := testhub.Start(t, rs.Addr(), nil)
	a.Notify(t, 90, "comment.created", 20)
	a.Notify(t, 90, "comment.created", 20)

	tab1 := b.UserStream(t, 20, "")
	f := tab1.Next(t, testhub.Wait)
	if f.ID != "" || testhub.DecodeFrame[struct{ Count int64 }](t, f, inbox.NotificationUnreadType).Count != 2 {
		t.Fatalf("first frame %+v, want notification.unread {count:2} without id", f)
	}
	if n := tab1.NextCounts(t); n.Unread != 2 || n.Visible != 2 || n.Unseen != 2 {
		t.Fatalf("second frame: counts %+v, want 2 visible, unread, unseen", n)
	}
	res := a.Notify(t, 91, "like.toggled", 20)
	f = tab1.Next(t, testhub.Wait)
	c := testhub.DecodeFrame[testhub.CreatedData](t, f, inbox.NotificationCreatedType)
	if f.ID == "" || c.NotificationID != "91:"+res.StreamID || c.RoomID != 91 || c.EventType != "like.toggled" ||
		string(c.Data) != `{"k":1}` || c.ReadAt != nil || c.Unread != 3 || c.Timestamp == "" {
		t.Fatalf("notification.created %+v %s", f, f.Data)
	}
	tab2 := a.UserStream(t, 20, "")
	tab2.Next(t, testhub.Wait) // its count
	tab2.NextCounts(t)
	code, _ := a.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+c.NotificationID+"/read", 20, "")
	if code != 200 {
		t.Fatalf("read: %d", code)
	}
	for name, tab := range map[string]*testhub.SSEClient{"tab on hub B": tab1, "tab on hub A": tab2} {
		f := tab.Next(t, testhub.Wait)
		r := testhub.DecodeFrame[testhub.ReadData](t, f, inbox.NotificationReadType)
		if f.ID == "" || len(r.NotificationIDs) != 1 || r.NotificationIDs[0] != c.NotificationID || r.ReadAt == "" || r.Unread != 2 {
			t.Fatalf("%s: notification.read %+v", name, f)
		}
	}
	// Another user's stream hears nothing of it.
	other := b.UserStream(t, 21, "")
	other.Next(t, testhub.Wait)
	other.NextCounts(t)
	a.Notify(t, 91, "like.toggled", 22)
	marker := a.Notify(t, 91, "like.toggled", 21)
	if c := testhub.DecodeFrame[testhub.CreatedData](t, other.Next(t, testhub.Wait), inbox.NotificationCreatedType); c.NotificationID != "91:"+marker.StreamID {
		t.Fatalf("user 21 got %+v", c)
	}
}

func TestUserStream_ResumesByLastEventID(t *testing.T) {
	rs := testredis.Start(t)
	a := testhub.Start(t, rs.Addr(), nil)
	b := testhub.Start(t, rs.Addr(), nil)
	s := a.UserStream(t, 23, "")
	s.Next(t, testhub.Wait)
	s.NextCounts(t)
	a.Notify(t, 92, "comment.created", 23)
	last := s.Next(t, testhub.Wait).ID
	s.Close()
	var missed []string
	for i := 0; i < 3; i++ {
		missed = append(missed, "92:"+a.Notify(t, 92, "comment.created", 23).StreamID)
	}
	// expect reads the count, then exactly want in order, each with its unread.
	expect := func(r *testhub.SSEClient, count int64, want []string) {
		t.Helper()
		if n := testhub.DecodeFrame[struct{ Count int64 }](t, r.Next(t, testhub.Wait), inbox.NotificationUnreadType).Count; n != count {
			t.Fatalf("count %d, want %d", n, count)
		}
		r.NextCounts(t)
		for i, id := range want {
			c := testhub.DecodeFrame[testhub.CreatedData](t, r.Next(t, testhub.Wait), inbox.NotificationCreatedType)
			if c.NotificationID != id || c.Unread != count-int64(len(want)-1-i) {
				t.Fatalf("replayed %d: %+v, want %s", i, c, id)
			}
		}
	}
	byHeader := b.UserStream(t, 23, last)
	expect(byHeader, 4, missed)
	live := "92:" + a.Notify(t, 92, "comment.created", 23).StreamID
	if c := testhub.DecodeFrame[testhub.CreatedData](t, byHeader.Next(t, testhub.Wait), inbox.NotificationCreatedType); c.NotificationID != live {
		t.Fatalf("live after catch-up: %+v, want %s", c, live)
	}
	byQuery := testhub.OpenSSE(t, b.URL+"/api/v1/notifications/stream?lastEventId="+last, b.Token(t, 23), "")
	expect(byQuery, 5, append(missed, live))
	for _, id := range []string{"x", "1-x"} {
		if code, _ := a.UserDo(t, http.MethodGet, "/api/v1/notifications/stream?lastEventId="+id, 23, ""); code != 400 {
			t.Fatalf("lastEventId %s: %d, want 400", id, code)
		}
	}
}

func TestUserStream_GapWhenLogTrimmed(t *testing.T) {
	th := testhub.StartTrimming(t, func(c *testhub.Configs) { c.Inbox.MaxEntries = 10 })
	s := th.SettledUserStream(t, 24)
	th.Notify(t, 93, "comment.created", 24)
	first := s.Next(t, testhub.Wait).ID
	s.Close()
	var last string
	for i := 0; i < 40; i++ {
		last = "93:" + th.Notify(t, 93, "comment.created", 24).StreamID
	}
	r := th.UserStream(t, 24, first)
	r.Next(t, testhub.Wait) // the count
	r.NextCounts(t)
	// A user stream is a connection but not a room.
	if _, env := th.Get(t, "/health", ""); fmt.Sprint(env.Result.(map[string]any)["activeRooms"], env.Result.(map[string]any)["activeConnections"]) != "0 1" {
		t.Fatalf("health with one user stream: %v", env.Result)
	}
	f := r.Next(t, testhub.Wait)
	if f.Event != hub.GapEventType || f.ID != "" {
		t.Fatalf("after the count came %+v, want system.gap", f)
	}
	for {
		f := r.Next(t, testhub.Wait)
		if f.Event == inbox.NotificationDeletedType { // INBOX_MAX_ENTRIES trims the oldest
			if !strings.Contains(f.Data, `"reason":"retention"`) {
				t.Fatalf("a deletion that is not the retention's: %s", f.Data)
			}
			continue
		}
		if c := testhub.DecodeFrame[testhub.CreatedData](t, f, inbox.NotificationCreatedType); c.NotificationID == last {
			break
		}
	}
}

func TestMute_HeldBackOnRoomStreamsAndInboxAcrossInstances(t *testing.T) {
	rs := testredis.Start(t)
	a := testhub.Start(t, rs.Addr(), nil)
	b := testhub.Start(t, rs.Addr(), nil)
	muter := b.OpenStream(t, 94, 30, "")
	other := b.OpenStream(t, 94, 31, "")
	put := func(body string) (int, api.Envelope) {
		return a.UserDo(t, http.MethodPut, "/api/v1/notifications/settings", 30, body)
	}
	if code, env := put(`{"mutedEventTypes":["comment.created","comment.created"]}`); code != 200 ||
		fmt.Sprint(env.Result) != "map[channels:map[] mutedEventTypes:[comment.created] quietHours:<nil>]" {
		t.Fatalf("PUT settings: %d %+v", code, env)
	}
	if code, env := b.UserDo(t, http.MethodGet, "/api/v1/notifications/settings", 30, ""); code != 200 ||
		fmt.Sprint(env.Result) != "map[channels:map[] mutedEventTypes:[comment.created] quietHours:<nil>]" {
		t.Fatalf("GET settings: %d %+v", code, env)
	}
	// The inbox is muted at once; hub B's stream as soon as it heard of it.
	testhub.Eventually(t, testhub.Wait, "hub B holds comment.created back", func() bool {
		a.Notify(t, 94, "comment.created", 30, 31)
		marker := a.Notify(t, 94, "like.toggled")
		for {
			f := muter.Next(t, testhub.Wait)
			if f.ID == marker.StreamID {
				return true
			}
			if f.Event == "comment.created" {
				for f.ID != marker.StreamID {
					f = muter.Next(t, testhub.Wait)
				}
				return false
			}
		}
	})
	if n := a.UnreadOf(t, 30); n != 0 {
		t.Fatalf("muted user's unread = %d, want 0", n)
	}
	if n := a.UnreadOf(t, 31); n == 0 {
		t.Fatal("the other recipient got nothing")
	}
	if f := other.Next(t, testhub.Wait); f.Event != "comment.created" {
		t.Fatalf("the other user's stream got %+v first", f)
	}
	if code, _ := put(`{"mutedEventTypes":[]}`); code != 200 {
		t.Fatal("unmute")
	}
	testhub.Eventually(t, testhub.Wait, "hub B delivers comment.created again", func() bool {
		res := a.Notify(t, 94, "comment.created", 30)
		marker := a.Notify(t, 94, "like.toggled")
		got := false
		for {
			f := muter.Next(t, testhub.Wait)
			if f.ID == res.StreamID {
				got = true
			}
			if f.ID == marker.StreamID {
				return got
			}
		}
	})
	if n := a.UnreadOf(t, 30); n == 0 {
		t.Fatal("unmuted, the inbox still gets nothing")
	}
	for _, c := range []struct {
		body, code string
	}{{`{"mutedEventTypes":["presence.update"]}`, "NOTIF4001"}, {`{"mutedEventTypes":["nope"]}`, "NOTIF4001"},
		{`{"mutedEventTypes":"x"}`, "COMMON400"}, {`{}`, "COMMON400"}, {`nope`, "COMMON400"}} {
		if _, env := put(c.body); env.Code != c.code {
			t.Errorf("PUT %s: %s, want %s", c.body, env.Code, c.code)
		}
	}
}
