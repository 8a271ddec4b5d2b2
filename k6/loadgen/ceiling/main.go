// Command ceiling measures how many events per second one hub publishes at
// most, by each way in: POST /notifications/publish (-mode http, many
// requests at once), its batch route (-mode batch) and the ingest streams
// (-mode ingest: a backlog added before -hub-cmd starts the hub, timed from
// its start until every stream is empty). Events go round robin to -rooms
// rooms, with nobody listening. It prints one JSON line. See
// k6/loadgen/ceiling.sh and docs/performance.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

func main() {
	mode := flag.String("mode", "http", "http, batch or ingest")
	hub := flag.String("hub", "http://127.0.0.1:8083", "hub base URL (http, batch)")
	redis := flag.String("redis", "127.0.0.1:6379", "the hub's Redis (ingest)")
	hubCmd := flag.String("hub-cmd", "", "ingest: a shell command that starts the hub once the backlog is in")
	rooms := flag.Int("rooms", 1000, "rooms, round robin")
	events := flag.Int("events", 200000, "ingest: the backlog")
	parts := flag.Int("partitions", 16, "ingest: INGEST_PARTITIONS")
	conc := flag.Int("concurrency", 64, "http, batch: requests at once")
	batch := flag.Int("batch", 100, "batch: events per request")
	dur := flag.Duration("duration", 10*time.Second, "http, batch: how long")
	key := flag.String("internal-key", "local_dev_internal_key", "INTERNAL_API_KEY")
	flag.Parse()
	body := func(n int) string {
		return fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d}}`, n%*rooms+1, n)
	}
	var perSec float64
	var err error
	switch *mode {
	case "http", "batch":
		per := 1
		if *mode == "batch" {
			per = *batch
		}
		perSec, err = post(*hub, *key, *conc, per, *dur, body)
	case "ingest":
		perSec, err = ingest(*redis, *hubCmd, *events, *parts, *rooms, body)
	default:
		err = fmt.Errorf("unknown -mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"mode": *mode, "eventsPerSec": int(perSec)})
}

// post sends requests of per events from conc workers for d and returns
// the accepted events per second.
func post(hub, key string, conc, per int, d time.Duration, body func(int) string) (float64, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	var next, ok, failed atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				n := int(next.Add(int64(per))) - per
				path, b := "/api/v1/notifications/publish", body(n)
				if per > 1 {
					bodies := make([]string, per)
					for i := range bodies {
						bodies[i] = body(n + i)
					}
					path, b = "/api/v1/notifications/publish/batch", `{"events":[`+strings.Join(bodies, ",")+`]}`
				}
				req, _ := http.NewRequest(http.MethodPost, hub+path, strings.NewReader(b))
				req.Header.Set("X-Internal-Key", key)
				resp, err := client.Do(req)
				if err != nil || resp.StatusCode != 200 {
					failed.Add(int64(per))
					if resp != nil {
						resp.Body.Close()
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ok.Add(int64(per)) // a batch's events answer in place; none fail here
			}
		}()
	}
	start := time.Now()
	wg.Wait()
	if failed.Load() > 0 {
		return 0, fmt.Errorf("%d events refused", failed.Load())
	}
	return float64(ok.Load()) / time.Since(start).Seconds(), nil
}

// ingest adds the backlog, starts the hub and times it until every
// partition is empty (the hub trims what it finished).
func ingest(addr, hubCmd string, events, parts, rooms int, body func(int) string) (float64, error) {
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return 0, err
	}
	defer rdb.Close()
	ctx := context.Background()
	for start := 0; start < events; start += 1000 {
		cmds := make(rueidis.Commands, 0, 1000)
		for n := start; n < min(start+1000, events); n++ {
			room := n%rooms + 1
			cmds = append(cmds, rdb.B().Xadd().Key(fmt.Sprintf("ingest:{%d}", room%parts)).Id("*").FieldValue().FieldValue("event", body(n)).Build())
		}
		for _, r := range rdb.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				return 0, err
			}
		}
	}
	cmd := exec.Command("sh", "-c", hubCmd)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for {
		left := int64(0)
		for p := range parts {
			n, err := rdb.Do(ctx, rdb.B().Xlen().Key(fmt.Sprintf("ingest:{%d}", p)).Build()).AsInt64()
			if err != nil {
				return 0, err
			}
			left += n
		}
		if left == 0 {
			return float64(events) / time.Since(began).Seconds(), nil
		}
		if time.Since(began) > 5*time.Minute {
			return 0, fmt.Errorf("%d entries left after 5 minutes", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
