package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"roomhub/internal/sse"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// BenchmarkSSEEndToEnd holds many real HTTP SSE streams on one hub (real
// redis-server) and publishes events into their rooms, measuring publish →
// client latency and the CPU the whole process (hub and clients) spent per
// delivered event. Run:
//
//	go test -run '^$' -bench SSEEndToEnd -benchtime 1x ./api/
func BenchmarkSSEEndToEnd(b *testing.B) {
	for _, tc := range []struct {
		streams, rooms, events int
		every                  time.Duration // between publishes; 0 = as fast as one publisher can
	}{
		{1000, 1, 100, 20 * time.Millisecond},
		{1000, 1, 300, 0},
		{5000, 100, 3000, 0},
	} {
		b.Run(fmt.Sprintf("streams=%d/rooms=%d/every=%v", tc.streams, tc.rooms, tc.every), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				th := testhub.Start(b, testredis.Start(b).Addr(), func(c *testhub.Configs) {
					c.MaxConnectionsPerUser = 0
					c.PresenceBroadcast = 10 * time.Second // keep presence out of the measurement
				})
				tr := &http.Transport{MaxIdleConnsPerHost: tc.streams, MaxConnsPerHost: 0}
				client := &http.Client{Transport: tr}
				var mu sync.Mutex
				var lat []time.Duration
				sent := map[string]time.Time{}
				var got sync.WaitGroup
				got.Add(tc.streams / tc.rooms * (tc.events / tc.rooms)) // what room 1's streams receive
				ctx, cancel := context.WithCancel(context.Background())
				var readers sync.WaitGroup
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				g0 := runtime.NumGoroutine()
				for s := 0; s < tc.streams; s++ {
					room := int64(s%tc.rooms + 1)
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/v1/rooms/%d/stream", th.URL, room), nil)
					req.Header.Set("Authorization", "Bearer "+th.Token(b, int64(s+1)))
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					watch := room == 1
					readers.Add(1)
					go func() {
						defer readers.Done()
						defer resp.Body.Close()
						_ = sse.Parse(resp.Body, func(f testhub.Frame) bool {
							if f.Event != "comment.created" {
								return true
							}
							if watch {
								mu.Lock()
								if t0, ok := sent[f.ID]; ok {
									lat = append(lat, time.Since(t0))
								}
								mu.Unlock()
								got.Done()
							}
							return true
						})
					}()
				}
				testhub.Eventually(b, 60*time.Second, "streams open", func() bool {
					return th.Hub.Health(context.Background()).ActiveConnections == int64(tc.streams)
				})
				runtime.GC()
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(m1.HeapInuse+m1.StackInuse-m0.HeapInuse-m0.StackInuse)/float64(tc.streams)/1024, "KiB/stream")
				b.ReportMetric(float64(runtime.NumGoroutine()-g0)/float64(tc.streams), "goroutines/stream")
				var ru0, ru1 syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				start := time.Now()
				for e := 0; e < tc.events; e++ {
					if tc.every > 0 {
						time.Sleep(tc.every) // pacing the load, not synchronisation
					}
					room := int64(e%tc.rooms + 1)
					if room != 1 {
						th.Publish(b, room, "comment.created", map[string]any{"e": e})
						continue
					}
					mu.Lock()
					t0 := time.Now()
					res := th.Publish(b, room, "comment.created", map[string]any{"e": e})
					sent[res.StreamID] = t0
					mu.Unlock()
				}
				waitDone(b, &got, 120*time.Second)
				wall := time.Since(start)
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				cancel()
				readers.Wait()

				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				deliveries := float64(tc.streams / tc.rooms * tc.events) // every event reaches its room's streams
				cpu := rusageSecs(ru1) - rusageSecs(ru0)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				b.ReportMetric(deliveries/wall.Seconds(), "deliveries/s")
				b.ReportMetric(cpu*1e6/deliveries, "cpu-µs/delivery")
			}
		})
	}
}

func waitDone(b *testing.B, wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		b.Fatalf("not every event arrived within %v", d)
	}
}

func rusageSecs(ru syscall.Rusage) float64 {
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
