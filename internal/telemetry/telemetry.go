// Package telemetry sets up roomhub's OpenTelemetry tracing from the
// standard OTEL_* variables, and gives log lines the trace they belong to.
//
// Tracing is off unless an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). The
// SDK reads the rest itself: the exporter's endpoint, headers, timeout and
// TLS, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER
// and its argument, and the batch processor's OTEL_BSP_* (delay, queue and
// batch sizes). Start checks the values the SDK would only warn about, so
// that a typo stops start-up with the variable's name.
package telemetry

import (
	"context"
	"log/slog"
	"math"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"roomhub/internal/env"
)

// ServiceName is the service.name of roomhub's spans unless
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) says
// otherwise.
const ServiceName = "roomhub"

// Tracing is the configured tracer provider.
type Tracing struct {
	Provider *sdktrace.TracerProvider
	Endpoint string // where spans go (credentials redacted)
	Protocol string // http/protobuf or grpc
}

// Shutdown exports what is buffered and stops the exporter (within ctx).
func (t *Tracing) Shutdown(ctx context.Context) error { return t.Provider.Shutdown(ctx) }

// samplers are the OTEL_TRACES_SAMPLER values the SDK implements.
var samplers = map[string]bool{
	"always_on": true, "always_off": true, "traceidratio": true,
	"parentbased_always_on": true, "parentbased_always_off": true, "parentbased_traceidratio": true,
}

// Start builds the tracer provider the OTEL_* variables describe (read
// through lookup), or returns nil when tracing is off. The SDK's own errors
// (a failed export) go to log.
func Start(ctx context.Context, lookup func(string) (string, bool), log *slog.Logger) (*Tracing, error) {
	l := env.New(lookup)
	endpointVar := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	endpoint := l.Str(endpointVar, "")
	if endpoint == "" {
		endpointVar, endpoint = "OTEL_EXPORTER_OTLP_ENDPOINT", l.Str("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	}
	if endpoint == "" || strings.EqualFold(l.Str("OTEL_SDK_DISABLED", ""), "true") {
		return nil, nil
	}
	// Checked before the SDK sees it: the SDK logs a bad one whole (a
	// password with it) and goes on without tracing.
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		shown := endpoint
		if i := strings.LastIndexByte(shown, '@'); i >= 0 { // credentials without a scheme Redact would know
			shown = "(redacted)" + shown[i:]
		}
		l.Fail(endpointVar, shown, "must be an http:// or https:// URL")
	}
	switch e := l.Str("OTEL_TRACES_EXPORTER", "otlp"); e {
	case "otlp":
	case "none":
		return nil, nil
	default:
		l.Fail("OTEL_TRACES_EXPORTER", e, "roomhub exports otlp (or none)")
	}
	checkSampler(l)
	checkHeaders(l, "OTEL_EXPORTER_OTLP_HEADERS")
	checkHeaders(l, "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
	for _, k := range []string{"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"} {
		l.Int(k, 1, 1, math.MaxInt32) // the batch processor reads them itself
	}
	protoVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol := l.Str(protoVar, "")
	if protocol == "" {
		protoVar, protocol = "OTEL_EXPORTER_OTLP_PROTOCOL", l.Str("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	}
	if protocol != "http/protobuf" && protocol != "grpc" {
		l.Fail(protoVar, protocol, "must be http/protobuf or grpc")
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	// The SDK reports export failures through its one process-wide error
	// handler (it has no other): they go to log, their URLs redacted. Its
	// logger (what it says of the variables it reads: a header's value
	// among them) goes to log too, its message and error alone, redacted.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: the OpenTelemetry SDK", "err", env.Redact(err.Error()))
	}))
	otel.SetLogger(logr.FromSlogHandler(sdkLog{log.Handler()}))
	var exp sdktrace.SpanExporter
	var err error
	if protocol == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, &env.Error{Var: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: endpoint, Reason: err.Error()}
	}
	// Later sources win: the defaults, then what the variables say.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName), attribute.String("service.version", version())),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, &env.Error{Var: "OTEL_RESOURCE_ATTRIBUTES", Value: l.Str("OTEL_RESOURCE_ATTRIBUTES", ""), Reason: err.Error()}
	}
	// The sampler (OTEL_TRACES_SAMPLER) and the batcher (OTEL_BSP_*) read
	// their variables themselves.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Endpoint: env.Redact(endpoint), Protocol: protocol}, nil
}

// checkHeaders checks the OTLP headers variable name as the SDK reads it
// (comma-separated key=value, the key an HTTP token, the value
// percent-encoded), before the SDK sees it: the SDK logs a bad entry, its
// value with it, and that value is a collector's credential.
func checkHeaders(l *env.Loader, name string) {
	v := l.Str(name, "")
	if v == "" {
		return
	}
	for entry := range strings.SplitSeq(v, ",") {
		k, val, found := strings.Cut(entry, "=")
		k = strings.TrimSpace(k)
		_, err := url.PathUnescape(val)
		if !found || k == "" || strings.IndexFunc(k, func(r rune) bool { return !tokenChar(r) }) >= 0 || err != nil {
			l.Fail(name, "(hidden)", "must be comma-separated key=value pairs, each key an HTTP header name, each value percent-encoded")
			return
		}
	}
}

// tokenChar says whether r may be in an HTTP header's name (RFC 9110 token).
func tokenChar(r rune) bool {
	return r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// sdkLog is the OpenTelemetry SDK's logger: each record with its message
// and error alone (redacted), never the other values it names (a header's
// value, a file's path).
type sdkLog struct{ h slog.Handler }

func (s sdkLog) Enabled(ctx context.Context, l slog.Level) bool { return s.h.Enabled(ctx, l) }
func (s sdkLog) WithAttrs([]slog.Attr) slog.Handler             { return s }
func (s sdkLog) WithGroup(string) slog.Handler                  { return s }
func (s sdkLog) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, "tracing: the OpenTelemetry SDK: "+env.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" || a.Key == "error" {
			out.AddAttrs(slog.String("err", env.Redact(a.Value.String())))
		}
		return true
	})
	return s.h.Handle(ctx, out)
}

// checkSampler checks OTEL_TRACES_SAMPLER and its argument as the SDK reads them.
func checkSampler(l *env.Loader) {
	name := strings.ToLower(l.Str("OTEL_TRACES_SAMPLER", ""))
	if name == "" {
		return
	}
	if !samplers[name] {
		l.Fail("OTEL_TRACES_SAMPLER", name,
			"must be always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio")
		return
	}
	if arg := l.Str("OTEL_TRACES_SAMPLER_ARG", ""); strings.HasSuffix(name, "traceidratio") && arg != "" {
		if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
			l.Fail("OTEL_TRACES_SAMPLER_ARG", arg, "must be a ratio from 0 to 1")
		}
	}
}

// version is the build's VCS revision (12 digits, "+dirty" when the tree
// was), or "dev": the service.version of the spans.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// LogHandler wraps h: a line logged with a context (InfoContext and the
// like) whose span is valid carries trace_id and span_id.
func LogHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ slog.Handler }

func (t traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return t.Handler.Handle(ctx, r)
}

func (t traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{t.Handler.WithAttrs(as)}
}

func (t traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{t.Handler.WithGroup(name)}
}
