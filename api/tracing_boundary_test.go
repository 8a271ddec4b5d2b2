package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// The caller's headers of an attacker: a sampled trace and a tracestate.
var hostileTrace = map[string]string{
	"traceparent": "00-" + testhub.CallerTrace + "-b7ad6b7169203331-01",
	"tracestate":  "evil=payload",
}

func withHeaders(base map[string]string, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// Nobody but the backend steers the hub's tracing (hardening IV, 7). With a
// ratio of 0, three unauthenticated requests carrying a sampled traceparent
// record nothing, and neither does a wrong internal key; with every root
// sampled, a user's request is a new root trace with the caller's context
// as a link (its tracestate dropped), and the room access backend gets that
// new trace, never the caller's; the right internal key continues it.
func TestTracing_OnlyTheBackendSteersTraces(t *testing.T) {
	rs := testredis.Start(t)
	backend := testhub.StartAuthBackend(t, hub.DefaultConfig().InternalAPIKey)
	backend.Set(7, 42, true)

	none := testhub.RecordSpans(t, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0)))
	th := testhub.StartFull(t, rs.Addr(), testhub.ProxyMode(backend.URL, time.Minute), nil, testhub.Extras{Tracing: none.Provider})
	for range 3 {
		if code, _ := th.Do(t, http.MethodGet, "/api/v1/notifications/unread", withHeaders(hostileTrace, map[string]string{"Authorization": "Bearer garbage"}), ""); code != 401 {
			t.Fatalf("a bad token: %d", code)
		}
	}
	if code, _ := th.Do(t, http.MethodPost, "/api/v1/notifications/publish", withHeaders(hostileTrace, map[string]string{"X-Internal-Key": "guess"}), `{}`); code != 401 {
		t.Fatalf("a wrong key: %d", code)
	}
	if code, _ := th.Do(t, http.MethodGet, "/api/v1/rooms/42/events?since=0", withHeaders(hostileTrace, map[string]string{"Authorization": "Bearer " + th.Token(t, 7)}), ""); code != 200 {
		t.Fatalf("a user's request: %d", code)
	}
	if got := backend.Trace.Load(); got != "|" {
		t.Fatalf("the room access backend got trace headers %q under a ratio of 0", got)
	}
	if n := len(none.Ended()); n != 0 {
		t.Fatalf("%d spans recorded under a ratio of 0 for callers who may not steer tracing", n)
	}

	all := testhub.RecordSpans(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
	th = testhub.StartFull(t, rs.Addr(), testhub.ProxyMode(backend.URL, time.Minute), nil, testhub.Extras{Tracing: all.Provider})
	if code, _ := th.Do(t, http.MethodGet, "/api/v1/rooms/42/presence", withHeaders(hostileTrace, map[string]string{"Authorization": "Bearer " + th.Token(t, 7)}), ""); code != 200 {
		t.Fatalf("a user's request: %d", code)
	}
	req := testhub.WaitSpans(t, 1, "GET /api/v1/rooms/:roomId/presence", nil, all)[0]
	if req.SpanContext().TraceID().String() == testhub.CallerTrace || req.Parent().IsValid() {
		t.Fatalf("a user's request continued the caller's trace: %s, parent %v", req.SpanContext().TraceID(), req.Parent())
	}
	if l := req.Links(); len(l) != 1 || l[0].SpanContext.TraceID().String() != testhub.CallerTrace || l[0].SpanContext.TraceState().Len() != 0 {
		t.Fatalf("links %+v, want the caller's context without its tracestate", l)
	}
	tp, _ := backend.Trace.Load().(string)
	if strings.Contains(tp, testhub.CallerTrace) || strings.Contains(tp, "evil") || !strings.Contains(tp, req.SpanContext().TraceID().String()) {
		t.Fatalf("the room access backend got %q, want the request's own trace", tp)
	}
	code, _ := th.Do(t, http.MethodPost, "/api/v1/notifications/publish", withHeaders(hostileTrace, map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}),
		`{"roomId":42,"eventType":"comment.created","data":{}}`)
	if code != 200 {
		t.Fatalf("publish: %d", code)
	}
	pub := testhub.WaitSpans(t, 1, "POST /api/v1/notifications/publish", nil, all)[0]
	if pub.Parent().TraceID().String() != testhub.CallerTrace || pub.Parent().SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("the backend's publish: parent %v, want the caller's span", pub.Parent())
	}
}
