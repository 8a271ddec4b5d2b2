package delivery_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// BenchmarkDelivery_Backlog schedules 100,000 deliveries that fall due in
// the same few seconds (10 publishes to 10,000 recipients each, push after
// 20 s) and measures how fast one or two hub instances hand them off to a
// gateway that answers at once. Run it with -benchtime=1x:
//
//	go test -run '^$' -bench Delivery_Backlog -benchtime 1x ./api/
func BenchmarkDelivery_Backlog(b *testing.B) {
	for _, instances := range []int{1, 2} {
		b.Run(fmt.Sprintf("instances=%d", instances), func(b *testing.B) {
			for range b.N {
				deliveryBacklog(b, instances)
			}
		})
	}
}

func deliveryBacklog(b *testing.B, instances int) {
	const publishes, recipients, after = 10, 10000, 20
	rs := testredis.Start(b)
	var handed atomic.Int64
	var first, last atomic.Int64
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		now := time.Now().UnixNano()
		first.CompareAndSwap(0, now)
		last.Store(now)
		handed.Add(1)
	}))
	defer gw.Close()
	cfg := func(c *testhub.Configs) {
		c.Delivery.Channels, c.Delivery.SinkURL = []string{"push"}, gw.URL
		c.Delivery.Rules = fmt.Sprintf(`{"comment.created":{"push":{"afterSecs":%d}}}`, after)
	}
	var hubs []*testhub.Hub
	for range instances {
		hubs = append(hubs, testhub.Start(b, rs.Addr(), cfg))
	}
	ids := make([]string, recipients)
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	body := `{"roomId":7,"eventType":"comment.created","data":{"k":1},"recipientIds":[` + strings.Join(ids, ",") + `]}`
	start := time.Now()
	for range publishes {
		if code, env := hubs[0].PublishRaw(b, body); code != 200 {
			b.Fatalf("publish: %d %+v", code, env)
		}
	}
	scheduled := time.Since(start)
	if scheduled > after*time.Second {
		b.Fatalf("scheduling took %v, longer than the wait", scheduled)
	}
	var peak uint64
	deadline := time.Now().Add(5 * time.Minute)
	for handed.Load() < publishes*recipients {
		if time.Now().After(deadline) {
			b.Fatalf("handed off %d of %d", handed.Load(), publishes*recipients)
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapInuse)
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Duration(last.Load() - first.Load())
	b.ReportMetric(float64(publishes*recipients)/took.Seconds(), "handoffs/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(scheduled.Seconds(), "schedule-s")
}
