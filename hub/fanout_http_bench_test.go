package hub_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"roomhub/internal/testhub"
	"roomhub/internal/testredis"

	"github.com/redis/rueidis"
)

// BenchmarkFanOut_HoldsRedis measures what a big fan-out costs everyone
// else on its Redis: the longest script Redis ran (SLOWLOG, every command
// over 1 ms) during a publish to 10,000 recipients, and during a batch of
// 500 events to 100 recipients each, beside the latency of another user's
// GET /notifications/unread polled all the while (p50, p99, max), and the
// same poll with nothing else running. Run it with -benchtime=1x:
//
//	go test -run '^$' -bench FanOut_HoldsRedis -benchtime 1x ./hub/
func BenchmarkFanOut_HoldsRedis(b *testing.B) {
	rs := testredis.Start(b)
	th := testhub.Start(b, rs.Addr(), nil)
	rdb := testredis.Client(b, rs.Addr())
	testredis.Do(b, rdb, "CONFIG", "SET", "slowlog-log-slower-than", "1000")
	testredis.Do(b, rdb, "CONFIG", "SET", "slowlog-max-len", "100000")
	ids := func(n, from int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(from + i)
		}
		return strings.Join(s, ",")
	}
	big := `{"roomId":7,"eventType":"comment.created","data":{"text":"all hands"},"recipientIds":[` + ids(10000, 1) + `]}`
	var events []string
	for i := range 500 {
		events = append(events, fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d},"recipientIds":[%s]}`, 100+i%50, i, ids(100, 1+i%100*100)))
	}
	batch := `{"events":[` + strings.Join(events, ",") + `]}`
	key := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}
	for _, shape := range []struct {
		name string
		run  func()
	}{
		{"idle", func() { time.Sleep(2 * time.Second) }},
		{"publish_10000", func() {
			if code, env := th.Do(b, http.MethodPost, "/api/v1/notifications/publish", key, big); code != 200 {
				b.Fatalf("publish: %d %+v", code, env)
			}
		}},
		{"batch_500x100", func() {
			if code, env := th.Do(b, http.MethodPost, "/api/v1/notifications/publish/batch", key, batch); code != 200 {
				b.Fatalf("batch: %d %+v", code, env)
			}
		}},
	} {
		b.Run(shape.name, func(b *testing.B) {
			for range b.N {
				holdsRedis(b, th, rdb, shape.run)
			}
		})
	}
}

// holdsRedis runs run while another user polls GET /notifications/unread,
// and reports how long run took, the longest script Redis ran meanwhile,
// how many ran over 10 ms, and the poll's p50, p99 and max.
func holdsRedis(b *testing.B, th *testhub.Hub, rdb rueidis.Client, run func()) {
	testredis.Do(b, rdb, "SLOWLOG", "RESET")
	tok := th.Token(b, 999999)
	stop := make(chan struct{})
	var lat []time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // another user, all the while
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if code, _, err := th.TryDo(http.MethodGet, "/api/v1/notifications/unread", map[string]string{"Authorization": "Bearer " + tok}, ""); err == nil && code == 200 {
				lat = append(lat, time.Since(start))
			}
		}
	}()
	start := time.Now()
	run()
	took := time.Since(start)
	close(stop)
	wg.Wait()
	entries, _ := testredis.Do(b, rdb, "SLOWLOG", "GET", "100000").ToArray()
	var worst, over10 int64
	for _, e := range entries {
		f, _ := e.ToArray()
		if len(f) < 3 {
			continue
		}
		us, _ := f[2].AsInt64()
		worst = max(worst, us)
		if us > 10000 {
			over10++
		}
	}
	slices.Sort(lat)
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(took.Milliseconds()), "answer-ms")
	b.ReportMetric(float64(worst)/1000, "worst-script-ms")
	b.ReportMetric(float64(over10), "scripts>10ms")
	b.ReportMetric(q(0.5), "unread-p50-ms")
	b.ReportMetric(q(0.99), "unread-p99-ms")
	b.ReportMetric(q(1), "unread-max-ms")
}

// BenchmarkFanOut_HTTP1000 is the answer time of POST
// /notifications/publish to 1,000 recipients over HTTP, with redis-server's
// CPU per recipient (INFO cpu): warm (a fresh room each publish, the same
// 1,000 people, whose inboxes grow) and fresh (1,000 people new to the hub
// each publish). Run:
//
//	go test -run '^$' -bench FanOut_HTTP1000 -benchtime 30x ./hub/
func BenchmarkFanOut_HTTP1000(b *testing.B) {
	rs := testredis.Start(b)
	th := testhub.Start(b, rs.Addr(), nil)
	rdb := testredis.Client(b, rs.Addr())
	round := 0
	for _, shape := range []struct {
		name  string
		fresh bool
	}{{"warm", false}, {"fresh", true}} {
		b.Run(shape.name, func(b *testing.B) {
			publish := func() time.Duration {
				round++
				from := 1
				if shape.fresh {
					from = 1000 * round
				}
				ids := make([]string, 1000)
				for i := range ids {
					ids[i] = fmt.Sprint(from + i)
				}
				body := fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"text":"all hands"},"recipientIds":[%s]}`, 1000+round, strings.Join(ids, ","))
				start := time.Now()
				if code, env := th.Do(b, http.MethodPost, "/api/v1/notifications/publish", map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}, body); code != 200 {
					b.Fatalf("publish: %d %+v", code, env)
				}
				return time.Since(start)
			}
			publish() // warm: scripts loaded, connections open
			cpu := testredis.CPU(b, rdb)
			took := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range b.N {
				took[i] = publish()
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric((testredis.CPU(b, rdb)-cpu)*1e6/float64(b.N*1000), "redis-cpu-µs/recipient")
		})
	}
}
