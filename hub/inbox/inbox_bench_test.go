package inbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/internal/testredis"
)

// BenchmarkFlushReads flushes pending reads (100 users × 200 reads) into a
// local HTTP sink and reports reads/s. Run: go test -run '^$' -bench FlushReads ./hub/inbox/
func BenchmarkFlushReads(b *testing.B) {
	rs := testredis.Start(b)
	rdb := testredis.Client(b, rs.Addr())
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer sink.Close()
	ib := newTestInbox(b, rdb, func(cfg *Config) { cfg.ReadSinkURL = sink.URL })
	const users, reads = 100, 200
	b.ResetTimer()
	var flushed int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for u := int64(1); u <= users; u++ {
			if err := ib.markPending(context.Background(), u); err != nil {
				b.Fatal(err)
			}
			cmd := rdb.B().Hset().Key(ReadStatusKey(u)).FieldValue()
			for r := 0; r < reads; r++ {
				cmd = cmd.FieldValue(fmt.Sprintf("%d:%d-0", i, r), "2026-11-23T00:00:00.000Z")
			}
			if err := rdb.Do(context.Background(), cmd.Build()).Error(); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		st, err := ib.FlushReads(context.Background())
		if err != nil || st.Failed {
			b.Fatal(st, err)
		}
		flushed += st.Flushed
	}
	b.ReportMetric(float64(flushed)/b.Elapsed().Seconds(), "reads/s")
}

// newTestInbox returns an inbox on a core on rdb, neither started.
func newTestInbox(tb testing.TB, rdb rueidis.Client, mutate func(*Config)) *Inbox {
	tb.Helper()
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return New(hub.New(hub.DefaultConfig(), rdb, log, hub.NewMetrics(nil)), cfg, log)
}
