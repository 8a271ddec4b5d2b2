package ingest

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/publish"
	"roomhub/internal/testredis"
)

// fakePublisher stands in for the publish pipeline: run answers the bodies,
// and a publish's data may hold maxData bytes.
type fakePublisher struct {
	run     func(ctx context.Context, bodies []publish.Body) []publish.Outcome
	maxData int64
}

func (f fakePublisher) Run(ctx context.Context, bodies []publish.Body, _ bool) []publish.Outcome {
	return f.run(ctx, bodies)
}

func (f fakePublisher) MaxData() int64 { return f.maxData }

// startIngest runs one partition's consumer on a real Redis through
// publish; it stops with the test.
func startIngest(t *testing.T, publish Publisher) (rueidis.Client, *Ingest) {
	t.Helper()
	rs := testredis.Start(t)
	cfg := hub.DefaultConfig()
	cfg.RedisURL, cfg.LockTTL = "redis://"+rs.Addr(), time.Second
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
	in := New(h, Config{Partitions: 1, Batch: DefaultConfig().Batch}, log)
	in.Start(publish)
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
		n, _ := rdb.Do(context.Background(), rdb.B().Xlen().Key(PartitionKey(0)).Build()).AsInt64()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries left in the partition", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorder keeps the bodies its publisher was handed, in order.
type recorder struct {
	mu  sync.Mutex
	got []string
}

// publisher publishes every body, a publish's data bounded by maxData.
func (r *recorder) publisher(maxData int64) fakePublisher {
	return fakePublisher{maxData: maxData, run: func(_ context.Context, bodies []publish.Body) []publish.Outcome {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, b := range bodies {
			r.got = append(r.got, string(b.Raw))
		}
		return make([]publish.Outcome, len(bodies))
	}}
}

func (r *recorder) bodies() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// xadd adds an entry with event body to partition 0.
func xadd(t *testing.T, rdb rueidis.Client, body string) {
	t.Helper()
	if err := rdb.Do(context.Background(), rdb.B().Xadd().Key(PartitionKey(0)).Id("*").FieldValue().FieldValue("event", body).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// trackingClient is the id of the connection Redis lists as tracking keys
// in broadcast mode (the waker's), or "".
func trackingClient(rdb rueidis.Client) string {
	list, _ := rdb.Do(context.Background(), rdb.B().ClientList().Build()).ToString()
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "flags=tB") {
			return strings.TrimPrefix(strings.Fields(line)[0], "id=")
		}
	}
	return ""
}
