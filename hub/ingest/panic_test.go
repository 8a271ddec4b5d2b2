package ingest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"roomhub/hub/publish"
	"roomhub/internal/testredis"
)

// A panic while publishing an entry does not end the process: the entry is
// read again, and dead (INTERNAL) the second time; the entries before and
// after it are published, in order (hardening IV, 9).
func TestIngest_AnEntryThatPanicsIsDeadAfterTwoTries(t *testing.T) {
	var mu sync.Mutex
	var published []string
	rdb, in := startIngest(t, fakePublisher{maxData: 1 << 20, run: func(_ context.Context, bodies []publish.Body) []publish.Outcome {
		for _, b := range bodies {
			if string(b.Raw) == "boom" {
				panic("an entry the publish path cannot take")
			}
			mu.Lock()
			if !slices.Contains(published, string(b.Raw)) { // read twice: published once, as its idempotency key would
				published = append(published, string(b.Raw))
			}
			mu.Unlock()
		}
		return make([]publish.Outcome, len(bodies))
	}})
	for _, body := range []string{"a", "boom", "b"} {
		testredis.Do(t, rdb, "XADD", PartitionKey(0), "*", "event", body)
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
