package hub

import (
	"strings"
	"testing"
)

func TestTopicFromChannel(t *testing.T) {
	for ch, want := range map[string]int64{"room:{42}": 42, "room:42": 42, "user:{7}": -7} {
		if got, ok := topicFromChannel(ch); !ok || got != want {
			t.Errorf("%s → %d, %v; want %d", ch, got, ok, want)
		}
	}
	for _, ch := range []string{"user:7", "user:{7", "user:{0}", "user:{-1}", "user:{}", "other"} {
		if _, ok := topicFromChannel(ch); ok {
			t.Errorf("%s was read as a topic", ch)
		}
	}
	// A user channel carries only the hub's own messages (with id and seq).
	if ev, _ := parseWireMessage(-7, []byte(`{"eventType":"notification.created","data":{}}`), true); ev != nil {
		t.Fatal("a raw message on a user channel was accepted")
	}
	ev, reason := parseWireMessage(-7, []byte(`{"id":"5-1","seq":3,"eventType":"notification.read","data":{"unread":0}}`), true)
	if ev == nil || string(ev.Frame()) != "event: notification.read\nid: 5-1\ndata: {\"unread\":0}\n\n" {
		t.Fatalf("user log message: %v %q", ev, reason)
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

func FuzzParseWireMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":"5-1","seq":3,"roomId":42,"eventType":"like.toggled","publisherId":"7","timestamp":"t","data":{}}`,
		`{"eventType":"comment.created","roomId":"42","data":{"x":[1,{"y":null}]},"timestamp":"2026-01-01T00:00:00Z"}`,
		`{"id":"1-0","seq":1,"eventType":"notification.read","data":{"unread":0}}`, `{}`, `[]`, `null`,
		"{\"eventType\":\"comment.created\",\"data\":{ \"a\" :\n[1,\r\n2] },\"timestamp\":\"a\\u0000<b>\\n\"}",
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
