package ingest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/internal/testredis"
)

// startIngest runs one partition's consumer on a real Redis through
// publish, entries over maxEntry dead unread; it stops with the test.
func startIngest(t *testing.T, publish PublishFunc, maxEntry int64) (rueidis.Client, *Ingest) {
	t.Helper()
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
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := hub.New(cfg, rdb, log, hub.NewMetrics(cfg.EventTypes))
	in := New(h, log)
	in.Start(publish, maxEntry)
	h.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(ctx)
		rdb.Close()
	})
	return rdb, in
}

// waitDrained waits until partition 0 has nothing left to do.
func waitDrained(t *testing.T, rdb rueidis.Client) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, _ := rdb.Do(context.Background(), rdb.B().Xlen().Key(hub.IngestKey(0)).Build()).AsInt64()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries left in the partition", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
