package inbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/internal/testredis"
)

// BenchmarkPublishRecipients publishes one event with 0, 100, 1,000 and
// 10,000 recipients on a real redis-server and reports publishes/s and the
// commands Redis ran per publish (scripts and what they call). The round
// trips are 1 without recipients; with them 4 whatever their number: list
// the room in outbox:rooms, the publish script, one pipeline of inbox
// scripts (a batch of recipients each), clear the outbox entry.
// Run: go test -run '^$' -bench PublishRecipients ./hub/inbox/
func BenchmarkPublishRecipients(b *testing.B) {
	rs := testredis.Start(b)
	benchmarkPublishRecipients(b, testredis.Client(b, rs.Addr()), []int{0, 100, 1000, 10000})
}

// BenchmarkPublishRecipientsCluster is BenchmarkPublishRecipients on a real
// 3-master Redis Cluster (one inbox call per recipient, pipelined per master;
// the commands counted are the first master's).
func BenchmarkPublishRecipientsCluster(b *testing.B) {
	cl := testredis.StartCluster(b)
	benchmarkPublishRecipients(b, testredis.Client(b, cl.Addrs()...), []int{100, 1000})
}

func benchmarkPublishRecipients(b *testing.B, rdb rueidis.Client, sizes []int) {
	ib := newTestInbox(b, rdb, nil)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("recipients=%d", n), func(b *testing.B) {
			req := PublishRequest{PublishRequest: hub.PublishRequest{Room: 1, EventType: "comment.created", Data: []byte(`{"text":"hello"}`)}}
			for i := 0; i < n; i++ {
				req.RecipientIDs = append(req.RecipientIDs, int64(i+1))
			}
			before, cpu := testredis.Stat(b, rdb, "stats", "total_commands_processed"), testredis.CPU(b, rdb)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := ib.Publish(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu = testredis.CPU(b, rdb) - cpu
			after := testredis.Stat(b, rdb, "stats", "total_commands_processed")
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "publishes/s")
			b.ReportMetric((after-before-3)/float64(b.N), "redis-commands/op") // less the three INFO before
			b.ReportMetric(cpu*1000/float64(b.N), "redis-cpu-ms/op")
		})
	}
}

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
