package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	Followers        int64    `json:"followers"`
	Warm             bool     `json:"warm"` // the followers had an inbox already (one publish before)
	FollowSeconds    float64  `json:"followSeconds"`
	FollowsPerSec    float64  `json:"followsPerSec"`
	BytesPerFollower float64  `json:"redisBytesPerFollower"` // the follower sets, both directions
	PublishMs        float64  `json:"publishMs"`             // the publish's round trip: its answer
	Recipients       int64    `json:"recipients"`
	FanoutSeconds    float64  `json:"fanoutSeconds"` // from the publish to done (read every 50 ms)
	Reached          int64    `json:"reached"`
	Streams          int      `json:"streams"`
	LiveEvents       int64    `json:"liveEvents"`           // notification.created received by the streams
	LastLiveSeconds  float64  `json:"lastLiveSeconds"`      // from the publish to the last of them
	UnreadP50Ms      float64  `json:"unreadP50Ms"`          // another user's GET /notifications/unread during the fan-out
	UnreadP99Ms      float64  `json:"unreadP99Ms"`          //
	UnreadCalls      int      `json:"unreadCalls"`          //
	HubRSSBeforeKB   int64    `json:"hubRSSBeforeKB"`       // before the publish
	HubRSSMaxKB      int64    `json:"hubRSSMaxKB"`          // the most during the fan-out
	BytesPerReached  float64  `json:"redisBytesPerReached"` // Redis growth per follower reached (their inbox)
	RedisCPUSeconds  float64  `json:"redisCPUSeconds"`      // during the fan-out
	HubCPUSeconds    float64  `json:"hubCPUSeconds"`        //
	SlowCalls        int64    `json:"redisCallsOver5ms"`    // SLOWLOG during the fan-out: calls over 5 ms
	SlowestMs        float64  `json:"redisSlowestMs"`       // the slowest of them (0: none)
	Slow             []string `json:"redisSlow"`            // each: its command, its first key, its time
}

// topicRun is what the phases of a topic measurement share.
type topicRun struct {
	c          config
	rdb        rueidis.Client
	base       string
	n          int64
	rep        topicReport
	live       atomic.Int64 // notification.created received
	lastLive   atomic.Int64 // ns after the publish
	published  atomic.Int64 // the publish's time, ns
	mem        int64        // Redis' used_memory before the measured publish
	streams    sync.WaitGroup
	stopStream context.CancelFunc
}

// runTopic measures a topic publish (see topicReport) and prints the report.
func runTopic(ctx context.Context, c config) error {
	rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.topicRedis}, DisableCache: true})
	if err != nil {
		return err
	}
	defer rdb.Close()
	r := &topicRun{c: c, rdb: rdb, base: c.hubs[0], n: int64(c.topicFollowers)}
	r.rep = topicReport{Followers: r.n, Streams: c.streams, Warm: c.topicWarm}
	if err := r.follow(ctx); err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	r.stopStream = stop
	r.openStreams(sctx)
	if c.topicWarm { // the followers have an inbox already: one publish before
		if err := r.publishAndWait(ctx, nil); err != nil {
			return err
		}
		for r.live.Load() < int64(c.streams) && ctx.Err() == nil { // its live events, counted apart
			sleep(ctx, 20*time.Millisecond)
		}
		r.live.Store(0)
		r.mem = usedMemory(ctx, rdb)
	}
	if err := r.measure(ctx); err != nil {
		return err
	}
	out, _ := json.MarshalIndent(r.rep, "", "  ")
	fmt.Println(string(out))
	return nil
}

// follow adds the followers through the API, timed, with the Redis they
// take.
func (r *topicRun) follow(ctx context.Context) error {
	mem0 := usedMemory(ctx, r.rdb)
	start := time.Now()
	if err := followAll(ctx, r.c, r.base, r.n); err != nil {
		return err
	}
	r.rep.FollowSeconds = time.Since(start).Seconds()
	r.rep.FollowsPerSec = float64(r.n) / r.rep.FollowSeconds
	r.mem = usedMemory(ctx, r.rdb)
	r.rep.BytesPerFollower = float64(r.mem-mem0) / float64(r.n)
	return nil
}

// openStreams opens -streams of the followers' own streams, spread over
// the ids, and returns once each is open (or failed).
func (r *topicRun) openStreams(ctx context.Context) {
	var opened sync.WaitGroup
	for i := range r.c.streams {
		user := 1 + int64(i)*(r.n/int64(max(r.c.streams, 1)))
		opened.Add(1)
		r.streams.Add(1)
		go func() {
			defer r.streams.Done()
			watchUser(ctx, r.c, r.base, user, &opened, func() {
				r.live.Add(1)
				r.lastLive.Store(time.Now().UnixNano() - r.published.Load())
			})
		}()
	}
	opened.Wait()
}

// publishAndWait publishes to the topic and waits for its fan-out to end,
// sampling the hub's RSS (rss, when not nil) meanwhile.
func (r *topicRun) publishAndWait(ctx context.Context, rss *rssWatch) error {
	t0 := time.Now()
	r.published.Store(t0.UnixNano())
	id, recipients, err := publishTopic(ctx, r.c, r.base)
	if err != nil {
		return err
	}
	r.rep.PublishMs = float64(time.Since(t0).Microseconds()) / 1000
	r.rep.Recipients = recipients
	for ctx.Err() == nil {
		f, err := fanoutState(ctx, r.c, r.base, id)
		if err != nil {
			return err
		}
		if rss != nil {
			rss.sample()
		}
		if f.State != "running" {
			r.rep.FanoutSeconds, r.rep.Reached = time.Since(t0).Seconds(), f.Reached
			return nil
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return ctx.Err()
}

// measure is the measured publish: its fan-out, the CPU and RSS meanwhile,
// another user's unread latency, the live events, Redis' growth.
func (r *topicRun) measure(ctx context.Context) error {
	rctx, stopReader := context.WithCancel(ctx)
	defer stopReader()
	samples := newSampler(100000)
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		readUnread(rctx, r.c, r.base, r.n+1, samples)
	}()
	r.rdb.Do(ctx, r.rdb.B().ConfigSet().ParameterValue().ParameterValue("slowlog-log-slower-than", "5000").Build())
	r.rdb.Do(ctx, r.rdb.B().SlowlogReset().Build())
	rss := newRSSWatch(r.c.hubPIDs)
	r.rep.HubRSSBeforeKB = rss.now()
	cpuHub0, cpuRedis0 := cpuOfAll(r.c.hubPIDs), cpuOfAll(r.c.redisPIDs)
	if err := r.publishAndWait(ctx, rss); err != nil {
		return err
	}
	r.rep.HubCPUSeconds, r.rep.RedisCPUSeconds = cpuOfAll(r.c.hubPIDs)-cpuHub0, cpuOfAll(r.c.redisPIDs)-cpuRedis0
	r.slowCalls(ctx)
	stopReader()
	reader.Wait()
	lat := samples.values()
	r.rep.UnreadP50Ms, r.rep.UnreadP99Ms, r.rep.UnreadCalls = pct(lat, 50), pct(lat, 99), len(lat)
	r.rep.HubRSSMaxKB = rss.max
	deadline := time.Now().Add(r.c.drain) // the live events of the last steps: a moment to arrive
	for r.live.Load() < int64(r.c.streams) && time.Now().Before(deadline) {
		sleep(ctx, 20*time.Millisecond)
	}
	r.stopStream()
	r.streams.Wait()
	r.rep.LiveEvents, r.rep.LastLiveSeconds = r.live.Load(), float64(r.lastLive.Load())/1e9
	r.rep.BytesPerReached = float64(usedMemory(ctx, r.rdb)-r.mem) / float64(max(r.rep.Reached, 1))
	return nil
}

// slowCalls reads the calls SLOWLOG kept (over 5 ms) into the report.
func (r *topicRun) slowCalls(ctx context.Context) {
	r.rep.SlowCalls, _ = r.rdb.Do(ctx, r.rdb.B().SlowlogLen().Build()).AsInt64()
	entries, _ := r.rdb.Do(ctx, r.rdb.B().SlowlogGet().Count(128).Build()).ToArray()
	for _, e := range entries {
		if f, err := e.ToArray(); err == nil && len(f) > 3 {
			us, _ := f[2].AsInt64()
			r.rep.SlowestMs = max(r.rep.SlowestMs, float64(us)/1000)
			args, _ := f[3].AsStrSlice()
			if len(args) > 3 {
				args = args[:4] // EVALSHA sha numkeys first-key
			}
			r.rep.Slow = append(r.rep.Slow, fmt.Sprintf("%s %.1f ms", strings.Join(args, " "), float64(us)/1000))
		}
	}
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

// fanoutProgress is what the run reads of a fan-out.
type fanoutProgress struct {
	State   string
	Reached int64
}

// fanoutState reads a fan-out's progress.
func fanoutState(ctx context.Context, c config, base, id string) (fanoutProgress, error) {
	var f fanoutProgress
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
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if ctx.Err() == nil {
			samples.add(float64(time.Since(t).Microseconds()) / 1000)
		}
		sleep(ctx, 5*time.Millisecond)
	}
}

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
