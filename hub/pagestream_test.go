package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/sse"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// pageData is what the tests' events carry, with the page stream's additions.
type pageData struct {
	K             string `json:"k"`
	N             *int   `json:"n"`
	RoomID        int64  `json:"roomId"`
	Notifications bool   `json:"notifications"`
}

func dataOf(t testing.TB, f testhub.Frame) pageData {
	t.Helper()
	var d pageData
	if err := json.Unmarshal([]byte(f.Data), &d); err != nil {
		t.Fatalf("%s data %q: %v", f.Event, f.Data, err)
	}
	return d
}

// nextRoomEvent returns the next frame that is neither presence nor a comment.
func nextComment(t testing.TB, c *testhub.SSEClient) (testhub.Frame, pageData) {
	t.Helper()
	for {
		f := c.Next(t, testhub.Wait)
		if f.Event == "comment.created" {
			return f, dataOf(t, f)
		}
	}
}

func TestPageStream_Validation(t *testing.T) {
	th := testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) { c.StreamMaxRooms = 3 })
	tok := th.Token(t, 1)
	for _, c := range []struct{ query, lastID string }{
		{"", ""},
		{"rooms=", ""},
		{"notifications=false", ""},
		{"rooms=1,", ""},
		{"rooms=,1", ""},
		{"rooms=1,,2", ""},
		{"rooms=0", ""},
		{"rooms=-1", ""},
		{"rooms=abc", ""},
		{"rooms=1%202", ""},
		{"rooms=99999999999999999999", ""},
		{"rooms=1,2,3,4", ""},
		{"rooms=1&notifications=yes", ""},
		{"rooms=1&notifications=TRUE", ""},
		{"rooms=1&notifications=", ""},
		{"rooms=1", "1700000000000-0"}, // a plain stream id
		{"rooms=1", "p1"},
		{"rooms=1", "p2,1:1-0"},
		{"rooms=1", "p1,1:abc"},
		{"rooms=1", "p1,1:5"},
		{"rooms=1", "p1,x:1-0"},
		{"rooms=1", "p1,0:1-0"},
		{"rooms=1", "p1,1:1-0,1:2-0"},
		{"rooms=1", "p1,n:1-0,n:2-0"},
		{"rooms=1", "p1,1:18446744073709551615-18446744073709551615"},
		{"rooms=1", "p1,,1:1-0"},
	} {
		req, _ := http.NewRequest(http.MethodGet, th.URL+"/api/v1/stream?"+c.query, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if c.lastID != "" {
			req.Header.Set("Last-Event-ID", c.lastID)
		}
		resp, err := testhub.HTTPClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var env api.Envelope
		_ = json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if resp.StatusCode != 400 || env.Code != "COMMON400" {
			t.Errorf("%q (Last-Event-ID %q): %d %s, want 400 COMMON400", c.query, c.lastID, resp.StatusCode, env.Code)
		}
	}
	// Repeats are dropped before counting; notifications alone is a stream.
	for _, q := range []string{"rooms=1,2,3,3,1", "notifications=true", "rooms=1&notifications=false"} {
		c := th.PageStream(t, 1, q, "")
		c.Close()
	}
}

// One denied room refuses the whole stream before any SSE byte, naming the
// room, and the user is made present nowhere.
func TestPageStream_DeniedRoomRefusedBeforeAnyByte(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.RoomAuth = hub.RoomAuthClaim })
	tok, err := th.Tokens.Sign(7, time.Hour, []any{42})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, th.URL+"/api/v1/stream?rooms=42,43&notifications=true", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := testhub.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var env api.Envelope
	_ = json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	if resp.StatusCode != 403 || env.Code != "COMMON403" || !strings.Contains(env.Message, "43") {
		t.Fatalf("denied: %d %s %q, want 403 COMMON403 naming room 43", resp.StatusCode, env.Code, env.Message)
	}
	if n, _ := testredis.Do(t, th.Redis, "HLEN", hub.PresenceKey(42)).AsInt64(); n != 0 {
		t.Fatalf("a refused stream made %d users present in room 42", n)
	}
}

// Room events carry their roomId, rooms not asked for send nothing, and the
// notification members are exactly the user stream's.
func TestPageStream_RoomsAndNotifications(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	th.Notify(t, 104, "comment.created", 5) // one unread before the stream opens
	c := th.PageStream(t, 5, "rooms=101,102&notifications=true", "")
	f := c.Next(t, testhub.Wait)
	if f.Event != inbox.NotificationUnreadType || f.ID != "" || f.Data != `{"count":1}` {
		t.Fatalf("first frame %+v, want notification.unread {count:1} without id", f)
	}
	if n := c.NextCounts(t); n.Unread != 1 || n.Visible != 1 {
		t.Fatalf("second frame: counts %+v, want 1 visible unread", n)
	}
	th.Pub(t, 103, "not asked")
	th.Pub(t, 101, "a")
	th.Pub(t, 102, "b")
	res := th.Notify(t, 104, "comment.created", 5)
	got := map[string]int64{}
	var created testhub.Frame
	for len(got) < 2 || created.Event == "" {
		f := c.Next(t, testhub.Wait)
		switch f.Event {
		case "comment.created":
			d := dataOf(t, f)
			if d.K == "not asked" {
				t.Fatalf("an event of room 103, not asked for: %+v", f)
			}
			got[d.K] = d.RoomID
			if !strings.Contains(f.Data, `"timestamp":`) || !sse.PageIDChars.MatchString(f.ID) || !strings.HasPrefix(f.ID, "p1,") {
				t.Fatalf("room event %+v", f)
			}
		case inbox.NotificationCreatedType:
			created = f
		default:
			t.Fatalf("unexpected %+v", f)
		}
	}
	if got["a"] != 101 || got["b"] != 102 {
		t.Fatalf("roomId in data: %v", got)
	}
	cd := testhub.DecodeFrame[testhub.CreatedData](t, created, inbox.NotificationCreatedType)
	if cd.NotificationID != "104:"+res.StreamID || cd.Unread != 2 || created.ID == "" {
		t.Fatalf("notification.created %+v", created)
	}
	// presence.update carries the room too.
	p := th.PageStream(t, 6, "rooms=101", "")
	f = p.NextPresence(t, testhub.Wait)
	if d := dataOf(t, f); d.RoomID != 101 {
		t.Fatalf("presence.update %+v", f)
	}
}

// Resume by header on another instance and by query on the same: exactly the
// missed events once each, per-room order, then live.
func TestPageStream_ResumeAnywhereExactlyOnce(t *testing.T) {
	rs := testredis.Start(t)
	a := testhub.Start(t, rs.Addr(), nil)
	b := testhub.Start(t, rs.Addr(), nil)
	c := a.PageStream(t, 8, "rooms=111,112&notifications=true", "")
	c.Next(t, testhub.Wait) // notification.unread
	c.NextCounts(t)
	a.Pub(t, 111, "111-0")
	a.Pub(t, 112, "112-0")
	var last string
	for seen := 0; seen < 2; {
		f, _ := nextComment(t, c)
		last, seen = f.ID, seen+1
	}
	c.Close()
	for i := 1; i <= 3; i++ {
		a.Pub(t, 111, fmt.Sprintf("111-%d", i))
		a.Pub(t, 112, fmt.Sprintf("112-%d", i))
	}
	n := a.Notify(t, 113, "comment.created", 8)

	check := func(name string, c *testhub.SSEClient) string {
		t.Helper()
		if f := c.Next(t, testhub.Wait); f.Event != inbox.NotificationUnreadType {
			t.Fatalf("%s: first %+v", name, f)
		}
		c.NextCounts(t)
		want := map[int64][]string{111: {"111-1", "111-2", "111-3"}, 112: {"112-1", "112-2", "112-3"}}
		got := map[int64][]string{}
		var lastID string
		notified := false
		for len(got[111]) < 3 || len(got[112]) < 3 || !notified {
			f := c.Next(t, testhub.Wait)
			switch f.Event {
			case "comment.created":
				d := dataOf(t, f)
				got[d.RoomID] = append(got[d.RoomID], d.K)
			case inbox.NotificationCreatedType:
				if cd := testhub.DecodeFrame[testhub.CreatedData](t, f, f.Event); cd.NotificationID != "113:"+n.StreamID || notified {
					t.Fatalf("%s: notification %+v", name, f)
				}
				notified = true
			default:
				t.Fatalf("%s: unexpected %+v", name, f)
			}
			lastID = f.ID
		}
		for r, w := range want {
			if strings.Join(got[r], " ") != strings.Join(w, " ") {
				t.Fatalf("%s: room %d got %v, want %v", name, r, got[r], w)
			}
		}
		return lastID
	}
	onB := b.PageStream(t, 8, "rooms=111,112&notifications=true", last)
	afterB := check("by header on instance B", onB)
	onA := testhub.OpenSSE(t, a.URL+"/api/v1/stream?rooms=111,112&notifications=true&lastEventId="+last, a.Token(t, 8), "")
	check("by query on instance A", onA)
	// Then live, on both.
	a.Pub(t, 112, "live")
	for _, c := range []*testhub.SSEClient{onB, onA} {
		if _, d := nextComment(t, c); d.K != "live" || d.RoomID != 112 {
			t.Fatalf("live: %+v", d)
		}
	}
	// Resuming from the newest id sends nothing but what follows.
	again := b.PageStream(t, 8, "rooms=111,112&notifications=true", afterB)
	again.Next(t, testhub.Wait)
	if _, d := nextComment(t, again); d.K != "live" {
		t.Fatalf("after resuming from the newest id: %+v", d)
	}
}

// A trimmed room gets system.gap naming it; the others resume normally; a
// room the id does not name starts live.
func TestPageStream_GapPerRoomAndNewRoomsStartLive(t *testing.T) {
	th := testhub.StartTrimming(t, func(c *testhub.Configs) { c.StreamMaxLen = 10 })
	c := th.PageStream(t, 9, "rooms=121,122", "")
	th.Pub(t, 121, "121-first")
	th.Pub(t, 122, "122-first")
	var last string
	for i := 0; i < 2; i++ {
		f, _ := nextComment(t, c)
		last = f.ID
	}
	c.Close()
	for i := 0; i < 100; i++ {
		th.Pub(t, 121, fmt.Sprintf("121-%d", i))
	}
	th.Pub(t, 122, "122-next")
	th.Pub(t, 123, "123-before") // room 123 is not in the id: not replayed
	// The listener hears messages in order: once a later one reached a
	// stream, 123-before has come and gone (no local topic took it). Else it
	// could reach room 123's new topic while that reads its tail, and count
	// as published after the stream came.
	marker := th.OpenStream(t, 124, 9, "")
	if res := th.Pub(t, 124, "marker"); marker.NextMatching(t, testhub.Wait, func(f testhub.Frame) bool { return f.Event == "comment.created" }).ID != res {
		t.Fatal("the marker did not arrive")
	}
	r := th.PageStream(t, 9, "rooms=121,122,123", last)
	var gap *pageData
	got122 := ""
	n121 := 0
	for got122 == "" || n121 == 0 {
		f := r.Next(t, testhub.Wait)
		switch f.Event {
		case hub.GapEventType:
			d := dataOf(t, f)
			gap = &d
			if f.ID != "" {
				t.Fatalf("gap with an id: %+v", f)
			}
		case "comment.created":
			d := dataOf(t, f)
			switch d.RoomID {
			case 121:
				if gap == nil || gap.RoomID != 121 {
					t.Fatalf("room 121's events came without its system.gap first: %+v", gap)
				}
				n121++
			case 122:
				got122 = d.K
			default:
				t.Fatalf("unexpected %+v", d)
			}
		}
	}
	if got122 != "122-next" {
		t.Fatalf("room 122 resumed with %q, want 122-next", got122)
	}
	th.Pub(t, 123, "123-live")
	for {
		_, d := nextComment(t, r)
		if d.RoomID == 123 {
			if d.K != "123-live" {
				t.Fatalf("room 123 sent %q: not named by the id, it must start live", d.K)
			}
			break
		}
	}
}

// Ids name every room (those with nothing delivered yet too) and the log, use
// only the documented characters and stay under 2,048 bytes at 32 rooms.
func TestPageStream_IDShapeAt32Rooms(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	var rooms []string
	for r := 9223372036854775775; r <= 9223372036854775806; r++ { // the longest room ids
		rooms = append(rooms, fmt.Sprint(r))
	}
	for _, r := range rooms[:16] { // half the rooms have history
		th.Publish(t, mustRoom(r), "comment.created", map[string]any{})
	}
	th.Notify(t, 1, "comment.created", 10)
	c := th.PageStream(t, 10, "rooms="+strings.Join(rooms, ",")+"&notifications=true", "")
	th.Publish(t, mustRoom(rooms[31]), "comment.created", map[string]any{"k": "x"})
	f, _ := nextComment(t, c)
	if len(f.ID) >= 2048 || !sse.PageIDChars.MatchString(f.ID) {
		t.Fatalf("id of %d bytes: %q", len(f.ID), f.ID)
	}
	for _, r := range append(rooms, "n") {
		if !strings.Contains(f.ID, ","+r+":") {
			t.Fatalf("id does not name %s: %s", r, f.ID)
		}
	}
}

func mustRoom(s string) int64 {
	r, err := hub.ParseRoomID(s)
	if err != nil {
		panic(err)
	}
	return r
}

// A page stream is one connection toward the cap: five fit, the sixth evicts
// the oldest.
func TestPageStream_CountsOnceTowardTheCap(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	var streams []*testhub.SSEClient
	for i := 0; i < 5; i++ {
		streams = append(streams, th.PageStream(t, 11, "rooms=131,132,133&notifications=true", ""))
		time.Sleep(2 * time.Millisecond) // distinct open times: "oldest" is well defined
	}
	th.PageStream(t, 11, "rooms=131", "")
	rest := streams[0].Ended(t, testhub.Wait)
	last := rest[len(rest)-1]
	if last.Event != hub.EvictedEventType || !strings.Contains(last.Data, "connection limit") {
		t.Fatalf("the oldest ended with %+v", last)
	}
	th.Pub(t, 132, "still")
	for _, c := range streams[1:] {
		if _, d := nextComment(t, c); d.K != "still" {
			t.Fatalf("another stream: %+v", d)
		}
	}
}

// The user is present in every room of the stream while it is open, and
// leaves them all when it closes.
func TestPageStream_PresenceInEachRoom(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	c := th.PageStream(t, 12, "rooms=141,142", "")
	for _, r := range []int64{141, 142} {
		if p := th.PresenceList(t, r); p.Count != 1 || p.OnlineUsers[0].UserID != 12 {
			t.Fatalf("room %d presence %+v", r, p)
		}
	}
	c.Close()
	testhub.Eventually(t, testhub.Wait, "left both rooms", func() bool {
		return th.PresenceList(t, 141).Count == 0 && th.PresenceList(t, 142).Count == 0
	})
}

// A muted type is held back on the rooms' members.
func TestPageStream_MutedTypeHeldBack(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	if code, _ := th.UserDo(t, http.MethodPut, "/api/v1/notifications/settings", 13, `{"mutedEventTypes":["like.toggled"]}`); code != 200 {
		t.Fatalf("settings: %d", code)
	}
	c := th.PageStream(t, 13, "rooms=151", "")
	th.Publish(t, 151, "like.toggled", map[string]any{"k": "muted"})
	th.Pub(t, 151, "shown")
	if _, d := nextComment(t, c); d.K != "shown" {
		t.Fatalf("got %+v", d)
	}
}

// Rooms published to at once keep their own order on one page stream.
func TestPageStream_PerRoomOrderUnderInterleavedPublishing(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	c := th.PageStream(t, 14, "rooms=161,162,163", "")
	const each = 150
	var wg sync.WaitGroup
	for _, r := range []int64{161, 162, 163} {
		p := startPublisher(th, r, each)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p.count() < each {
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	next := map[int64]int{}
	for next[161] < each || next[162] < each || next[163] < each {
		f := c.Next(t, 20*time.Second)
		if f.Event != "comment.created" {
			continue
		}
		d := dataOf(t, f)
		if d.N == nil || *d.N != next[d.RoomID] {
			t.Fatalf("room %d: got n=%v, want %d", d.RoomID, d.N, next[d.RoomID])
		}
		next[d.RoomID]++
	}
	wg.Wait()
}

// The log member's gap carries "notifications":true; a room of the same page
// resumes normally.
func TestPageStream_GapOfTheLog(t *testing.T) {
	th := testhub.StartTrimming(t, func(c *testhub.Configs) { c.Inbox.MaxEntries = 10 })
	c := th.PageStream(t, 25, "rooms=201&notifications=true", "")
	c.Next(t, testhub.Wait) // the count
	c.NextCounts(t)
	th.Notify(t, 202, "comment.created", 25)
	first := c.Next(t, testhub.Wait).ID
	c.Close()
	for i := 0; i < 40; i++ {
		th.Notify(t, 202, "comment.created", 25)
	}
	th.Pub(t, 201, "after")
	r := th.PageStream(t, 25, "rooms=201&notifications=true", first)
	if f := r.Next(t, testhub.Wait); f.Event != inbox.NotificationUnreadType {
		t.Fatalf("first %+v", f)
	}
	r.NextCounts(t)
	sawGap, sawRoom := false, false
	for !sawGap || !sawRoom {
		f := r.Next(t, testhub.Wait)
		switch f.Event {
		case hub.GapEventType:
			if d := dataOf(t, f); !d.Notifications || d.RoomID != 0 || f.ID != "" {
				t.Fatalf("log gap %+v", f)
			}
			sawGap = true
		case "comment.created":
			if d := dataOf(t, f); d.K != "after" || d.RoomID != 201 {
				t.Fatalf("room event %+v", f)
			}
			sawRoom = true
		}
	}
}
