package hub_test

import (
	"testing"
	"time"

	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// A listener whose connection went silently dead hears nothing; its probe
// finds out, it reconnects and replays, and the stream gets every event.
func TestListener_SilentlyDeadConnectionIsProbedAndHealed(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	proxy := testhub.StartFreezeProxy(t, rs.Addr())
	th := testhub.Start(t, proxy.Addr(), func(c *testhub.Configs) { c.ListenerIdle = 300 * time.Millisecond })
	c := th.OpenStream(t, 130, 1, "")
	first := th.Publish(t, 130, "comment.created", map[string]any{"n": 0})
	if f := c.Next(t, testhub.Wait); f.ID != first.StreamID {
		t.Fatalf("got %+v", f)
	}
	if n := proxy.FreezeSubscribers(); n == 0 {
		t.Fatal("no subscribed connection to freeze")
	}
	var want []string
	for i := 1; i <= 5; i++ {
		want = append(want, th.Publish(t, 130, "comment.created", map[string]any{"n": i}).StreamID)
	}
	for _, id := range want {
		if f := c.Next(t, 15*time.Second); f.ID != id {
			t.Fatalf("got %+v, want %s", f, id)
		}
	}
	if n := th.Hub.Metrics().ProbeFailures.Get(); n == 0 {
		t.Fatal("pubsub_probe_failures_total = 0: something else healed the listener")
	}
	th.WaitHealthy(t)
}
