package hub

import "testing"

// A member leaves its topic's list in place of the last one, every member
// stays at its own index, a second removal changes nothing, and a list that
// emptied to a quarter gives its room back.
func TestTopic_RemoveKeepsEveryMemberAtItsIndex(t *testing.T) {
	tp := &topic{}
	var ms []*member
	for i := range 100 {
		m := &member{topicID: int64(i)}
		m.at = int32(len(tp.subs))
		tp.subs = append(tp.subs, m)
		ms = append(ms, m)
	}
	check := func(want int) {
		t.Helper()
		if len(tp.subs) != want {
			t.Fatalf("%d members, want %d", len(tp.subs), want)
		}
		for i, m := range tp.subs {
			if int(m.at) != i {
				t.Fatalf("member %d at index %d says %d", m.topicID, i, m.at)
			}
		}
	}
	tp.removeLocked(ms[10])
	check(99)
	if tp.subs[10] != ms[99] {
		t.Fatalf("index 10 holds member %d, want the last (99)", tp.subs[10].topicID)
	}
	tp.removeLocked(ms[10])
	check(99)
	for _, m := range ms[20:] {
		tp.removeLocked(m)
	}
	check(19)
	if cap(tp.subs) > 64 {
		t.Fatalf("capacity %d kept for 19 members", cap(tp.subs))
	}
	for _, m := range ms[:20] {
		tp.removeLocked(m)
	}
	check(0)
}
