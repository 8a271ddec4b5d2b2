// Command loadgen measures a running roomhub: it opens N SSE streams over R
// rooms (in one or more processes), publishes at a fixed rate with a timestamp
// in every payload, and reports connects, publish latency, publish→receive
// latency, lost and duplicated events, deliveries per second, and the CPU and
// RSS of the hub and redis-server read from /proc. JSON on stdout. It talks to
// loopback only and stops by itself.
//
//	go run ./k6/loadgen -streams 5000 -rooms 100 -rate 200 -duration 30s \
//	  -hub-pid $(pgrep -n roomhub) -redis-pid $(pgrep -n redis-server)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"
)

// config is what one run does; children get the same flags plus their slice.
type config struct {
	hub          string
	hubs         []string // hub split on commas: streams and publishes go round robin
	hubPIDs      []int    // hubPIDList split: CPU and RSS are summed
	hubPIDList   string
	streams      int
	rooms        int
	pageRooms    int
	rate         float64
	batch        int
	duration     time.Duration
	drain        time.Duration
	payload      int
	secret       string
	key          string
	procs        int
	redisPIDs    []int // redisPIDList split: CPU and RSS are summed (a cluster's masters)
	redisPIDList string
	firstUser    int // child: first stream index it owns
	childCount   int // child: streams it owns (0: a parent)
	connectTO    time.Duration
	ingest       string // a Redis address: events are added to ingest:{room mod ingestParts} with XADD, not posted
	ingestParts  int
	peer         string // "centrifugo": the server is Centrifugo (peer.go), not the hub
	// topicFollowers > 0 measures a topic publish instead (topic.go).
	topicFollowers int
	topic          string
	topicRedis     string
	topicWarm      bool
}

func main() {
	var c config
	flag.StringVar(&c.hub, "hub", "http://127.0.0.1:8083", "hub base URL (loopback only); several, comma-separated, share the streams and publishes round robin")
	flag.IntVar(&c.streams, "streams", 1000, "SSE streams to hold")
	flag.IntVar(&c.rooms, "rooms", 10, "rooms the streams spread over (round robin)")
	flag.IntVar(&c.pageRooms, "page-rooms", 0, "open page streams of this many rooms each (GET /api/v1/stream?rooms=…); 0: room streams")
	flag.Float64Var(&c.rate, "rate", 100, "publishes per second, over all rooms")
	flag.IntVar(&c.batch, "batch", 1, "events per publish request: above 1, POST /notifications/publish/batch of this many events (consecutive rooms), rate/batch requests a second")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "how long to publish")
	flag.DurationVar(&c.drain, "drain", 5*time.Second, "how long to wait for the last deliveries")
	flag.IntVar(&c.payload, "payload", 256, "bytes of padding in each event's data")
	flag.StringVar(&c.secret, "jwt-secret", "local_dev_secret", "JWT_SECRET of the hub, to mint tokens")
	flag.StringVar(&c.key, "internal-key", "local_dev_internal_key", "INTERNAL_API_KEY of the hub")
	flag.IntVar(&c.procs, "procs", 1, "processes holding the streams (one process holds at most ~19,900)")
	flag.StringVar(&c.hubPIDList, "hub-pid", "", "pid of the hub (comma-separated for several), for CPU and RSS from /proc (none: not measured)")
	flag.StringVar(&c.redisPIDList, "redis-pid", "", "pid of redis-server (comma-separated for several), for CPU and RSS from /proc")
	flag.IntVar(&c.firstUser, "child-first", 0, "internal: first stream of a child process")
	flag.IntVar(&c.childCount, "child-count", 0, "internal: streams of a child process")
	flag.DurationVar(&c.connectTO, "connect-timeout", 60*time.Second, "how long all streams may take to connect")
	flag.StringVar(&c.ingest, "ingest", "", "host:port of the hubs' Redis: add each event with XADD to ingest:{room mod -ingest-partitions} instead of posting it; -batch XADDs per pipeline")
	flag.IntVar(&c.ingestParts, "ingest-partitions", 16, "INGEST_PARTITIONS of the hubs (with -ingest)")
	flag.StringVar(&c.peer, "peer", "", `"centrifugo": the server is Centrifugo, measured side by side (unidirectional SSE, its HTTP API; -jwt-secret is its HMAC key, -internal-key its API key)`)
	flag.IntVar(&c.topicFollowers, "topic-followers", 0, "measure a topic publish instead (topic.go): this many followers added through the API, one publish to them; -streams of them hold their stream")
	flag.StringVar(&c.topic, "topic", "product:123", "the topic of -topic-followers")
	flag.StringVar(&c.topicRedis, "topic-redis", "127.0.0.1:6379", "host:port of the hub's Redis, for its memory (with -topic-followers)")
	flag.BoolVar(&c.topicWarm, "topic-warm", false, "with -topic-followers: publish to the topic once first, so that the followers measured have an inbox")
	flag.Parse()
	if c.pageRooms < 0 || c.pageRooms > c.rooms {
		fmt.Fprintln(os.Stderr, "loadgen: -page-rooms must be between 0 and -rooms")
		os.Exit(2)
	}
	c.hubs = strings.Split(c.hub, ",")
	for _, h := range c.hubs {
		if err := checkLoopback(h); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(2)
		}
	}
	c.hubPIDs, c.redisPIDs = pidList(c.hubPIDList), pidList(c.redisPIDList)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// Bounded in time whatever happens.
	ctx, cancel := context.WithTimeout(ctx, c.connectTO+c.duration+c.drain+time.Minute)
	defer cancel()
	var err error
	switch {
	case c.topicFollowers > 0:
		err = runTopic(ctx, c)
	case c.childCount > 0:
		err = runChild(ctx, c)
	default:
		err = runParent(ctx, c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// checkLoopback refuses any hub that is not on this machine's loopback.
func checkLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	ip := net.ParseIP(u.Hostname())
	if u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("hub %s is not on loopback: loadgen only loads this machine", raw)
}

// ---- the streams ----

// report is the JSON loadgen prints.
type report struct {
	Shape struct {
		Streams   int     `json:"streams"`
		Rooms     int     `json:"rooms"`
		PageRooms int     `json:"pageRooms,omitempty"` // page streams of this many rooms
		Hubs      int     `json:"hubs"`                // hub instances sharing the streams
		Rate      float64 `json:"publishesPerSec"`
		Batch     int     `json:"batch,omitempty"`  // events per batch request (or XADD pipeline)
		Ingest    bool    `json:"ingest,omitempty"` // events added to the ingest streams
		Duration  float64 `json:"durationSecs"`
		Payload   int     `json:"payloadBytes"`
		Procs     int     `json:"procs"`
	} `json:"shape"`
	Connect struct {
		OK      int            `json:"ok"`
		Failed  int            `json:"failed"`
		Reasons map[string]int `json:"reasons,omitempty"`
		Secs    float64        `json:"secs"`
	} `json:"connect"`
	Publish struct {
		Sent   int64   `json:"sent"`
		Failed int64   `json:"failed"`
		P50ms  float64 `json:"p50ms"`
		P99ms  float64 `json:"p99ms"`
	} `json:"publish"`
	Delivery struct {
		Expected    int64   `json:"expected"`
		Delivered   int64   `json:"delivered"`
		Lost        int64   `json:"lost"`
		Duplicated  int64   `json:"duplicated"`
		StreamsEnd  int     `json:"streamsEndedByHub"`
		PerSec      float64 `json:"deliveredPerSec"`
		P50ms       float64 `json:"p50ms"`
		P95ms       float64 `json:"p95ms"`
		P99ms       float64 `json:"p99ms"`
		MaxMs       float64 `json:"maxMs"`
		SampleCount int     `json:"latencySamples"`
	} `json:"delivery"`
	Hub   *procUse `json:"hub,omitempty"`
	Redis *procUse `json:"redis,omitempty"`
}

// procUse is a process's CPU over the publishing window (and the drain after
// it) and its RSS at the end.
type procUse struct {
	CPUSecs             float64 `json:"cpuSecs"`
	CPUSecsPer1kDeliver float64 `json:"cpuSecsPer1000Deliveries"`
	// CPUMicrosPerStreamSec is the CPU per open stream per second of the
	// window: what a stream costs while it waits (the idle shapes).
	CPUMicrosPerStreamSec float64 `json:"cpuMicrosPerStreamSec"`
	RSSKB                 int64   `json:"rssKB"` // at the end of the window, the streams still open
	RSSKBPerStream        float64 `json:"rssKBPerStream"`
	// Above the base: RSS before the first stream against RSS 2 s after the
	// last connected, and at the end of the window, per stream.
	BaseRSSKB                float64 `json:"baseRssKB"`
	KBAboveBaseAtConnect     float64 `json:"kbPerStreamAboveBaseAtConnect"`
	KBAboveBaseAtEndOfWindow float64 `json:"kbPerStreamAboveBaseAtEnd"`
}

func runParent(ctx context.Context, c config) error {
	var rep report
	rep.Shape.Streams, rep.Shape.Rooms, rep.Shape.Rate = c.streams, c.rooms, c.rate
	rep.Shape.PageRooms, rep.Shape.Hubs, rep.Shape.Batch, rep.Shape.Ingest = c.pageRooms, len(c.hubs), c.batch, c.ingest != ""
	rep.Shape.Duration, rep.Shape.Payload, rep.Shape.Procs = c.duration.Seconds(), c.payload, c.procs

	base := rssOfAll(c.hubPIDs)
	start := time.Now()
	children, local, err := connectAll(ctx, c)
	if err != nil {
		return err
	}
	rep.Connect.Secs = time.Since(start).Seconds()
	// Let presence updates of the joins settle before measuring.
	sleep(ctx, 2*time.Second)

	connected := rssOfAll(c.hubPIDs)
	hub0, redis0 := cpuOfAll(c.hubPIDs), cpuOfAll(c.redisPIDs)
	pubStart := time.Now()
	sent, failed, perRoom, pubLat := publish(ctx, c)
	window := time.Since(pubStart)
	sleep(ctx, c.drain)
	hub1, redis1 := cpuOfAll(c.hubPIDs), cpuOfAll(c.redisPIDs)
	measured := time.Since(pubStart).Seconds()                     // the CPU's window: publishing and the drain
	hubRSS, redisRSS := rssOfAll(c.hubPIDs), rssOfAll(c.redisPIDs) // before the streams close

	// Collect.
	var results []received
	if local != nil {
		results = append(results, local.result())
	}
	for _, ch := range children {
		ch.stdin.Close()
		var r received
		if err := json.NewDecoder(ch.out).Decode(&r); err != nil {
			return fmt.Errorf("reading a child's result: %w", err)
		}
		_ = ch.cmd.Wait()
		results = append(results, r)
	}
	lats := rep.add(results, perRoom)
	// Expected counts only connected streams' rooms; failed ones never listened.
	rep.Publish.Sent, rep.Publish.Failed = sent, failed
	rep.Publish.P50ms, rep.Publish.P99ms = pct(pubLat, 50), pct(pubLat, 99)
	rep.Delivery.PerSec = float64(rep.Delivery.Delivered) / window.Seconds()
	rep.Delivery.P50ms, rep.Delivery.P95ms, rep.Delivery.P99ms = pct(lats, 50), pct(lats, 95), pct(lats, 99)
	rep.Delivery.MaxMs, rep.Delivery.SampleCount = pct(lats, 100), len(lats)
	rep.Hub = use(c.hubPIDs, hub1-hub0, hubRSS, rep.Delivery.Delivered, c.streams, measured)
	rep.Redis = use(c.redisPIDs, redis1-redis0, redisRSS, rep.Delivery.Delivered, c.streams, measured)
	if rep.Hub != nil && c.streams > 0 {
		n := float64(c.streams)
		rep.Hub.BaseRSSKB = float64(base)
		rep.Hub.KBAboveBaseAtConnect = float64(connected-base) / n
		rep.Hub.KBAboveBaseAtEndOfWindow = float64(hubRSS-base) / n
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// connectAll opens the streams: in children when c.procs > 1, each
// reporting "connected", else here.
func connectAll(ctx context.Context, c config) ([]*child, *streamSet, error) {
	if c.procs <= 1 {
		return nil, openStreams(ctx, c, 0, c.streams), nil
	}
	var children []*child
	per := (c.streams + c.procs - 1) / c.procs
	for first := 0; first < c.streams; first += per {
		ch, err := startChild(c, first, min(per, c.streams-first))
		if err != nil {
			return nil, nil, err
		}
		children = append(children, ch)
	}
	for _, ch := range children {
		if line, err := ch.out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "connected" {
			return nil, nil, fmt.Errorf("a child did not connect: %q %v", line, err)
		}
	}
	return children, nil, nil
}

// add counts what every stream set received into the report, against
// perRoom (the events published to each room), and returns the latencies.
func (rep *report) add(results []received, perRoom map[int]int64) []float64 {
	var lats []float64
	for _, r := range results {
		rep.Connect.OK += r.Connected
		rep.Connect.Failed += r.Failed
		for k, v := range r.FailReasons {
			if rep.Connect.Reasons == nil {
				rep.Connect.Reasons = map[string]int{}
			}
			rep.Connect.Reasons[k] += v
		}
		rep.Delivery.Delivered += r.Deliveries
		rep.Delivery.Duplicated += r.Dups
		rep.Delivery.StreamsEnd += r.Ended
		lats = append(lats, r.Latencies...)
		for room, counts := range r.Seen {
			for _, n := range counts {
				rep.Delivery.Expected += perRoom[room]
				rep.Delivery.Lost += max(0, perRoom[room]-int64(n))
			}
		}
	}
	return lats
}
