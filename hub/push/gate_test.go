package push

import (
	"context"
	"testing"
	"time"
)

// The gate: an origin's slots are bounded (the one past them waits a
// second, not tried); failures in a row pause the origin, and only it;
// the first push after a pause that fails again pauses it twice as long;
// a success ends it all; an origin with nothing to remember is forgotten.
func TestGate_BoundsAndPausesAnOrigin(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := NewGate(8, 2, func() time.Time { return now })
	ctx := context.Background()
	enter := func(o string) time.Time {
		t.Helper()
		w, err := g.Enter(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for range 2 {
		if enter("a") != (time.Time{}) {
			t.Fatal("two slots of a")
		}
	}
	if w := enter("a"); !w.Equal(now.Add(busyWait)) {
		t.Fatalf("a third push to a: wait %v, want a second", w)
	}
	if enter("b") != (time.Time{}) {
		t.Fatal("b is not a")
	}
	g.Leave("b", false)
	g.Leave("a", false)
	g.Leave("a", false)
	if len(g.origins) != 0 {
		t.Fatalf("%d origins remembered with nothing to remember", len(g.origins))
	}
	for range breakAfter {
		enter("a")
		g.Leave("a", true)
	}
	if w := enter("a"); !w.Equal(now.Add(pauseFor)) {
		t.Fatalf("after %d failures: wait %v, want paused for %v", breakAfter, w, pauseFor)
	}
	if enter("b") != (time.Time{}) {
		t.Fatal("b paused with a")
	}
	g.Leave("b", true)
	now = now.Add(pauseFor)
	enter("a")
	g.Leave("a", true)
	if w := enter("a"); !w.Equal(now.Add(2 * pauseFor)) {
		t.Fatalf("failing again after a pause: wait %v, want %v", w.Sub(now), 2*pauseFor)
	}
	now = now.Add(2 * pauseFor)
	enter("a")
	g.Leave("a", false)
	enter("a")
	g.Leave("a", true)
	if w := enter("a"); w != (time.Time{}) {
		t.Fatalf("one failure after a success: wait %v", w.Sub(now))
	}
	g.Leave("a", false)

	// The instance's slots: the ninth push waits for one, until its context ends.
	g = NewGate(1, 2, func() time.Time { return now })
	enter("x")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.Enter(cctx, "y"); err == nil {
		t.Fatal("a push past the instance's slots did not wait")
	}
	g.Leave("x", false)
	if len(g.origins) != 0 {
		t.Fatalf("a push that never went is remembered: %+v", g.origins["y"])
	}
}
