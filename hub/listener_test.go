package hub

import "testing"

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
