package testhub

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Recorded is a tracer provider for a test hub and what it recorded: every
// span, kept in memory when it ends.
type Recorded struct {
	*tracetest.SpanRecorder
	Provider *sdktrace.TracerProvider // what a hub records through (Extras.Tracing)
}

// RecordSpans is a provider sampling by sampler that records every span,
// shut down with the test.
func RecordSpans(t testing.TB, sampler sdktrace.Sampler) *Recorded {
	r := &Recorded{SpanRecorder: tracetest.NewSpanRecorder()}
	r.Provider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.SpanRecorder), sdktrace.WithSampler(sampler))
	t.Cleanup(func() { _ = r.Provider.Shutdown(context.Background()) })
	return r
}

// Spans are the ended spans of every recorder named name that match.
func Spans(name string, match func(sdktrace.ReadOnlySpan) bool, recs ...*Recorded) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, r := range recs {
		for _, s := range r.Ended() {
			if s.Name() == name && (match == nil || match(s)) {
				out = append(out, s)
			}
		}
	}
	return out
}

// WaitSpans waits until the recorders hold n spans named name that match.
func WaitSpans(t *testing.T, n int, name string, match func(sdktrace.ReadOnlySpan) bool, recs ...*Recorded) []sdktrace.ReadOnlySpan {
	t.Helper()
	var got []sdktrace.ReadOnlySpan
	Eventually(t, 15*time.Second, fmt.Sprintf("%d %q spans", n, name), func() bool {
		got = Spans(name, match, recs...)
		return len(got) >= n
	})
	return got
}

// CallerTrace is the trace id a test caller sends in its traceparent.
const CallerTrace = "0af7651916cd43dd8448eb211c80319c"
