package hub

import (
	"strings"
	"testing"
)

func TestParseStreamID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want StreamID
		ok   bool
	}{
		{"1708070400000-0", StreamID{1708070400000, 0}, true},
		{"1708070400000-17", StreamID{1708070400000, 17}, true},
		{"1708070400000", StreamID{1708070400000, 0}, true},
		{"0", StreamID{}, true},
		{"0-0", StreamID{}, true},
		{"", StreamID{}, false},
		{"-1", StreamID{}, false},
		{"1-", StreamID{}, false},
		{"-", StreamID{}, false},
		{"1-2-3", StreamID{}, false},
		{"+1", StreamID{}, false},
		{" 1", StreamID{}, false},
		{"1\n", StreamID{}, false},
		{"abc", StreamID{}, false},
		{"99999999999999999999999", StreamID{}, false},
		{"18446744073709551616", StreamID{}, false},
	} {
		got, err := ParseStreamID(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseStreamID(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestStreamID_Less(t *testing.T) {
	a, b, c := StreamID{1, 5}, StreamID{2, 0}, StreamID{2, 1}
	if !a.Less(b) || !b.Less(c) || c.Less(a) || a.Less(a) {
		t.Fatal("ordering wrong")
	}
}

func FuzzParseStreamID(f *testing.F) {
	for _, s := range []string{"0", "1-1", "1708070400000-0", "", "-", "1-2-3", "18446744073709551615-18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseStreamID(s)
		if err != nil {
			return
		}
		// A parsed id prints as ms-seq and parses back to itself; it can never
		// carry CR or LF into an SSE id: line.
		back, err := ParseStreamID(id.String())
		if err != nil || back != id {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, id, id.String(), back, err)
		}
		if strings.ContainsAny(id.String(), "\r\n") {
			t.Fatalf("id %q holds a line break", id)
		}
		// A position (Last-Event-ID, since) is any id but the largest.
		if _, err := ParsePosition(s); (err == nil) != (id != StreamID{^uint64(0), ^uint64(0)}) {
			t.Fatalf("ParsePosition(%q) = %v", s, err)
		}
	})
}

// JoinIDs and ParseIDs are each other's inverse; ParseIDs skips what is no id.
func TestJoinAndParseIDs(t *testing.T) {
	if s := JoinIDs([]int64{3, 1, 20}); s != "3,1,20" || JoinIDs(nil) != "" {
		t.Fatalf("JoinIDs: %q", s)
	}
	if got := ParseIDs("3,x,,1,-2,20"); len(got) != 3 || got[0] != 3 || got[1] != 1 || got[2] != 20 {
		t.Fatalf("ParseIDs: %v", got)
	}
}
