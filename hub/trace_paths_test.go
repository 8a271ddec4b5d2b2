package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// attr is span s's attribute k, as text ("" when it has none).
func attr(s sdktrace.ReadOnlySpan, k string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == k {
			return a.Value.String()
		}
	}
	return ""
}

func inTrace(id trace.TraceID) func(sdktrace.ReadOnlySpan) bool {
	return func(s sdktrace.ReadOnlySpan) bool { return s.SpanContext().TraceID() == id }
}

// childOf checks that s is a child of parent, in its trace.
func childOf(t *testing.T, s sdktrace.ReadOnlySpan, parent trace.SpanContext) {
	t.Helper()
	if s.Parent().TraceID() != parent.TraceID() || s.Parent().SpanID() != parent.SpanID() {
		t.Fatalf("%s: parent %s/%s, want %s/%s", s.Name(), s.Parent().TraceID(), s.Parent().SpanID(), parent.TraceID(), parent.SpanID())
	}
}

// One notification, published on instance a with the caller's traceparent,
// followed through both instances: the request, its script and its inbox
// writes continue the caller's trace; b's fan-out to its two streams is one
// span in it; each attempt at the hand-off is a span in it, and the gateway
// is called with the attempt's traceparent. The write-behind flush of the
// read has a span of its own.
func TestTracing_OneEventFromTheCallerToEachInstance(t *testing.T) {
	rs := testredis.Start(t)
	var calls atomic.Int32
	g := testhub.StartGateway(t, func(testhub.GatewayCall) testhub.GatewayAnswer {
		if calls.Add(1) == 1 {
			return testhub.GatewayAnswer{Status: http.StatusServiceUnavailable}
		}
		return testhub.GatewayAnswer{Status: http.StatusOK}
	})
	sink := testhub.StartSink(t, hub.DefaultConfig().InternalAPIKey)
	cfg := testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`, func(c *testhub.Configs) {
		c.Inbox.ReadSinkURL, c.Inbox.WriteBehindInterval = sink.URL, 0
	})
	recA, recB := testhub.RecordSpans(t, sdktrace.ParentBased(sdktrace.AlwaysSample())), testhub.RecordSpans(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
	a := testhub.StartFull(t, rs.Addr(), cfg, nil, testhub.Extras{Tracing: recA.Provider})
	b := testhub.StartFull(t, rs.Addr(), cfg, nil, testhub.Extras{Tracing: recB.Provider})
	res := publishFromTheCaller(t, a, b)
	tid, _ := trace.TraceIDFromHex(testhub.CallerTrace)
	in := inTrace(tid)
	script, writes := aContinuesTheTrace(t, recA, in, res)
	// b: one fan-out span for its two streams, under the publish script.
	fan := testhub.WaitSpans(t, 1, "fanout", in, recB)
	if len(fan) != 1 || attr(fan[0], "roomhub.streams") != "2" || attr(fan[0], "roomhub.stream_id") != res.StreamID {
		t.Fatalf("b's fan-out spans: %d, first %v", len(fan), fan[0].Attributes())
	}
	childOf(t, fan[0], script.SpanContext())
	handOffAttemptsInTheTrace(t, a, g, in, writes, recA, recB)

	// The write-behind flush of user 5's read.
	a.MarkRead(t, 5, fmt.Sprintf("7:%s", res.StreamID))
	if st, err := a.Inbox.FlushReads(context.Background()); err != nil || st.Flushed != 1 {
		t.Fatalf("flush: %+v %v", st, err)
	}
	flush := testhub.WaitSpans(t, 1, "write-behind flush", nil, recA)[0]
	if attr(flush, "roomhub.flushed") != "1" {
		t.Fatalf("flush span attributes %v", flush.Attributes())
	}
	dashboardAsksForRecordedSpans(t, recA, recB)
}

// publishFromTheCaller publishes to room 7 (recipient 5) through a with the
// caller's traceparent, once b follows the room with two streams, and waits
// for both streams to get it.
func publishFromTheCaller(t *testing.T, a, b *testhub.Hub) hub.PublishResult {
	s1, s2 := b.OpenStream(t, 7, 3, ""), b.OpenStream(t, 7, 4, "")
	s1.PresenceUpdate(t, testhub.Wait) // b's listener follows room 7
	s2.PresenceUpdate(t, testhub.Wait)
	code, env := a.Do(t, http.MethodPost, "/api/v1/notifications/publish", map[string]string{
		"X-Internal-Key": a.Cfg.InternalAPIKey, "Content-Type": "application/json",
		"traceparent": "00-" + testhub.CallerTrace + "-b7ad6b7169203331-01",
	}, `{"roomId":7,"eventType":"comment.created","data":{"n":1},"recipientIds":[5]}`)
	if code != 200 {
		t.Fatalf("publish: %d %+v", code, env)
	}
	var res hub.PublishResult
	testhub.Remarshal(t, env.Result, &res)
	for _, s := range []*testhub.SSEClient{s1, s2} {
		if f := s.Next(t, testhub.Wait); f.ID != res.StreamID {
			t.Fatalf("stream got %+v, want %s", f, res.StreamID)
		}
	}
	return res
}

// aContinuesTheTrace: a's request span is the caller's child, its publish
// script and inbox writes the request's; it returns those two.
func aContinuesTheTrace(t *testing.T, recA *testhub.Recorded, in func(sdktrace.ReadOnlySpan) bool, res hub.PublishResult) (script, writes sdktrace.ReadOnlySpan) {
	caller, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	req := testhub.WaitSpans(t, 1, "POST /api/v1/notifications/publish", in, recA)[0]
	if req.Parent().SpanID() != caller || req.SpanKind() != trace.SpanKindServer || attr(req, "http.response.status_code") != "200" {
		t.Fatalf("request span: parent %s, kind %s, status %q", req.Parent().SpanID(), req.SpanKind(), attr(req, "http.response.status_code"))
	}
	script = testhub.WaitSpans(t, 1, "lua publish_event", in, recA)[0]
	childOf(t, script, req.SpanContext())
	if attr(script, "roomhub.stream_id") != res.StreamID || attr(script, "roomhub.room_id") != "7" {
		t.Fatalf("script span attributes %v", script.Attributes())
	}
	writes = testhub.WaitSpans(t, 1, "lua inbox_add", in, recA)[0]
	childOf(t, writes, req.SpanContext())
	if attr(writes, "roomhub.inbox_writes") != "1" {
		t.Fatalf("inbox span attributes %v", writes.Attributes())
	}
	return script, writes
}

// handOffAttemptsInTheTrace: two attempts (503, then 200), each a span
// under the inbox writes, whichever instance made it; the delivery record
// keeps the writes' traceparent, and the gateway gets each attempt's.
func handOffAttemptsInTheTrace(t *testing.T, a *testhub.Hub, g *testhub.Gateway, in func(sdktrace.ReadOnlySpan) bool, writes sdktrace.ReadOnlySpan, recs ...*testhub.Recorded) {
	// Two attempts (503, then 200), each a span under the inbox writes,
	// whichever instance made it.
	attempts := testhub.WaitSpans(t, 2, "delivery push", func(s sdktrace.ReadOnlySpan) bool { return in(s) && attr(s, "roomhub.outcome") != "" }, recs...)
	byAttempt := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range attempts {
		childOf(t, s, writes.SpanContext())
		byAttempt[attr(s, "roomhub.attempt")] = s
	}
	if o := attr(byAttempt["1"], "roomhub.outcome") + "/" + attr(byAttempt["1"], "roomhub.error_code"); o != "failed/HTTP_503" {
		t.Fatalf("attempt 1 ended %s", o)
	}
	if o := attr(byAttempt["2"], "roomhub.outcome"); o != "sent" {
		t.Fatalf("attempt 2 ended %s", o)
	}
	if tps := recordTraceParents(t, a, 5); len(tps) != 1 || tps[0] != hub.TraceParent(writes.SpanContext()) {
		t.Fatalf("the delivery record keeps traceparents %q, want the inbox writes'", tps)
	}
	first, second := g.Next(t, testhub.Wait), g.Next(t, testhub.Wait)
	for i, c := range []testhub.GatewayCall{first, second} {
		want := hub.TraceParent(byAttempt[fmt.Sprint(i+1)].SpanContext())
		if c.TraceParent != want {
			t.Fatalf("gateway call %d: traceparent %q, want %q", i+1, c.TraceParent, want)
		}
	}
}

// dashboardAsksForRecordedSpans: the dashboard's trace links ask for spans
// the hub records.
func dashboardAsksForRecordedSpans(t *testing.T, recA, recB *testhub.Recorded) {
	names := map[string]bool{}
	for _, s := range append(recA.Ended(), recB.Ended()...) {
		names[s.Name()] = true
	}
	for _, q := range dashboardTraceQueries(t) {
		m := regexp.MustCompile(`(?:^|[\s{(])name\s*(=~?)\s*"([^"]+)"`).FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("a trace link names no span: %s", q)
		}
		found := false
		for n := range names {
			found = found || n == m[2] || (m[1] == "=~" && regexp.MustCompile("^(?:"+m[2]+")$").MatchString(n))
		}
		if !found {
			t.Errorf("the dashboard's trace link asks for %q, which no span is named", m[2])
		}
	}
}

// dashboardTraceQueries are the TraceQL queries of the dashboard's links.
func dashboardTraceQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../docs/grafana/roomhub.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			FieldConfig struct {
				Defaults struct {
					Links []struct{ URL string } `json:"links"`
				} `json:"defaults"`
			} `json:"fieldConfig"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range dash.Panels {
		for _, l := range p.FieldConfig.Defaults.Links {
			_, panes, _ := strings.Cut(l.URL, "panes=")
			dec, err := url.QueryUnescape(panes)
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]struct {
				Queries []struct{ Query string } `json:"queries"`
			}
			if err := json.Unmarshal([]byte(dec), &v); err != nil || len(v["a"].Queries) != 1 {
				t.Fatalf("a trace link's panes: %s (%v)", dec, err)
			}
			out = append(out, v["a"].Queries[0].Query)
		}
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no trace links")
	}
	return out
}

// Sampling off: nothing is recorded on either instance, the event goes
// through Redis without a traceparent, and the gateway gets none.
func TestTracing_SamplingOffRecordsAndCarriesNothing(t *testing.T) {
	rs := testredis.Start(t)
	g := testhub.StartGateway(t, nil)
	cfg := testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`)
	recA, recB := testhub.RecordSpans(t, sdktrace.NeverSample()), testhub.RecordSpans(t, sdktrace.NeverSample())
	a := testhub.StartFull(t, rs.Addr(), cfg, nil, testhub.Extras{Tracing: recA.Provider})
	b := testhub.StartFull(t, rs.Addr(), cfg, nil, testhub.Extras{Tracing: recB.Provider})
	s := b.OpenStream(t, 7, 3, "")
	s.PresenceUpdate(t, testhub.Wait)
	watch := testredis.Client(t, rs.Addr())
	msgs := make(chan string, 4)
	go func() {
		_ = watch.Receive(context.Background(), watch.B().Subscribe().Channel(hub.RoomChannel(7)).Build(), func(m rueidis.PubSubMessage) { msgs <- m.Message })
	}()
	testhub.Eventually(t, 5*time.Second, "the watcher subscribed", func() bool {
		n, _ := testredis.Do(t, watch, "PUBSUB", "NUMSUB", hub.RoomChannel(7)).ToArray()
		c, _ := n[1].AsInt64()
		return c >= 2 // b's listener and the watcher
	})

	code, _ := a.Do(t, http.MethodPost, "/api/v1/notifications/publish", map[string]string{
		"X-Internal-Key": a.Cfg.InternalAPIKey, "Content-Type": "application/json",
		"traceparent": "00-" + testhub.CallerTrace + "-b7ad6b7169203331-01",
	}, `{"roomId":7,"eventType":"comment.created","data":{"n":1},"recipientIds":[5]}`)
	if code != 200 {
		t.Fatalf("publish: %d", code)
	}
	s.Next(t, testhub.Wait)
	c := g.Next(t, testhub.Wait)
	if c.TraceParent != "" {
		t.Fatalf("the gateway got traceparent %q", c.TraceParent)
	}
	var m map[string]json.RawMessage
	select {
	case raw := <-msgs:
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
	case <-time.After(testhub.Wait):
		t.Fatal("the watcher got no message")
	}
	if _, ok := m["traceparent"]; ok || m["id"] == nil {
		t.Fatalf("the pub/sub message: %v", m)
	}
	if tps := recordTraceParents(t, a, 5); len(tps) != 1 || tps[0] != "" {
		t.Fatalf("the delivery record keeps traceparents %q", tps)
	}
	if n := len(recA.Ended()) + len(recB.Ended()); n != 0 {
		t.Fatalf("%d spans recorded with sampling off", n)
	}
}

// recordTraceParents are the traceparents (tp) user's delivery records keep
// in Redis, "" for a record without one.
func recordTraceParents(t *testing.T, th *testhub.Hub, user int64) []string {
	t.Helper()
	recs, err := testredis.Do(t, th.Redis, "HGETALL", delivery.RecordsKey(user)).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, raw := range recs {
		var r struct{ TP string }
		if json.Unmarshal([]byte(raw), &r) == nil {
			out = append(out, r.TP)
		}
	}
	return out
}

// An ingest read is a span. An entry that carries the backend's
// traceparent continues it: its span is the child of the backend's span,
// linked to the read; the others' spans are under the read. Each entry's
// publish is under the entry's span.
func TestTracing_IngestEntriesContinueTheBackendsTrace(t *testing.T) {
	rs := testredis.Start(t)
	rec := testhub.RecordSpans(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
	rdb := testredis.Client(t, rs.Addr())
	backend := "00-" + testhub.CallerTrace + "-b7ad6b7169203331-01"
	withTrace := testhub.XAdd(t, rdb, 0, "event", `{"roomId":2,"eventType":"comment.created","data":{"n":1},"recipientIds":[9]}`, "traceparent", backend)
	without := testhub.XAdd(t, rdb, 0, "event", `{"roomId":2,"eventType":"comment.created","data":{"n":2}}`)
	bad := testhub.XAdd(t, rdb, 0, "event", `{"roomId":2,"eventType":"comment.created","data":{"n":3}}`, "traceparent", "00-not-a-trace")
	testhub.StartFull(t, rs.Addr(), testhub.WithIngest(1), nil, testhub.Extras{Tracing: rec.Provider})
	testhub.WaitIngested(t, rdb, 1)

	entries := testhub.WaitSpans(t, 3, "ingest entry", nil, rec)
	read := testhub.WaitSpans(t, 1, "ingest read", nil, rec)
	if len(read) != 1 || attr(read[0], "roomhub.entries") != "3" {
		t.Fatalf("%d read spans, first %v", len(read), read)
	}
	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, e := range entries {
		if attr(e, "roomhub.outcome") != "published" {
			t.Fatalf("entry %s: outcome %q", attr(e, "roomhub.entry_id"), attr(e, "roomhub.outcome"))
		}
		byID[attr(e, "roomhub.entry_id")] = e
	}
	sc, _ := hub.ParseTraceParent(backend)
	childOf(t, byID[withTrace], sc)
	if l := byID[withTrace].Links(); len(l) != 1 || l[0].SpanContext.SpanID() != read[0].SpanContext().SpanID() {
		t.Fatalf("the entry with a traceparent links to %+v, want the read", l)
	}
	for _, id := range []string{without, bad} {
		childOf(t, byID[id], read[0].SpanContext())
	}
	for _, id := range []string{withTrace, without, bad} {
		e := byID[id]
		pubs := testhub.Spans("lua publish_event", func(s sdktrace.ReadOnlySpan) bool { return s.Parent().SpanID() == e.SpanContext().SpanID() }, rec)
		if len(pubs) != 1 {
			t.Fatalf("entry %s has %d publish spans under it", id, len(pubs))
		}
	}
	inbox := testhub.Spans("lua inbox_add", nil, rec)
	if len(inbox) != 1 {
		t.Fatalf("%d inbox spans", len(inbox))
	}
	childOf(t, inbox[0], byID[withTrace].SpanContext())
}

// Under ratio sampling an ingest entry's trace is kept as the backend's
// sampled flag says, as the HTTP route's header is (hardening IV, 7): with
// a ratio of 0, the entry whose traceparent is sampled is traced, its
// publish too; one whose traceparent is not sampled, or that has none, is
// not.
func TestTracing_IngestHonoursTheBackendsSampledFlag(t *testing.T) {
	rs := testredis.Start(t)
	rec := testhub.RecordSpans(t, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0)))
	rdb := testredis.Client(t, rs.Addr())
	sampled := testhub.XAdd(t, rdb, 0, "event", `{"roomId":2,"eventType":"comment.created","data":{"n":1}}`, "traceparent", "00-"+testhub.CallerTrace+"-b7ad6b7169203331-01")
	testhub.XAdd(t, rdb, 0, "event", `{"roomId":2,"eventType":"comment.created","data":{"n":2}}`, "traceparent", "00-1af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
	testhub.XAdd(t, rdb, 0, "event", `{"roomId":2,"eventType":"comment.created","data":{"n":3}}`)
	testhub.StartFull(t, rs.Addr(), testhub.WithIngest(1), nil, testhub.Extras{Tracing: rec.Provider})
	testhub.WaitIngested(t, rdb, 1)
	e := testhub.WaitSpans(t, 1, "ingest entry", nil, rec)
	pub := testhub.WaitSpans(t, 1, "lua publish_event", nil, rec)
	if len(e) != 1 || attr(e[0], "roomhub.entry_id") != sampled || e[0].SpanContext().TraceID().String() != testhub.CallerTrace {
		t.Fatalf("entry spans %v, want the sampled entry's alone, in the backend's trace", e)
	}
	if len(pub) != 1 || pub[0].Parent().SpanID() != e[0].SpanContext().SpanID() {
		t.Fatalf("publish spans %v, want one under the entry", pub)
	}
	if n := len(testhub.Spans("ingest read", nil, rec)); n != 0 {
		t.Fatalf("%d read spans under a ratio of 0", n)
	}
}

// The plain path (no recipients) carries the trace across instances too:
// a single publish, each event of a batch and an ingest entry, each with
// its own caller's traceparent, give instance b one fan-out span in that
// trace, under a's publish script (hardening IV, 11: PublishMany sending an
// empty traceparent passed every test).
func TestTracing_PlainPublishesCrossInstances(t *testing.T) {
	rs := testredis.Start(t)
	recA, recB := testhub.RecordSpans(t, sdktrace.ParentBased(sdktrace.AlwaysSample())), testhub.RecordSpans(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
	a := testhub.StartFull(t, rs.Addr(), testhub.WithIngest(1), nil, testhub.Extras{Tracing: recA.Provider})
	b := testhub.StartFull(t, rs.Addr(), nil, nil, testhub.Extras{Tracing: recB.Provider})
	s := b.OpenStream(t, 8, 3, "")
	s.PresenceUpdate(t, testhub.Wait) // b's listener follows room 8
	traces := []string{"1af7651916cd43dd8448eb211c80319c", "2af7651916cd43dd8448eb211c80319c", "3af7651916cd43dd8448eb211c80319c", "4af7651916cd43dd8448eb211c80319c"}
	parent := func(tr string) string { return "00-" + tr + "-b7ad6b7169203331-01" }
	hdr := func(tr string) map[string]string {
		return map[string]string{"X-Internal-Key": a.Cfg.InternalAPIKey, "Content-Type": "application/json", "traceparent": parent(tr)}
	}
	if code, env := a.Do(t, http.MethodPost, "/api/v1/notifications/publish", hdr(traces[0]), `{"roomId":8,"eventType":"comment.created","data":{"n":1}}`); code != 200 {
		t.Fatalf("publish: %d %+v", code, env)
	}
	if code, env := a.Do(t, http.MethodPost, "/api/v1/notifications/publish/batch", hdr(traces[1]),
		`{"events":[{"roomId":8,"eventType":"comment.created","data":{"n":2}},{"roomId":8,"eventType":"comment.created","data":{"n":3}}]}`); code != 200 {
		t.Fatalf("batch: %d %+v", code, env)
	}
	testhub.XAdd(t, testredis.Client(t, rs.Addr()), 0, "event", `{"roomId":8,"eventType":"comment.created","data":{"n":4}}`, "traceparent", parent(traces[2]))
	for _, tr := range traces[:3] {
		id, _ := trace.TraceIDFromHex(tr)
		want := 1
		if tr == traces[1] {
			want = 2 // the batch's two events, one fan-out each
		}
		fans := testhub.WaitSpans(t, want, "fanout", inTrace(id), recB)
		scripts := testhub.WaitSpans(t, want, "lua publish_event", inTrace(id), recA)
		for _, f := range fans {
			if !slices.ContainsFunc(scripts, func(s sdktrace.ReadOnlySpan) bool { return f.Parent().SpanID() == s.SpanContext().SpanID() }) {
				t.Fatalf("trace %s: b's fan-out span is under %s, not a's publish script", tr, f.Parent().SpanID())
			}
		}
	}
}
