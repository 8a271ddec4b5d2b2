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
//	go test -run '^$' -bench SSEEndToEnd -benchtime 1x ./hub/
func BenchmarkSSEEndToEnd(b *testing.B) {
	for _, sh := range []sseShape{
		{1000, 1, 100, 20 * time.Millisecond},
		{1000, 1, 300, 0},
		{5000, 100, 3000, 0},
	} {
		b.Run(fmt.Sprintf("streams=%d/rooms=%d/every=%v", sh.streams, sh.rooms, sh.every), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				sh.run(b)
			}
		})
	}
}

// sseShape is one load: streams over rooms, events published in all.
type sseShape struct {
	streams, rooms, events int
	every                  time.Duration // between publishes; 0 = as fast as one publisher can
}

// sseWatch is what room 1's streams saw: each event's publish → client
// latency, by the time each was sent.
type sseWatch struct {
	mu   sync.Mutex
	lat  []time.Duration
	sent map[string]time.Time
	got  sync.WaitGroup // an event received by a stream of room 1
}

// run measures one hub under the shape, on a Redis of its own.
func (sh sseShape) run(b *testing.B) {
	th := testhub.Start(b, testredis.Start(b).Addr(), func(c *testhub.Configs) {
		c.MaxConnectionsPerUser = 0
		c.PresenceBroadcast = 10 * time.Second // keep presence out of the measurement
	})
	w := &sseWatch{sent: map[string]time.Time{}}
	w.got.Add(sh.streams / sh.rooms * (sh.events / sh.rooms)) // what room 1's streams receive
	ctx, cancel := context.WithCancel(context.Background())
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()
	readers := sh.open(ctx, b, th, w)
	testhub.Eventually(b, 60*time.Second, "streams open", func() bool {
		return th.Hub.Health(context.Background()).ActiveConnections == int64(sh.streams)
	})
	runtime.GC()
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.HeapInuse+m1.StackInuse-m0.HeapInuse-m0.StackInuse)/float64(sh.streams)/1024, "KiB/stream")
	b.ReportMetric(float64(runtime.NumGoroutine()-g0)/float64(sh.streams), "goroutines/stream")
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	sh.publish(b, th, w)
	waitDone(b, &w.got, 120*time.Second)
	wall := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cancel()
	readers.Wait()

	lat := w.lat
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	deliveries := float64(sh.streams / sh.rooms * sh.events) // every event reaches its room's streams
	cpu := rusageSecs(ru1) - rusageSecs(ru0)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(deliveries/wall.Seconds(), "deliveries/s")
	b.ReportMetric(cpu*1e6/deliveries, "cpu-µs/delivery")
}

// open opens the shape's streams, each read by a goroutine of its own
// (room 1's into w) until ctx ends; readers ends with them.
func (sh sseShape) open(ctx context.Context, b *testing.B, th *testhub.Hub, w *sseWatch) (readers *sync.WaitGroup) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sh.streams, MaxConnsPerHost: 0}}
	readers = &sync.WaitGroup{}
	for s := 0; s < sh.streams; s++ {
		room := int64(s%sh.rooms + 1)
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
					w.mu.Lock()
					if t0, ok := w.sent[f.ID]; ok {
						w.lat = append(w.lat, time.Since(t0))
					}
					w.mu.Unlock()
					w.got.Done()
				}
				return true
			})
		}()
	}
	return readers
}

// publish publishes the shape's events over its rooms, room 1's timed.
func (sh sseShape) publish(b *testing.B, th *testhub.Hub, w *sseWatch) {
	for e := 0; e < sh.events; e++ {
		if sh.every > 0 {
			time.Sleep(sh.every) // pacing the load, not synchronisation
		}
		room := int64(e%sh.rooms + 1)
		if room != 1 {
			th.Publish(b, room, "comment.created", map[string]any{"e": e})
			continue
		}
		w.mu.Lock()
		t0 := time.Now()
		res := th.Publish(b, room, "comment.created", map[string]any{"e": e})
		w.sent[res.StreamID] = t0
		w.mu.Unlock()
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
