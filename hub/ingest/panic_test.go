package ingest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"roomhub/hub"
	"roomhub/internal/testredis"
)

// A panic while publishing an entry does not end the process: the entry is
// read again, and dead (INTERNAL) the second time; the entries before and
// after it are published, in order (hardening IV, 9).
func TestIngest_AnEntryThatPanicsIsDeadAfterTwoTries(t *testing.T) {
	var mu sync.Mutex
	var published []string
	rdb, in := startIngest(t, func(_ context.Context, entries []Entry) []Outcome {
		out := make([]Outcome, len(entries))
		for i, e := range entries {
			if string(e.Body) == "boom" {
				panic("an entry the publish path cannot take")
			}
			mu.Lock()
			if !slices.Contains(published, string(e.Body)) { // read twice: published once, as its idempotency key would
				published = append(published, string(e.Body))
			}
			mu.Unlock()
			out[i] = Outcome{Result: Published}
		}
		return out
	}, 1<<20)
	for _, body := range []string{"a", "boom", "b"} {
		testredis.Do(t, rdb, "XADD", hub.IngestKey(0), "*", "event", body)
	}
	waitDrained(t, rdb)
	mu.Lock()
	got := slices.Clone(published)
	mu.Unlock()
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("published %v, want [a b]", got)
	}
	dead, _, err := in.Dead(context.Background(), 0, nil, 10)
	if err != nil || len(dead) != 1 || dead[0].Event != "boom" || dead[0].Code != "INTERNAL" {
		t.Fatalf("dead %+v, %v: want the entry that panicked, INTERNAL", dead, err)
	}
}
