package ingest

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/internal/testredis"
)

// A panic while publishing an entry does not end the process: the entry is
// read again, and dead (INTERNAL) the second time; the entries before and
// after it are published, in order (hardening IV, 9).
func TestIngest_AnEntryThatPanicsIsDeadAfterTwoTries(t *testing.T) {
	rs := testredis.Start(t)
	cfg := hub.DefaultConfig()
	cfg.RedisURL, cfg.IngestPartitions, cfg.LockTTL = "redis://"+rs.Addr(), 1, time.Second
	opt, err := hub.RedisOptions(cfg.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := hub.New(cfg, rdb, log, hub.NewMetrics(cfg.EventTypes))
	in := New(h, log)
	var mu sync.Mutex
	var published []string
	in.Start(func(_ context.Context, entries []Entry) []Outcome {
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
	})
	h.Start()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(ctx)
	}()
	for _, body := range []string{"a", "boom", "b"} {
		testredis.Do(t, rdb, "XADD", hub.IngestKey(0), "*", "event", body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, _ := rdb.Do(context.Background(), rdb.B().Xlen().Key(hub.IngestKey(0)).Build()).AsInt64()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries left: the partition stalled behind the entry that panics", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
