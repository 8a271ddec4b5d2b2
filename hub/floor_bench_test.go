package hub

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/redis/rueidis"

	"roomhub/internal/testredis"
)

// BenchmarkRedisFloor measures what Redis spends (redis-server's CPU,
// INFO cpu) per call made one after the other, the way a publish at a
// modest rate arrives: a PING (the round trip alone: read, write, the event
// loop's turn), and a publish (the event script) with nobody listening and
// with one subscriber to every room (its pub/sub message written too).
// Run: go test -run '^$' -bench RedisFloor -benchtime 20000x ./hub/
func BenchmarkRedisFloor(b *testing.B) {
	rs := testredis.Start(b)
	rdb := testredis.Client(b, rs.Addr())
	ctx := context.Background()
	h := New(DefaultConfig(), rdb, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(nil))
	perCall := func(b *testing.B, call func(i int)) {
		cpu := testredis.CPU(b, rdb)
		b.ResetTimer()
		for i := range b.N {
			call(i)
		}
		b.StopTimer()
		b.ReportMetric((testredis.CPU(b, rdb)-cpu)*1e6/float64(b.N), "redis-cpu-µs/op")
	}
	publish := func(i int) {
		if _, err := h.Publish(ctx, PublishRequest{Room: int64(i%1000 + 1), EventType: "comment.created", Data: []byte(`{"text":"hello"}`)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("ping", func(b *testing.B) {
		perCall(b, func(int) {
			if err := rdb.Do(ctx, rdb.B().Ping().Build()).Error(); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("publish", func(b *testing.B) { perCall(b, publish) })
	b.Run("publish+listener", func(b *testing.B) {
		sub, cancel := rdb.Dedicate()
		defer cancel()
		wait := sub.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: func(rueidis.PubSubMessage) {}})
		if err := sub.Do(ctx, sub.B().Psubscribe().Pattern("room:*").Build()).Error(); err != nil {
			b.Fatal(err)
		}
		perCall(b, publish)
		sub.Close()
		<-wait
	})
}
