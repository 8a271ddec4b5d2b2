package webpush

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// An answer over the bounds is a failed attempt whatever its status: a
// 9 MiB header, or a body over 4 KiB (read no further); 4 KiB of body is
// an answer like any other.
func TestSender_AnswersOverTheBoundsFail(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/header":
			w.Header().Set("X-Filler", strings.Repeat("a", 9<<20))
		case "/body":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(make([]byte, 1<<20))
			return
		case "/fits":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(make([]byte, maxAnswerBody))
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	k, _ := NewKeys()
	s := NewSender(k, "mailto:a@b.c", true, 5*time.Second, srv.Client().Transport.(*http.Transport).TLSClientConfig)
	defer s.Close()
	for path, tooLarge := range map[string]bool{"/header": true, "/body": true, "/fits": false} {
		r := s.Send(context.Background(), sub(srv.URL+path), Push{Payload: []byte("{}"), TTL: time.Minute})
		if errors.Is(r.Err, ErrAnswerTooLarge) != tooLarge || (!tooLarge && r.Status != http.StatusCreated) {
			t.Errorf("%s: %+v, want over the bounds: %v", path, r, tooLarge)
		}
		if tooLarge && !r.failed() {
			t.Errorf("%s: not counted against the origin", path)
		}
	}
}

// The gate: an origin's slots are bounded (the one past them waits a
// second, not tried); failures in a row pause the origin, and only it;
// the first push after a pause that fails again pauses it twice as long;
// a success ends it all; an origin with nothing to remember is forgotten.
func TestGate_BoundsAndPausesAnOrigin(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := newGate(8, 2, func() time.Time { return now })
	ctx := context.Background()
	enter := func(o string) time.Time {
		t.Helper()
		w, err := g.enter(ctx, o)
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
	g.leave("b", false)
	g.leave("a", false)
	g.leave("a", false)
	if len(g.origins) != 0 {
		t.Fatalf("%d origins remembered with nothing to remember", len(g.origins))
	}
	for range breakAfter {
		enter("a")
		g.leave("a", true)
	}
	if w := enter("a"); !w.Equal(now.Add(pauseFor)) {
		t.Fatalf("after %d failures: wait %v, want paused for %v", breakAfter, w, pauseFor)
	}
	if enter("b") != (time.Time{}) {
		t.Fatal("b paused with a")
	}
	g.leave("b", true)
	now = now.Add(pauseFor)
	enter("a")
	g.leave("a", true)
	if w := enter("a"); !w.Equal(now.Add(2 * pauseFor)) {
		t.Fatalf("failing again after a pause: wait %v, want %v", w.Sub(now), 2*pauseFor)
	}
	now = now.Add(2 * pauseFor)
	enter("a")
	g.leave("a", false)
	enter("a")
	g.leave("a", true)
	if w := enter("a"); w != (time.Time{}) {
		t.Fatalf("one failure after a success: wait %v", w.Sub(now))
	}
	g.leave("a", false)

	// The instance's slots: the ninth push waits for one, until its context ends.
	g = newGate(1, 2, func() time.Time { return now })
	enter("x")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.enter(cctx, "y"); err == nil {
		t.Fatal("a push past the instance's slots did not wait")
	}
	g.leave("x", false)
	if len(g.origins) != 0 {
		t.Fatalf("a push that never went is remembered: %+v", g.origins["y"])
	}
}
