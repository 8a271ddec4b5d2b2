package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testredis"
)

// userStream opens the user's own notification stream.
func (th *Hub) userStream(t testing.TB, user int64, lastEventID string) *SSEClient {
	t.Helper()
	return OpenSSE(t, th.URL+"/api/v1/notifications/stream", th.Token(t, user), lastEventID)
}

// settledUserStream opens the user's stream and reads past its opening: the
// first event and the counts.
func (th *Hub) settledUserStream(t testing.TB, user int64) *SSEClient {
	t.Helper()
	s := th.userStream(t, user, "")
	s.Next(t, Wait)
	s.nextCounts(t)
	return s
}

type createdData struct {
	inbox.Notification
	Unread int64 `json:"unread"`
}

type readData struct {
	NotificationIDs []string `json:"notificationIds"`
	ReadAt          string   `json:"readAt"`
	Unread          int64    `json:"unread"`
}

func decodeFrame[T any](t testing.TB, f Frame, typ string) T {
	t.Helper()
	var v T
	if f.Event != typ {
		t.Fatalf("got %+v, want %s", f, typ)
	}
	if err := json.Unmarshal([]byte(f.Data), &v); err != nil {
		t.Fatalf("%s data %s: %v", typ, f.Data, err)
	}
	return v
}

func TestUserStream_CountCreatedAndReadAcrossInstances(t *testing.T) {
	rs := testredis.Start(t)
	a := Start(t, rs.Addr(), nil)
	b := Start(t, rs.Addr(), nil)
	a.notify(t, 90, "comment.created", 20)
	a.notify(t, 90, "comment.created", 20)

	tab1 := b.userStream(t, 20, "")
	f := tab1.Next(t, Wait)
	if f.ID != "" || decodeFrame[struct{ Count int64 }](t, f, inbox.NotificationUnreadType).Count != 2 {
		t.Fatalf("first frame %+v, want notification.unread {count:2} without id", f)
	}
	if n := tab1.nextCounts(t); n.Unread != 2 || n.Visible != 2 || n.Unseen != 2 {
		t.Fatalf("second frame: counts %+v, want 2 visible, unread, unseen", n)
	}
	res := a.notify(t, 91, "like.toggled", 20)
	f = tab1.Next(t, Wait)
	c := decodeFrame[createdData](t, f, inbox.NotificationCreatedType)
	if f.ID == "" || c.NotificationID != "91:"+res.StreamID || c.RoomID != 91 || c.EventType != "like.toggled" ||
		string(c.Data) != `{"k":1}` || c.ReadAt != nil || c.Unread != 3 || c.Timestamp == "" {
		t.Fatalf("notification.created %+v %s", f, f.Data)
	}
	tab2 := a.userStream(t, 20, "")
	tab2.Next(t, Wait) // its count
	tab2.nextCounts(t)
	code, _ := a.userDo(t, http.MethodPatch, "/api/v1/notifications/"+c.NotificationID+"/read", 20, "")
	if code != 200 {
		t.Fatalf("read: %d", code)
	}
	for name, tab := range map[string]*SSEClient{"tab on hub B": tab1, "tab on hub A": tab2} {
		f := tab.Next(t, Wait)
		r := decodeFrame[readData](t, f, inbox.NotificationReadType)
		if f.ID == "" || len(r.NotificationIDs) != 1 || r.NotificationIDs[0] != c.NotificationID || r.ReadAt == "" || r.Unread != 2 {
			t.Fatalf("%s: notification.read %+v", name, f)
		}
	}
	// Another user's stream hears nothing of it.
	other := b.userStream(t, 21, "")
	other.Next(t, Wait)
	other.nextCounts(t)
	a.notify(t, 91, "like.toggled", 22)
	marker := a.notify(t, 91, "like.toggled", 21)
	if c := decodeFrame[createdData](t, other.Next(t, Wait), inbox.NotificationCreatedType); c.NotificationID != "91:"+marker.StreamID {
		t.Fatalf("user 21 got %+v", c)
	}
}

func TestUserStream_ResumesByLastEventID(t *testing.T) {
	rs := testredis.Start(t)
	a := Start(t, rs.Addr(), nil)
	b := Start(t, rs.Addr(), nil)
	s := a.userStream(t, 23, "")
	s.Next(t, Wait)
	s.nextCounts(t)
	a.notify(t, 92, "comment.created", 23)
	last := s.Next(t, Wait).ID
	s.Close()
	var missed []string
	for i := 0; i < 3; i++ {
		missed = append(missed, "92:"+a.notify(t, 92, "comment.created", 23).StreamID)
	}
	// expect reads the count, then exactly want in order, each with its unread.
	expect := func(r *SSEClient, count int64, want []string) {
		t.Helper()
		if n := decodeFrame[struct{ Count int64 }](t, r.Next(t, Wait), inbox.NotificationUnreadType).Count; n != count {
			t.Fatalf("count %d, want %d", n, count)
		}
		r.nextCounts(t)
		for i, id := range want {
			c := decodeFrame[createdData](t, r.Next(t, Wait), inbox.NotificationCreatedType)
			if c.NotificationID != id || c.Unread != count-int64(len(want)-1-i) {
				t.Fatalf("replayed %d: %+v, want %s", i, c, id)
			}
		}
	}
	byHeader := b.userStream(t, 23, last)
	expect(byHeader, 4, missed)
	live := "92:" + a.notify(t, 92, "comment.created", 23).StreamID
	if c := decodeFrame[createdData](t, byHeader.Next(t, Wait), inbox.NotificationCreatedType); c.NotificationID != live {
		t.Fatalf("live after catch-up: %+v, want %s", c, live)
	}
	byQuery := OpenSSE(t, b.URL+"/api/v1/notifications/stream?lastEventId="+last, b.Token(t, 23), "")
	expect(byQuery, 5, append(missed, live))
	for _, id := range []string{"x", "1-x"} {
		if code, _ := a.userDo(t, http.MethodGet, "/api/v1/notifications/stream?lastEventId="+id, 23, ""); code != 400 {
			t.Fatalf("lastEventId %s: %d, want 400", id, code)
		}
	}
}

func TestUserStream_GapWhenLogTrimmed(t *testing.T) {
	th := StartTrimming(t, func(c *Configs) { c.Inbox.MaxEntries = 10 })
	s := th.settledUserStream(t, 24)
	th.notify(t, 93, "comment.created", 24)
	first := s.Next(t, Wait).ID
	s.Close()
	var last string
	for i := 0; i < 40; i++ {
		last = "93:" + th.notify(t, 93, "comment.created", 24).StreamID
	}
	r := th.userStream(t, 24, first)
	r.Next(t, Wait) // the count
	r.nextCounts(t)
	// A user stream is a connection but not a room.
	if _, env := th.Get(t, "/health", ""); fmt.Sprint(env.Result.(map[string]any)["activeRooms"], env.Result.(map[string]any)["activeConnections"]) != "0 1" {
		t.Fatalf("health with one user stream: %v", env.Result)
	}
	f := r.Next(t, Wait)
	if f.Event != hub.GapEventType || f.ID != "" {
		t.Fatalf("after the count came %+v, want system.gap", f)
	}
	for {
		f := r.Next(t, Wait)
		if f.Event == inbox.NotificationDeletedType { // INBOX_MAX_ENTRIES trims the oldest
			if !strings.Contains(f.Data, `"reason":"retention"`) {
				t.Fatalf("a deletion that is not the retention's: %s", f.Data)
			}
			continue
		}
		if c := decodeFrame[createdData](t, f, inbox.NotificationCreatedType); c.NotificationID == last {
			break
		}
	}
}

func TestMute_HeldBackOnRoomStreamsAndInboxAcrossInstances(t *testing.T) {
	rs := testredis.Start(t)
	a := Start(t, rs.Addr(), nil)
	b := Start(t, rs.Addr(), nil)
	muter := b.OpenStream(t, 94, 30, "")
	other := b.OpenStream(t, 94, 31, "")
	put := func(body string) (int, Envelope) {
		return a.userDo(t, http.MethodPut, "/api/v1/notifications/settings", 30, body)
	}
	if code, env := put(`{"mutedEventTypes":["comment.created","comment.created"]}`); code != 200 ||
		fmt.Sprint(env.Result) != "map[channels:map[] mutedEventTypes:[comment.created] quietHours:<nil>]" {
		t.Fatalf("PUT settings: %d %+v", code, env)
	}
	if code, env := b.userDo(t, http.MethodGet, "/api/v1/notifications/settings", 30, ""); code != 200 ||
		fmt.Sprint(env.Result) != "map[channels:map[] mutedEventTypes:[comment.created] quietHours:<nil>]" {
		t.Fatalf("GET settings: %d %+v", code, env)
	}
	// The inbox is muted at once; hub B's stream as soon as it heard of it.
	Eventually(t, Wait, "hub B holds comment.created back", func() bool {
		a.notify(t, 94, "comment.created", 30, 31)
		marker := a.notify(t, 94, "like.toggled")
		for {
			f := muter.Next(t, Wait)
			if f.ID == marker.StreamID {
				return true
			}
			if f.Event == "comment.created" {
				for f.ID != marker.StreamID {
					f = muter.Next(t, Wait)
				}
				return false
			}
		}
	})
	if n := a.unreadOf(t, 30); n != 0 {
		t.Fatalf("muted user's unread = %d, want 0", n)
	}
	if n := a.unreadOf(t, 31); n == 0 {
		t.Fatal("the other recipient got nothing")
	}
	if f := other.Next(t, Wait); f.Event != "comment.created" {
		t.Fatalf("the other user's stream got %+v first", f)
	}
	if code, _ := put(`{"mutedEventTypes":[]}`); code != 200 {
		t.Fatal("unmute")
	}
	Eventually(t, Wait, "hub B delivers comment.created again", func() bool {
		res := a.notify(t, 94, "comment.created", 30)
		marker := a.notify(t, 94, "like.toggled")
		got := false
		for {
			f := muter.Next(t, Wait)
			if f.ID == res.StreamID {
				got = true
			}
			if f.ID == marker.StreamID {
				return got
			}
		}
	})
	if n := a.unreadOf(t, 30); n == 0 {
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

// countsData is the counts as the inbox events carry them.
type countsData struct {
	Version                                    int64
	Visible, Unread, Unseen, Archived, Snoozed int64
	ByTag, BySeverity                          map[string]struct{ Visible, Unread, Unseen int64 }
}

// nextCounts reads the notification.counts frame that follows
// notification.unread when a stream with the user's notifications opens.
func (c *SSEClient) nextCounts(t testing.TB) countsData {
	t.Helper()
	f := c.Next(t, Wait)
	if f.Event != inbox.NotificationCountsType || f.ID != "" {
		t.Fatalf("got %+v, want notification.counts without id", f)
	}
	var n countsData
	if err := json.Unmarshal([]byte(f.Data), &n); err != nil || n.Version == 0 {
		t.Fatalf("notification.counts %s: %v", f.Data, err)
	}
	return n
}
