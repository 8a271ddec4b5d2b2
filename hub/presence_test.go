package hub

import (
	"fmt"
	"testing"
	"time"
)

func testStream(user int64, conn string, rooms ...int64) *Stream {
	s := &Stream{User: user, ConnID: conn, done: make(chan struct{})}
	for _, r := range rooms {
		s.members = append(s.members, &member{s: s, topicID: r, roomID: r})
	}
	s.members = append(s.members, &member{s: s, topicID: UserTopic(user)}) // the bell: no presence
	return s
}

// One touch per (room, user), however many of the user's streams are due;
// a user's stream not yet due comes along when another of theirs in one of
// its rooms is, and is then due at the same time; an ended stream does not.
func TestRefreshes_OneTouchPerRoomAndUser(t *testing.T) {
	now := time.Now()
	next := now.Add(time.Second)
	tab1, tab2 := testStream(7, "c1", 70), testStream(7, "c2", 70)
	page := testStream(7, "c3", 71, 70) // not due, shares room 70
	other := testStream(8, "c4", 70)    // another user: stays on its schedule
	gone := testStream(7, "c5", 70)
	close(gone.done)
	for _, s := range []*Stream{page, other, gone} {
		s.nextRefresh = now.Add(time.Hour)
	}
	var r refreshes
	r.addStream(tab1, next)
	r.addStream(tab2, next)
	r.bringAlong([]*Stream{tab1, tab2, page, other, gone}, next)
	got := fmt.Sprint(r.touches)
	if want := "[{70 7 [c1 c2 c3]} {71 7 [c3]}]"; got != want {
		t.Fatalf("touches %s, want %s", got, want)
	}
	if !page.nextRefresh.Equal(next) || other.nextRefresh.Equal(next) || gone.nextRefresh.Equal(next) {
		t.Fatalf("next refresh: page %v, other %v, gone %v; want only page at %v", page.nextRefresh, other.nextRefresh, gone.nextRefresh, next)
	}
	var none refreshes
	none.bringAlong([]*Stream{page}, next.Add(time.Second))
	if len(none.touches) != 0 {
		t.Fatalf("nothing due brought %v along", none.touches)
	}
}
