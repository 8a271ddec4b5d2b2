package hub

import (
	"encoding/json"
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

func FuzzParseWireMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":"5-1","seq":3,"roomId":42,"eventType":"like.toggled","publisherId":"7","timestamp":"t","data":{}}`,
		`{"eventType":"comment.created","roomId":"42","data":{"x":[1,{"y":null}]},"timestamp":"2026-01-01T00:00:00Z"}`,
		`{"id":"1-0","seq":1,"eventType":"notification.read","data":{"unread":0}}`, `{}`, `[]`, `null`,
	} {
		f.Add([]byte(s), true, int64(42))
		f.Add([]byte(s), false, int64(-7))
	}
	f.Fuzz(func(t *testing.T, payload []byte, own bool, topic int64) {
		ev, reason := parseWireMessage(topic, payload, own)
		if ev == nil {
			if reason == "" {
				t.Fatal("refused without a reason")
			}
			return
		}
		if ev.HasID() && (!own || ev.Seq <= 0) {
			t.Fatalf("believed id %v seq %d (own %v)", ev.ID, ev.Seq, own)
		}
		// The frame is one SSE message: its fields, one blank line at the end.
		fr := string(ev.Frame())
		body, ok := strings.CutSuffix(fr, "\n\n")
		if !ok || !strings.HasPrefix(fr, "event: "+ev.Type+"\n") || strings.Contains(body, "\n\n") || strings.Contains(fr, "\r") {
			t.Fatalf("frame %q", fr)
		}
		for _, line := range strings.Split(body, "\n") {
			if !strings.HasPrefix(line, "event: ") && !strings.HasPrefix(line, "id: ") && !strings.HasPrefix(line, "data: ") {
				t.Fatalf("frame line %q", line)
			}
		}
	})
}

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

func TestParseWireMessage(t *testing.T) {
	ev, why := parseWireMessage(42, []byte(`{"eventType":"comment.created","roomId":42,"data":{"x":1},"timestamp":"2026-01-01T00:00:00Z"}`), true)
	if ev == nil || ev.HasID() || ev.Type != "comment.created" {
		t.Fatalf("raw seed message: %v %q", ev, why)
	}
	ev, _ = parseWireMessage(42, []byte(`{"id":"5-1","seq":3,"roomId":42,"eventType":"like.toggled","publisherId":"7","timestamp":"t","data":{}}`), true)
	if ev == nil || ev.ID != (StreamID{5, 1}) || ev.Seq != 3 || ev.PublisherID != "7" {
		t.Fatalf("hub message: %+v", ev)
	}
	// On a backend's channel (room:42) id and seq are not believed.
	ev, _ = parseWireMessage(42, []byte(`{"id":"99999999999999-0","seq":3,"eventType":"like.toggled","data":{}}`), false)
	if ev == nil || ev.HasID() {
		t.Fatalf("a raw message kept its id: %+v", ev)
	}
	for _, bad := range []string{
		`{"id":"99999999999999-0","seq":3,"eventType":"like.toggled","data":{}}`, // far in the future
		`nope`, `{"eventType":"a","roomId":43,"data":{}}`, `{"eventType":"A B","data":{}}`,
		`{"eventType":"a","data":[1]}`, `{"eventType":"system.gap","data":{}}`, `{"id":"x","seq":1,"eventType":"a","data":{}}`,
		`{"eventType":"a\nid: 9","data":{}}`,
	} {
		if ev, _ := parseWireMessage(42, []byte(bad), true); ev != nil {
			t.Errorf("accepted invalid message %s", bad)
		}
	}
}

func TestRoomFromChannel(t *testing.T) {
	for in, want := range map[string]int64{"room:{42}": 42, "room:42": 42, "room:{0}": 0, "room:x": 0, "room:events:{1}": 0, "other": 0} {
		got, ok := roomFromChannel(in)
		if ok != (want != 0) || got != want {
			t.Errorf("roomFromChannel(%q) = %d, %v", in, got, ok)
		}
	}
}
