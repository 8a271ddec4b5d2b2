package hub_test

import (
	"testing"

	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestConnectionCap_EvictsOldestOnOtherInstance(t *testing.T) {
	rs := testredis.Start(t)
	cfg := func(c *testhub.Configs) { c.MaxConnectionsPerUser = 2 }
	a, b := testhub.Start(t, rs.Addr(), cfg), testhub.Start(t, rs.Addr(), cfg)
	oldest := a.OpenStream(t, 76, 5, "")
	testhub.Eventually(t, testhub.Wait, "first stream registered", func() bool {
		n, _ := testredis.Do(t, testredis.Client(t, rs.Addr()), "ZCARD", hub.UserConnsKey(5)).AsInt64()
		return n == 1
	})
	second := a.OpenStream(t, 77, 5, "")
	b.OpenStream(t, 78, 5, "")
	rest := oldest.Ended(t, testhub.Wait)
	if len(rest) == 0 || rest[len(rest)-1].Event != hub.EvictedEventType {
		t.Fatalf("oldest stream ended with %+v, want system.evicted last", rest)
	}
	for _, f := range rest {
		if f.Event == hub.EvictedEventType && f.ID != "" {
			t.Fatalf("system.evicted carries an id")
		}
	}
	res := a.Publish(t, 77, "comment.created", map[string]any{})
	if f := second.Next(t, testhub.Wait); f.ID != res.StreamID {
		t.Fatalf("the second stream must stay open: %+v", f)
	}
	if a.Hub.Metrics().Evictions.Get()+b.Hub.Metrics().Evictions.Get() != 1 {
		t.Fatalf("evictions counted: %d + %d, want 1", a.Hub.Metrics().Evictions.Get(), b.Hub.Metrics().Evictions.Get())
	}
}
