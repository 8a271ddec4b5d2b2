package hub_test

import (
	"net/http"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// A room whose access is withdrawn ends the stream with system.evicted naming it.
func TestPageStream_RevokedRoomEndsTheStream(t *testing.T) {
	backend := testhub.StartAuthBackend(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.Start(t, testredis.Start(t).Addr(), testhub.ProxyMode(backend.URL, 300*time.Millisecond))
	backend.Set(15, 171, true)
	backend.Set(15, 172, true)
	c := th.PageStream(t, 15, "rooms=171,172", "")
	th.Pub(t, 171, "x")
	nextComment(t, c)
	backend.Set(15, 172, false)
	rest := c.Ended(t, 10*time.Second)
	last := rest[len(rest)-1]
	if last.Event != hub.EvictedEventType || last.Data != `{"reason":"access revoked","roomId":172}` {
		t.Fatalf("stream ended with %+v, want system.evicted access revoked for room 172", last)
	}
}

// A proxy backend that cannot answer refuses the page stream with 503 AUTH5031.
func TestPageStream_ProxyDownIs503(t *testing.T) {
	backend := testhub.StartAuthBackend(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.Start(t, testredis.Start(t).Addr(), testhub.ProxyMode(backend.URL, time.Minute))
	backend.Set(16, 211, true)
	backend.Status.Store(500)
	if code, env := th.TryRoute(t, http.MethodGet, "/api/v1/stream?rooms=211,212", th.Token(t, 16)); code != 503 || env != "AUTH5031" {
		t.Fatalf("backend down: %d %s, want 503 AUTH5031", code, env)
	}
}
