package hub

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracing (DESIGN.md, Tracing). The hub records spans through the tracer
// UseTracing gives it; without one it records none, at no cost. A span that
// only refines another (a script inside a request) is started only under a
// span that records: an unsampled publish costs nothing more. A trace
// context crosses Redis as a W3C traceparent: in a room's pub/sub message
// and in each delivery record, and only when its trace is sampled.

// TracerName names the hub's tracer (its instrumentation scope).
const TracerName = "roomhub"

// Attribute keys of the hub's spans.
const (
	AttrRoom      = attribute.Key("roomhub.room_id")
	AttrEventType = attribute.Key("roomhub.event_type")
	AttrStreamID  = attribute.Key("roomhub.stream_id")
	AttrUser      = attribute.Key("roomhub.user_id")
)

// UseTracing makes the hub, and the packages built on it, record spans
// through tp. Call it before Start.
func (h *Hub) UseTracing(tp trace.TracerProvider) {
	h.tracer = tp.Tracer(TracerName)
}

// Tracer returns the hub's tracer: one that records nothing unless
// UseTracing gave it another.
func (h *Hub) Tracer() trace.Tracer { return h.tracer }

// noTracer and noSpan record nothing.
var (
	noTracer = noop.NewTracerProvider().Tracer(TracerName)
	noSpan   = trace.SpanFromContext(context.Background())
)

// Child starts a span named name under ctx's span when that one records; else
// it returns ctx and a span that records nothing. End it either way.
func (h *Hub) Child(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, noSpan
	}
	return h.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// WithSpan returns ctx carrying span, or ctx when span is nil.
func WithSpan(ctx context.Context, span trace.Span) context.Context {
	if span == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, span)
}

// TraceParent returns the W3C traceparent of sc when its trace is sampled,
// else "": an unsampled trace has nothing to join.
func TraceParent(sc trace.SpanContext) string {
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
}

// ParseTraceParent reads a W3C traceparent; ok is false when s is not one.
func ParseTraceParent(s string) (sc trace.SpanContext, ok bool) {
	if s == "" {
		return sc, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	sc = trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

// InjectTrace puts ctx's trace context into an outgoing request's headers
// when its trace is sampled: a backend the hub calls continues it.
func InjectTrace(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsSampled() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	}
}
