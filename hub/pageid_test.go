package hub

import (
	"roomhub/internal/sse"
	"strings"
	"testing"
)

func TestPageID_RoundTrip(t *testing.T) {
	s := &Stream{page: true}
	for i, r := range []int64{42, 9223372036854775807, 7} {
		s.members = append(s.members, &member{s: s, roomID: r, placed: i != 2, pos: Position{ID: StreamID{uint64(1700000000000 + i), uint64(i)}}})
	}
	s.members = append(s.members, &member{s: s, placed: true, pos: Position{ID: StreamID{5, 0}}})
	line := string(s.appendIDLine(nil))
	id, ok := strings.CutPrefix(line, "id: ")
	if !ok || !strings.HasSuffix(id, "\n") {
		t.Fatalf("id line %q", line)
	}
	id = strings.TrimSuffix(id, "\n")
	if want := "p1,42:1700000000000-0,9223372036854775807:1700000000001-1,n:5-0"; id != want {
		t.Fatalf("id %q, want %q (room 7 has no position yet: left out)", id, want)
	}
	got, err := ParsePageID(id)
	if err != nil || len(got) != 3 || got[42] != (StreamID{1700000000000, 0}) || got[0] != (StreamID{5, 0}) {
		t.Fatalf("ParsePageID(%q) = %v, %v", id, got, err)
	}
}

func FuzzParsePageID(f *testing.F) {
	for _, s := range []string{"p1,42:1700000000000-0,n:5-0", "p1", "p1,", "1700000000000-0", "p1,1:1-0,1:1-0", "p1,n:0-0", "p1,x:1-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		got, err := ParsePageID(id)
		if err != nil {
			return
		}
		if len(got) == 0 || !sse.PageIDChars.MatchString(id) {
			t.Fatalf("%q accepted as %v", id, got)
		}
		// What parses is what the hub writes: writing it back gives an id
		// that parses to the same positions.
		s := &Stream{page: true}
		for topic, sid := range got {
			s.members = append(s.members, &member{s: s, roomID: topic, placed: true, pos: Position{ID: sid}})
		}
		again, err := ParsePageID(strings.TrimSuffix(strings.TrimPrefix(string(s.appendIDLine(nil)), "id: "), "\n"))
		if err != nil || len(again) != len(got) {
			t.Fatalf("%q: written back, %v %v", id, again, err)
		}
		for k, v := range got {
			if again[k] != v {
				t.Fatalf("%q: member %d %v became %v", id, k, v, again[k])
			}
		}
	})
}
