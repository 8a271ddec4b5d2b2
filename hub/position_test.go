package hub

import "testing"

func TestPosition_Check(t *testing.T) {
	ev := func(ms uint64, seq int64) *Event { return &Event{ID: StreamID{Ms: ms}, Seq: seq} }
	for _, c := range []struct {
		name string
		pos  Position
		ev   *Event
		want Verdict
	}{
		{"next", Position{StreamID{Ms: 10}, 5}, ev(11, 6), Deliver},
		{"same id", Position{StreamID{Ms: 10}, 5}, ev(10, 5), Duplicate},
		{"older id", Position{StreamID{Ms: 10}, 5}, ev(9, 4), Duplicate},
		{"seq skips one", Position{StreamID{Ms: 10}, 5}, ev(12, 7), Jump},
		{"seq unknown: anything newer is next", Position{StreamID{Ms: 10}, 0}, ev(99, 70), Deliver},
		{"zero position: everything is next", Position{}, ev(1, 1), Deliver},
		{"newer id, seq starts again", Position{StreamID{Ms: 10}, 5}, ev(11, 1), Epoch},
		{"newer id, same seq", Position{StreamID{Ms: 10}, 5}, ev(11, 5), Epoch},
	} {
		if got := c.pos.Check(c.ev); got != c.want {
			t.Errorf("%s: Check = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestPosition_AdvanceAndForget(t *testing.T) {
	var p Position
	p.Advance(&Event{ID: StreamID{Ms: 3, Seq: 1}, Seq: 9})
	if p.ID != (StreamID{3, 1}) || p.Seq != 9 {
		t.Fatalf("after Advance: %+v", p)
	}
	p.forget()
	if p.Seq != 0 || p.Check(&Event{ID: StreamID{Ms: 4}, Seq: 50}) != Deliver {
		t.Fatalf("after forget, a newer event with any seq must be next: %+v", p)
	}
}

func BenchmarkPosition_Check(b *testing.B) {
	events := make([]*Event, 1024)
	for i := range events {
		events[i] = &Event{ID: StreamID{Ms: uint64(i + 1)}, Seq: int64(i + 1)}
	}
	b.ReportAllocs()
	var p Position
	for i := 0; i < b.N; i++ {
		ev := events[i%len(events)]
		if i%len(events) == 0 {
			p = Position{}
		}
		if p.Check(ev) == Deliver {
			p.Advance(ev)
		}
	}
}
