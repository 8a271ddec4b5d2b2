package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/sync/errgroup"
)

// topicReport is what -topic-followers measures (docs/performance.md,
// Topics): a topic of that many followers added through the API, then one
// publish to it, fanned out by the hub, while -streams of the followers
// hold their own stream and another user reads their unread count.
type topicReport struct {
	Followers        int64   `json:"followers"`
	Warm             bool    `json:"warm"` // the followers had an inbox already (one publish before)
	FollowSeconds    float64 `json:"followSeconds"`
	FollowsPerSec    float64 `json:"followsPerSec"`
	BytesPerFollower float64 `json:"redisBytesPerFollower"` // the follower sets, both directions
	PublishMs        float64 `json:"publishMs"`             // the publish's round trip: its answer
	Recipients       int64   `json:"recipients"`
	FanoutSeconds    float64 `json:"fanoutSeconds"` // from the publish to done (read every 50 ms)
	Reached          int64   `json:"reached"`
	Streams          int     `json:"streams"`
	LiveEvents       int64   `json:"liveEvents"`           // notification.created received by the streams
	LastLiveSeconds  float64 `json:"lastLiveSeconds"`      // from the publish to the last of them
	UnreadP50Ms      float64 `json:"unreadP50Ms"`          // another user's GET /notifications/unread during the fan-out
	UnreadP99Ms      float64 `json:"unreadP99Ms"`          //
	UnreadCalls      int     `json:"unreadCalls"`          //
	HubRSSBeforeKB   int64   `json:"hubRSSBeforeKB"`       // before the publish
	HubRSSMaxKB      int64   `json:"hubRSSMaxKB"`          // the most during the fan-out
	BytesPerReached  float64 `json:"redisBytesPerReached"` // Redis growth per follower reached (their inbox)
	RedisCPUSeconds  float64 `json:"redisCPUSeconds"`      // during the fan-out
	HubCPUSeconds    float64 `json:"hubCPUSeconds"`        //
}

// runTopic measures a topic publish (see topicReport) and prints the report.
func runTopic(ctx context.Context, c config) error {
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.topicRedis}, DisableCache: true})
	if err != nil {
		return err
	}
	defer rdb.Close()
	base, n := c.hubs[0], int64(c.topicFollowers)
	rep := topicReport{Followers: n, Streams: c.streams, Warm: c.topicWarm}
	mem0 := usedMemory(ctx, rdb)
	start := time.Now()
	if err := followAll(ctx, c, base, n); err != nil {
		return err
	}
	rep.FollowSeconds = time.Since(start).Seconds()
	rep.FollowsPerSec = float64(n) / rep.FollowSeconds
	mem1 := usedMemory(ctx, rdb)
	rep.BytesPerFollower = float64(mem1-mem0) / float64(n)

	var live atomic.Int64
	var lastLive atomic.Int64 // ns after the publish
	var published atomic.Int64
	sctx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	var streams sync.WaitGroup
	var opened sync.WaitGroup
	for i := range c.streams {
		user := 1 + int64(i)*(n/int64(max(c.streams, 1)))
		opened.Add(1)
		streams.Add(1)
		go func() {
			defer streams.Done()
			watchUser(sctx, c, base, user, &opened, func() {
				live.Add(1)
				lastLive.Store(time.Now().UnixNano() - published.Load())
			})
		}()
	}
	opened.Wait()

	if c.topicWarm { // the followers have an inbox already: one publish before
		id, _, err := publishTopic(ctx, c, base)
		if err != nil {
			return err
		}
		for f, err := fanoutState(ctx, c, base, id); f.State == "running"; f, err = fanoutState(ctx, c, base, id) {
			if err != nil {
				return err
			}
			sleep(ctx, 100*time.Millisecond)
		}
		// the first publish's live events, counted apart
		for live.Load() < int64(c.streams) && ctx.Err() == nil {
			sleep(ctx, 20*time.Millisecond)
		}
		live.Store(0)
		mem1 = usedMemory(ctx, rdb)
	}
	rctx, stopReader := context.WithCancel(ctx)
	defer stopReader()
	samples := newSampler(100000)
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		readUnread(rctx, c, base, n+1, samples)
	}()
	rss := newRSSWatch(c.hubPIDs)
	rep.HubRSSBeforeKB = rss.now()
	cpuHub0, cpuRedis0 := cpuOfAll(c.hubPIDs), cpuOfAll(c.redisPIDs)
	t0 := time.Now()
	published.Store(t0.UnixNano())
	id, recipients, err := publishTopic(ctx, c, base)
	if err != nil {
		return err
	}
	rep.PublishMs = float64(time.Since(t0).Microseconds()) / 1000
	rep.Recipients = recipients
	for {
		f, err := fanoutState(ctx, c, base, id)
		if err != nil {
			return err
		}
		rss.sample()
		if f.State != "running" {
			rep.FanoutSeconds, rep.Reached = time.Since(t0).Seconds(), f.Reached
			break
		}
		sleep(ctx, 50*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	rep.HubCPUSeconds, rep.RedisCPUSeconds = cpuOfAll(c.hubPIDs)-cpuHub0, cpuOfAll(c.redisPIDs)-cpuRedis0
	stopReader()
	reader.Wait()
	lat := samples.values()
	rep.UnreadP50Ms, rep.UnreadP99Ms, rep.UnreadCalls = pct(lat, 50), pct(lat, 99), len(lat)
	rep.HubRSSMaxKB = rss.max
	// the live events of the last steps: a moment to arrive
	deadline := time.Now().Add(c.drain)
	for live.Load() < int64(c.streams) && time.Now().Before(deadline) {
		sleep(ctx, 20*time.Millisecond)
	}
	stopStreams()
	streams.Wait()
	rep.LiveEvents, rep.LastLiveSeconds = live.Load(), float64(lastLive.Load())/1e9
	rep.BytesPerReached = float64(usedMemory(ctx, rdb)-mem1) / float64(max(rep.Reached, 1))
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Println(string(out))
	return nil
}

// followAll makes users 1..n follow the topic through the API, 10,000 a
// call, four calls at a time.
func followAll(ctx context.Context, c config, base string, n int64) error {
	var g errgroup.Group
	g.SetLimit(4)
	client := &http.Client{Timeout: time.Minute}
	for lo := int64(1); lo <= n; lo += 10000 {
		g.Go(func() error {
			var b strings.Builder
			b.WriteString(`{"userIds":[`)
			for u := lo; u < lo+10000 && u <= n; u++ {
				if u > lo {
					b.WriteByte(',')
				}
				b.WriteString(strconv.FormatInt(u, 10))
			}
			b.WriteString(`]}`)
			_, err := internal(ctx, client, c, http.MethodPut, base+"/api/v1/internal/topics/"+c.topic+"/followers", b.String())
			return err
		})
	}
	return g.Wait()
}

// publishTopic publishes one event to the topic: its fan-out's id and
// recipients.
func publishTopic(ctx context.Context, c config, base string) (string, int64, error) {
	body := `{"roomId":1,"eventType":"comment.created","data":{"text":"back in stock"},"topic":"` + c.topic + `"}`
	raw, err := internal(ctx, http.DefaultClient, c, http.MethodPost, base+"/api/v1/notifications/publish", body)
	if err != nil {
		return "", 0, err
	}
	var r struct {
		Fanout struct {
			ID         string
			Recipients int64
		}
	}
	err = json.Unmarshal(raw, &r)
	return r.Fanout.ID, r.Fanout.Recipients, err
}

// fanoutState reads a fan-out's progress.
func fanoutState(ctx context.Context, c config, base, id string) (struct {
	State   string
	Reached int64
}, error) {
	var f struct {
		State   string
		Reached int64
	}
	raw, err := internal(ctx, http.DefaultClient, c, http.MethodGet, base+"/api/v1/internal/fanouts/"+id, "")
	if err == nil {
		err = json.Unmarshal(raw, &f)
	}
	return f, err
}

// internal sends a request with the internal key: its result, or an error
// unless it answered 200.
func internal(ctx context.Context, client *http.Client, c config, method, url, body string) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Internal-Key", c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var env struct{ Result json.RawMessage }
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s %s: %d %v", method, url, resp.StatusCode, err)
	}
	return env.Result, nil
}

// watchUser holds user's own stream, calls opened once it is open, and
// event for each notification.created.
func watchUser(ctx context.Context, c config, base string, user int64, opened *sync.WaitGroup, event func()) {
	once := sync.OnceFunc(opened.Done)
	defer once()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/notifications/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token(c.secret, user))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	once()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if sc.Text() == "event: notification.created" {
			event()
		}
	}
}

// readUnread reads user's unread count over and over until ctx ends, each
// call's time in samples (ms).
func readUnread(ctx context.Context, c config, base string, user int64, samples *sampler) {
	auth := "Bearer " + token(c.secret, user)
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/notifications/unread", nil)
		req.Header.Set("Authorization", auth)
		t := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		_, _ = bufio.NewReader(resp.Body).WriteTo(devNull{})
		resp.Body.Close()
		if ctx.Err() == nil {
			samples.add(float64(time.Since(t).Microseconds()) / 1000)
		}
		sleep(ctx, 5*time.Millisecond)
	}
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

// usedMemory is Redis' used_memory (INFO memory), in bytes.
func usedMemory(ctx context.Context, rdb rueidis.Client) int64 {
	info, _ := rdb.Do(ctx, rdb.B().Info().Section("memory").Build()).ToString()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	fmt.Fprintln(os.Stderr, "loadgen: INFO memory has no used_memory")
	return 0
}

// rssWatch follows the hubs' RSS: the most it saw.
type rssWatch struct {
	pids []int
	max  int64
}

func newRSSWatch(pids []int) *rssWatch { return &rssWatch{pids: pids} }

func (w *rssWatch) now() int64 { return rssOfAll(w.pids) }

func (w *rssWatch) sample() { w.max = max(w.max, w.now()) }
