package hub

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEventFrame(t *testing.T) {
	ev := newEvent(42, StreamID{1708070460000, 0}, 1, "comment.created", []byte(`{"userId":2}`), "2", "2026-02-16T10:31:00Z")
	want := "event: comment.created\nid: 1708070460000-0\ndata: {\"userId\":2,\"timestamp\":\"2026-02-16T10:31:00Z\"}\n\n"
	if got := string(ev.Frame()); got != want {
		t.Fatalf("frame:\n%q\nwant\n%q", got, want)
	}
	sys := newGap(StreamID{1, 0}, StreamID{2, 0}).Frame()
	if strings.Contains(string(sys), "\nid:") {
		t.Fatalf("system events carry no id: %q", sys)
	}
}

func TestWithTimestamp(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, `{"timestamp":"T"}`},
		{`{"a":1}`, `{"a":1,"timestamp":"T"}`},
		{`{"timestamp":"old","a":1}`, `{"a":1,"timestamp":"T"}`},
		{`{"a":"has \"timestamp\" inside"}`, `{"a":"has \"timestamp\" inside","timestamp":"T"}`},
	} {
		got := withTimestamp([]byte(tc.in), "T")
		var g, w any
		if json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(tc.want), &w) != nil {
			t.Fatalf("withTimestamp(%s) = %s: not JSON", tc.in, got)
		}
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("withTimestamp(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// quoteJSON writes what encoding/json writes, by hand when it can.
func TestQuoteJSON(t *testing.T) {
	for _, s := range []string{"", "2026-02-16T10:31:00.123Z", "a\"b", "a\\b", "line\nbreak", "\x00\x1f\x7f", "<&>", "héllo", "\xff"} {
		want, _ := json.Marshal(s)
		if got := quoteJSON(s); string(got) != string(want) {
			t.Errorf("quoteJSON(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestValidEventTypeName(t *testing.T) {
	for s, want := range map[string]bool{
		"comment.created": true, "a": true, "x_1-2.y": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "Comment": false, "a b": false, "a\nb": false, "é": false,
	} {
		if got := ValidEventTypeName(s); got != want {
			t.Errorf("ValidEventTypeName(%q) = %v", s, got)
		}
	}
}
