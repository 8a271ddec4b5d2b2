package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"go.opentelemetry.io/otel/trace"

	"roomhub/internal/env"
)

func TestStart_OffUnlessAnEndpointIsSet(t *testing.T) {
	for _, vars := range []map[string]string{
		{},
		{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
	} {
		tr, err := Start(context.Background(), env.Map(vars), slog.New(slog.DiscardHandler))
		if tr != nil || err != nil {
			t.Fatalf("%v: tracing %v, err %v", vars, tr, err)
		}
	}
}

func TestStart_EachProtocol(t *testing.T) {
	for _, c := range []struct{ vars map[string]string }{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
	} {
		tr, err := Start(context.Background(), env.Map(c.vars), slog.New(slog.DiscardHandler))
		if err != nil || tr == nil {
			t.Fatalf("%v: %v", c.vars, err)
		}
		want := c.vars["OTEL_EXPORTER_OTLP_PROTOCOL"]
		if want == "" {
			want = "http/protobuf"
		}
		if tr.Protocol != want {
			t.Fatalf("%v: protocol %s", c.vars, tr.Protocol)
		}
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// A value the SDK would only warn about stops start-up, naming its variable.
//
// (hardening IV, 10: an endpoint the SDK cannot use, password and all.)
func TestStart_BadValuesNameTheirVariable(t *testing.T) {
	base := "http://u:secret@127.0.0.1:4318"
	for bad, vars := range map[string]map[string]string{
		"OTEL_TRACES_SAMPLER":                {"OTEL_TRACES_SAMPLER": "sometimes"},
		"OTEL_TRACES_SAMPLER_ARG":            {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"},
		"OTEL_EXPORTER_OTLP_PROTOCOL":        {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"},
		"OTEL_BSP_SCHEDULE_DELAY":            {"OTEL_BSP_SCHEDULE_DELAY": "5s"},
		"OTEL_TRACES_EXPORTER":               {"OTEL_TRACES_EXPORTER": "jaeger"},
		// A malformed endpoint is refused before the SDK logs it whole.
		"OTEL_EXPORTER_OTLP_ENDPOINT":        {"OTEL_EXPORTER_OTLP_ENDPOINT": "u:secret@collector:4318"},
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "HTTPS://u:secret@[bad"},
		// A bad header entry is refused before the SDK logs its value (hardening V, 13).
		"OTEL_EXPORTER_OTLP_HEADERS":        {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%zzsecret"},
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key secret"},
	} {
		if _, set := vars["OTEL_EXPORTER_OTLP_ENDPOINT"]; !set {
			vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = base
		}
		tr, err := Start(context.Background(), env.Map(vars), slog.New(slog.DiscardHandler))
		var e *env.Error
		if tr != nil || !errors.As(err, &e) || e.Var != bad {
			t.Fatalf("%v: tracing %v, err %v; want an error naming %s", vars, tr, err, bad)
		}
		if bytes.Contains([]byte(err.Error()), []byte("secret")) {
			t.Fatalf("the error shows the endpoint's password: %v", err)
		}
	}
}

func TestLogHandler_LinesCarryTheirTrace(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("app", "roomhub")
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	log.InfoContext(ctx, "traced")
	log.Info("plain")
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	var first, second map[string]any
	if len(lines) != 2 || json.Unmarshal(lines[0], &first) != nil || json.Unmarshal(lines[1], &second) != nil {
		t.Fatalf("log: %s", buf.Bytes())
	}
	if first["trace_id"] != tid.String() || first["span_id"] != sid.String() || first["app"] != "roomhub" {
		t.Fatalf("traced line: %v", first)
	}
	if _, ok := second["trace_id"]; ok {
		t.Fatalf("a line without a trace has trace_id: %v", second)
	}
}

// The SDK's logger shows a record's message and error, redacted, never the
// values it names (a header's value: hardening V, 13).
func TestSDKLog_ShowsNoValues(t *testing.T) {
	var buf bytes.Buffer
	l := logr.FromSlogHandler(sdkLog{slog.NewJSONHandler(&buf, nil)})
	l.Error(errors.New("dial https://u:hunter2@collector"), "escape header value", "value", "Bearer hunter2")
	l.Info("parse headers", "input", "authorization=hunter2")
	if out := buf.String(); strings.Contains(out, "hunter2") || !strings.Contains(out, "escape header value") || !strings.Contains(out, "(redacted)@collector") {
		t.Fatalf("the SDK's log: %s", out)
	}
}
