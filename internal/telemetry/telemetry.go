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
	"strconv"
	"strings"

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
// through lookup), or returns nil when tracing is off. version is the
// service.version of the spans.
func Start(ctx context.Context, lookup func(string) (string, bool), version string) (*Tracing, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	endpoint := get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		endpoint = get("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if endpoint == "" || strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	switch e := get("OTEL_TRACES_EXPORTER"); e {
	case "", "otlp":
	case "none":
		return nil, nil
	default:
		return nil, &env.Error{Var: "OTEL_TRACES_EXPORTER", Value: e, Reason: "roomhub exports otlp (or none)"}
	}
	if err := checkSampler(get("OTEL_TRACES_SAMPLER"), get("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		return nil, err
	}
	for _, k := range []string{"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"} {
		if v := get(k); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n <= 0 {
				return nil, &env.Error{Var: k, Value: v, Reason: "must be a positive whole number"}
			}
		}
	}
	protoVar, protocol := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protoVar, protocol = "OTEL_EXPORTER_OTLP_PROTOCOL", get("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		protocol = "http/protobuf"
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, &env.Error{Var: protoVar, Value: protocol, Reason: "must be http/protobuf or grpc"}
	}
	if err != nil {
		return nil, &env.Error{Var: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: endpoint, Reason: err.Error()}
	}
	// Later sources win: the defaults, then what the variables say.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, &env.Error{Var: "OTEL_RESOURCE_ATTRIBUTES", Value: get("OTEL_RESOURCE_ATTRIBUTES"), Reason: err.Error()}
	}
	// The sampler (OTEL_TRACES_SAMPLER) and the batcher (OTEL_BSP_*) read
	// their variables themselves.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Endpoint: env.Redact(endpoint), Protocol: protocol}, nil
}

// checkSampler checks OTEL_TRACES_SAMPLER and its argument as the SDK reads them.
func checkSampler(name, arg string) error {
	name = strings.ToLower(name)
	if name == "" {
		return nil
	}
	if !samplers[name] {
		return &env.Error{Var: "OTEL_TRACES_SAMPLER", Value: name,
			Reason: "must be always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio"}
	}
	if strings.HasSuffix(name, "traceidratio") && arg != "" {
		if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
			return &env.Error{Var: "OTEL_TRACES_SAMPLER_ARG", Value: arg, Reason: "must be a ratio from 0 to 1"}
		}
	}
	return nil
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
