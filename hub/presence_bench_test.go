package hub

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/internal/testredis"
)

// BenchmarkPresenceStorm opens 5,000 streams over 100 rooms at once, as after
// a deploy, on a real redis-server, with one presence.update per transition
// (PRESENCE_BROADCAST_MS=0) and coalesced (1000). It reports presence updates
// published, deliveries to streams, bytes delivered and CPU of the hub process
// and of redis-server. Run: go test -run '^$' -bench PresenceStorm -benchtime 1x ./hub/
func BenchmarkPresenceStorm(b *testing.B) {
	const streams, rooms = 5000, 100
	for _, interval := range []time.Duration{0, time.Second} {
		b.Run(fmt.Sprintf("broadcast=%dms", interval.Milliseconds()), func(b *testing.B) {
			rs := testredis.Start(b)
			rdb := testredis.Client(b, rs.Addr())
			for i := 0; i < b.N; i++ {
				cfg := DefaultConfig()
				cfg.PresenceBroadcast = interval
				cfg.MaxConnectionsPerUser = 0
				h := New(cfg, rdb, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(nil))
				h.Start()
				for !h.listening() {
					time.Sleep(10 * time.Millisecond)
				}
				base := int64(i) * rooms // fresh rooms each iteration
				redisCPU0 := testredis.CPU(b, testredis.Client(b, rs.Addr()))
				var ru0 syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				start := time.Now()

				wire := &countWire{}
				var wg sync.WaitGroup
				opened := make(chan *Stream, streams)
				sem := make(chan struct{}, 64)
				for s := 0; s < streams; s++ {
					wg.Add(1)
					sem <- struct{}{}
					go func(s int) {
						defer wg.Done()
						defer func() { <-sem }()
						st, err := h.OpenStream(StreamSpec{User: int64(s + 1), Rooms: []int64{base + int64(s%rooms) + 1}})
						if err != nil {
							b.Error(err)
							return
						}
						st.Join(context.Background())
						st.Start(wire)
						opened <- st
					}(s)
				}
				wg.Wait()
				close(opened)
				var all []*Stream
				for st := range opened {
					all = append(all, st)
				}
				// Wait until every join has been broadcast.
				for !presenceSettled(h, rdb, base, rooms) {
					time.Sleep(20 * time.Millisecond)
				}
				wall := time.Since(start)
				var ru1 syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				redisCPU1 := testredis.CPU(b, testredis.Client(b, rs.Addr()))

				b.ReportMetric(float64(h.metrics.PresenceUpdates.Get()), "updates")
				b.ReportMetric(float64(h.metrics.Delivered.Get()), "deliveries")
				b.ReportMetric(float64(h.metrics.Lagged.Get()), "dropped")
				b.ReportMetric(float64(wire.bytes.Load())/1e6, "MB-delivered")
				b.ReportMetric(cpuSecs(ru1)-cpuSecs(ru0), "hub-cpu-s")
				b.ReportMetric(redisCPU1-redisCPU0, "redis-cpu-s")
				b.ReportMetric(wall.Seconds(), "wall-s")

				for _, st := range all {
					st.Close()
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_ = h.Close(ctx)
				cancel()
			}
		})
	}
}

// presenceSettled reports whether no broadcaster runs and no transition of
// the storm's rooms is still queued.
func presenceSettled(h *Hub, rdb rueidis.Client, base int64, rooms int) bool {
	h.presence.mu.Lock()
	running := len(h.presence.running)
	h.presence.mu.Unlock()
	if running > 0 {
		return false
	}
	for r := base + 1; r <= base+int64(rooms); r++ {
		n, err := rdb.Do(context.Background(), rdb.B().Llen().Key(PresenceChangesKey(r)).Build()).AsInt64()
		if err != nil || n > 0 {
			return false
		}
	}
	return true
}

func cpuSecs(ru syscall.Rusage) float64 {
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
