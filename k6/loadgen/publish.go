package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// publish sends c.rate events a second for c.duration, round robin over the
// rooms, each data {"t":<unix ns>,"seq":<per room>,"pad":"…"}: one request
// each, or with c.batch > 1 batches of that many events. lat is each
// request's round trip; sent and failed count events.
func publish(ctx context.Context, c config) (sent, failed int64, perRoom map[int]int64, lat []float64) {
	perRoom = map[int]int64{}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	send := func(base string, events []event) []bool { return postEvents(client, c.key, base, events) }
	if c.peer == peerCentrifugo {
		send = func(base string, events []event) []bool { return centrifugoPublish(client, c.key, base, events) }
	}
	if c.ingest != "" {
		rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.ingest}, DisableCache: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen: -ingest:", err)
			return 0, 0, perRoom, nil
		}
		defer rdb.Close()
		send = func(_ string, events []event) []bool { return addEvents(rdb, c.ingestParts, events) }
	}
	pad := strings.Repeat("x", c.payload)
	per := max(c.batch, 1)
	interval := time.Duration(float64(time.Second) * float64(per) / c.rate)
	end := time.Now().Add(c.duration)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	seqs := map[int]uint32{}
	next := time.Now()
	for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		next = next.Add(interval)
		events := make([]event, per)
		for i := range events {
			room := (n*per+i)%c.rooms + 1
			seqs[room]++
			events[i] = event{room, fmt.Sprintf(`{"t":%d,"seq":%d,"pad":%q}`, time.Now().UnixNano(), seqs[room], pad)}
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(events []event, base string) {
			defer func() { <-sem; wg.Done() }()
			t := time.Now()
			ok := send(base, events)
			mu.Lock()
			defer mu.Unlock()
			for i, ev := range events {
				if ok[i] {
					sent++
					perRoom[ev.room]++
				} else {
					failed++
				}
			}
			lat = append(lat, float64(time.Since(t))/1e6)
		}(events, c.hubs[n%len(c.hubs)])
	}
	wg.Wait()
	return sent, failed, perRoom, lat
}

// event is one publish: its room and its data (JSON); each door sends it in
// its own form.
type event struct {
	room int
	data string
}

// hubBody is ev as the hub's publish body.
func (ev event) hubBody() string {
	return fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":%s}`, ev.room, ev.data)
}

// postEvents publishes events (one request, or one batch request for
// several) and reports which were accepted.
func postEvents(client *http.Client, key, base string, events []event) []bool {
	bodies := make([]string, len(events))
	for i, ev := range events {
		bodies[i] = ev.hubBody()
	}
	ok := make([]bool, len(bodies))
	path, body := "/api/v1/notifications/publish", bodies[0]
	if len(bodies) > 1 {
		path, body = "/api/v1/notifications/publish/batch", `{"events":[`+strings.Join(bodies, ",")+`]}`
	}
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("X-Internal-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return ok
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return ok
	}
	if len(bodies) == 1 {
		_, _ = io.Copy(io.Discard, resp.Body)
		ok[0] = true
		return ok
	}
	var env struct {
		Result struct {
			Results []struct {
				IsSuccess bool `json:"isSuccess"`
			} `json:"results"`
		} `json:"result"`
	}
	if json.NewDecoder(resp.Body).Decode(&env) == nil {
		for i, r := range env.Result.Results {
			if i < len(ok) {
				ok[i] = r.IsSuccess
			}
		}
	}
	return ok
}

// addEvents adds events to the ingest streams of their rooms in one
// pipeline and reports which Redis took.
func addEvents(rdb rueidis.Client, parts int, events []event) []bool {
	cmds := make(rueidis.Commands, len(events))
	for i, ev := range events {
		cmds[i] = rdb.B().Xadd().Key(fmt.Sprintf("ingest:{%d}", ev.room%parts)).Maxlen().Almost().Threshold("1000000").
			Id("*").FieldValue().FieldValue("event", ev.hubBody()).Build()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok := make([]bool, len(events))
	for i, r := range rdb.DoMulti(ctx, cmds...) {
		ok[i] = r.Error() == nil
	}
	return ok
}

// ---- small helpers ----
