package publish

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testredis"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// BenchmarkPublishRecipients publishes one event with 0, 100, 1,000 and
// 10,000 recipients on a real redis-server and reports publishes/s and the
// commands Redis ran per publish (scripts and what they call). The round
// trips are 1 without recipients; with them 4 whatever their number: list
// the room in outbox:rooms, the publish script, one pipeline of inbox
// scripts (a batch of recipients each), clear the outbox entry.
// Run: go test -run '^$' -bench PublishRecipients ./hub/publish/
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
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := hub.New(hub.DefaultConfig(), rdb, log, hub.NewMetrics(nil))
	p := New(h, inbox.New(h, inbox.DefaultConfig(), log), DefaultConfig())
	for _, n := range sizes {
		b.Run(fmt.Sprintf("recipients=%d", n), func(b *testing.B) {
			req := inbox.PublishRequest{PublishRequest: hub.PublishRequest{Room: 1, EventType: "comment.created", Data: []byte(`{"text":"hello"}`)}}
			for i := 0; i < n; i++ {
				req.RecipientIDs = append(req.RecipientIDs, int64(i+1))
			}
			before, cpu := testredis.Stat(b, rdb, "stats", "total_commands_processed"), testredis.CPU(b, rdb)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := p.notify(context.Background(), req); err != nil {
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
