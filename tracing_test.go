package main

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

// collector is an OTLP/HTTP trace receiver: it keeps every span exported to
// it, with its resource's service.name.
type collector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []exported
}

type exported struct {
	service string
	span    *tracepb.Span
}

func startCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, _ := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(raw, &req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, exported{service, s})
				}
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.Close)
	return c
}

// named is the exported spans named name.
func (c *collector) named(name string) []exported {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []exported
	for _, e := range c.spans {
		if e.span.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.spans)
}

// publishTraced publishes one event to room 3 with the caller's traceparent.
func publishTraced(t *testing.T, base, traceparent string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/notifications/publish",
		strings.NewReader(`{"roomId":3,"eventType":"comment.created","data":{}}`))
	req.Header.Set("X-Internal-Key", "local_dev_internal_key")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", traceparent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("publish: %d", resp.StatusCode)
	}
}

// The binary configured by the standard variables alone exports its spans
// over OTLP/HTTP, as the service OTEL_SERVICE_NAME names, within
// OTEL_BSP_SCHEDULE_DELAY; its log lines of a request carry the trace.
// With OTEL_TRACES_SAMPLER=always_off it exports nothing, even at exit.
func TestBinary_TracesReachTheCollector(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	rs := testredis.Start(t)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceparent := "00-" + traceID + "-00f067aa0ba902b7-01"

	col := startCollector(t)
	url, _, logs := testbin.Start(t, bin, "REDIS_URL="+rs.URL(), "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL,
		"OTEL_SERVICE_NAME=roomhub-e2e", "OTEL_BSP_SCHEDULE_DELAY=100", "LOG_LEVEL=debug")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	publishTraced(t, url, traceparent)
	testbin.Eventually(t, 15*time.Second, "the publish's spans at the collector", func() bool {
		return len(col.named("lua publish_event")) > 0 && len(col.named("POST /api/v1/notifications/publish")) > 0
	})
	for _, name := range []string{"lua publish_event", "POST /api/v1/notifications/publish"} {
		e := col.named(name)[0]
		if e.service != "roomhub-e2e" || hex.EncodeToString(e.span.TraceId) != traceID {
			t.Fatalf("%s: service %q, trace %x", name, e.service, e.span.TraceId)
		}
	}
	if !strings.Contains(logs.String(), `"trace_id":"`+traceID+`"`) {
		t.Fatalf("no log line carries the trace:\n%s", logs.String())
	}

	off := startCollector(t)
	url, proc, _ := testbin.Start(t, bin, "REDIS_URL="+rs.URL(), "OTEL_EXPORTER_OTLP_ENDPOINT="+off.URL,
		"OTEL_TRACES_SAMPLER=always_off", "OTEL_BSP_SCHEDULE_DELAY=100")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	publishTraced(t, url, traceparent)
	if err := proc.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.Exited(): // the exporter is flushed and shut down on the way out
	case <-time.After(30 * time.Second):
		t.Fatal("the hub did not exit after SIGTERM")
	}
	if n := off.count(); n != 0 {
		t.Fatalf("%d spans exported with sampling off", n)
	}
}
