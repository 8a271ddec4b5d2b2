package hub

import (
	"strings"
	"testing"
)

// FuzzParseTraceParent: an ingest entry's traceparent field is the
// backend's text, read as it comes. What parses is a valid span context
// that, sampled, prints back as the same trace and span.
func FuzzParseTraceParent(f *testing.F) {
	for _, s := range []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
		"00-not-a-trace", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, ok := ParseTraceParent(s)
		if !ok {
			return
		}
		if !sc.IsValid() {
			t.Fatalf("%q: ok but not valid", s)
		}
		if tp := TraceParent(sc); sc.IsSampled() && !strings.Contains(strings.ToLower(s), sc.TraceID().String()) {
			t.Fatalf("%q parses to trace %s (prints %q)", s, sc.TraceID(), tp)
		}
	})
}
