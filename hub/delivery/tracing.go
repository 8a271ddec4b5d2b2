package delivery

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"roomhub/hub"
)

// maxLinks bounds the links of one attempt's span (a digest may carry many
// notifications).
const maxLinks = 32

// attemptSpan starts the span of one attempt at hand-off h: in the trace of
// its first notification's publish when that trace was sampled, linked to
// the other notifications' publishes.
func (d *Delivery) attemptSpan(ctx context.Context, user int64, h handoff) (context.Context, trace.Span) {
	var parent trace.SpanContext
	var links []trace.Link
	for _, tp := range h.traces {
		sc, ok := hub.ParseTraceParent(tp)
		switch {
		case !ok:
		case !parent.IsValid():
			parent = sc
		case len(links) < maxLinks && sc.TraceID() != parent.TraceID():
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	nid, _, _ := strings.Cut(h.head, "|")
	return d.core.Tracer().Start(ctx, "delivery "+h.channel, trace.WithSpanKind(trace.SpanKindProducer), trace.WithLinks(links...),
		trace.WithAttributes(hub.AttrUser.Int64(user), attribute.String("roomhub.channel", h.channel),
			attribute.Int("roomhub.attempt", h.attempt), attribute.Int("roomhub.notifications", len(h.items)),
			attribute.String("roomhub.notification_id", nid)))
}

// endAttemptSpan records how an attempt ended and ends its span.
func endAttemptSpan(span trace.Span, a answer) {
	switch {
	case a.sent:
		span.SetAttributes(attribute.String("roomhub.outcome", "sent"))
	case a.skipped != "":
		span.SetAttributes(attribute.String("roomhub.outcome", "skipped"), attribute.String("roomhub.reason", a.skipped))
	default:
		span.SetAttributes(attribute.String("roomhub.outcome", "failed"), attribute.String("roomhub.error_code", a.code),
			attribute.Bool("roomhub.retryable", a.retryable))
		span.SetStatus(codes.Error, a.code)
	}
	span.End()
}
