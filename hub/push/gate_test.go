package push

import (
	"testing"
	"time"
)

// The gate: an origin's slots are bounded (the one past them waits a
// second, not tried); failures in a row pause the origin, and only it;
// the first push after a pause that fails again pauses it twice as long;
// a success ends it all; an origin with nothing to remember is forgotten.
func TestGate_BoundsAndPausesAnOrigin(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	originsBoundedAndPaused(t, &now)
	instanceSlots(t, now)
}

// originsBoundedAndPaused: an origin's slots, its pauses and their end, on
// a gate whose clock is *clock (the test moves it).
func originsBoundedAndPaused(t *testing.T, clock *time.Time) {
	g := NewGate(8, 2, func() time.Time { return *clock })
	passes := map[string][]Pass{}
	enter := func(o string) time.Time {
		t.Helper()
		p, w := g.Enter(o, false)
		if w.IsZero() {
			passes[o] = append(passes[o], p)
		}
		return w
	}
	leave := func(o string, failed bool) {
		t.Helper()
		p := passes[o][0]
		passes[o] = passes[o][1:]
		g.Leave(p, failed, false, "")
	}
	for range 2 {
		if enter("a") != (time.Time{}) {
			t.Fatal("two slots of a")
		}
	}
	if w := enter("a"); !w.Equal(clock.Add(busyWait)) {
		t.Fatalf("a third push to a: wait %v, want a second", w)
	}
	if enter("b") != (time.Time{}) {
		t.Fatal("b is not a")
	}
	leave("b", false)
	leave("a", false)
	leave("a", false)
	if len(g.origins) != 0 || len(g.all) != 0 {
		t.Fatalf("%d origins remembered with nothing to remember, %d slots held", len(g.origins), len(g.all))
	}
	for range breakAfter {
		enter("a")
		leave("a", true)
	}
	if w := enter("a"); !w.Equal(clock.Add(pauseFor)) {
		t.Fatalf("after %d failures: wait %v, want paused for %v", breakAfter, w, pauseFor)
	}
	if enter("b") != (time.Time{}) {
		t.Fatal("b paused with a")
	}
	leave("b", true)
	*clock = clock.Add(pauseFor)
	enter("a")
	leave("a", true)
	if w := enter("a"); !w.Equal(clock.Add(2 * pauseFor)) {
		t.Fatalf("failing again after a pause: wait %v, want %v", w.Sub(*clock), 2*pauseFor)
	}
	*clock = clock.Add(2 * pauseFor)
	enter("a")
	leave("a", false)
	enter("a")
	leave("a", true)
	if w := enter("a"); w != (time.Time{}) {
		t.Fatalf("one failure after a success: wait %v", w.Sub(*clock))
	}
	leave("a", false)
}

// instanceSlots: past the instance's slots a push waits a second (not an
// attempt, and never blocked here), unless it is a hand-off's share.
func instanceSlots(t *testing.T, now time.Time) {
	g := NewGate(1, 2, func() time.Time { return now })
	x, _ := g.Enter("x", false)
	if _, w := g.Enter("y", false); !w.Equal(now.Add(busyWait)) {
		t.Fatalf("a push past the instance's slots: wait %v, want a second", w)
	}
	if len(g.origins) != 1 {
		t.Fatalf("a push that never went is remembered: %+v", g.origins["y"])
	}
	y, w := g.Enter("y", true)
	if !w.IsZero() {
		t.Fatal("a hand-off's share waited for the instance's slots")
	}
	g.Leave(y, false, false, "")
	g.Leave(x, false, false, "")
	if len(g.all) != 0 || len(g.origins) != 0 {
		t.Fatalf("after both left: %d slots held, %d origins", len(g.all), len(g.origins))
	}
}

// Answers about one subscription (429, 5xx) count against the breaker once
// a person: one user's many refusing subscriptions pause nobody, five
// people's do; no answer always counts (hardening V, 15).
func TestGate_OnePersonsRefusalsCountOnce(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := NewGate(8, 8, func() time.Time { return now })
	refuse := func(who string) {
		p, w := g.Enter("a", false)
		if !w.IsZero() {
			t.Fatalf("paused after %s's refusal", who)
		}
		g.Leave(p, false, true, who)
	}
	for range 3 * breakAfter {
		refuse("7")
	}
	for u := range breakAfter - 2 {
		refuse(string(rune('a' + u)))
	}
	if _, w := g.Enter("a", false); !w.IsZero() {
		t.Fatal("paused by one person and three others")
	}
	g.Leave(Pass{origin: "a", pooled: true}, false, true, "z") // the fifth person: paused
	if _, w := g.Enter("a", false); !w.Equal(now.Add(pauseFor)) {
		t.Fatalf("five people's refusals: wait %v, want a pause", w)
	}
}
