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
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
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
	if c.childCount > 0 {
		err = runChild(ctx, c)
	} else {
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

// received is what one process's streams got, per room.
type received struct {
	Connected   int              `json:"connected"`
	Failed      int              `json:"failed"`
	FailReasons map[string]int   `json:"failReasons,omitempty"`
	Ended       int              `json:"ended"` // streams the hub closed during the run
	Deliveries  int64            `json:"deliveries"`
	Dups        int64            `json:"duplicates"`
	Seen        map[int][]uint32 `json:"seen"`      // room → per stream, distinct seqs received (sum)
	Latencies   []float64        `json:"latencies"` // ms, a sample
}

// streamSet holds streams and their counters.
type streamSet struct {
	mu        sync.Mutex
	failed    map[string]int
	connected atomic.Int64
	ended     atomic.Int64
	deliv     atomic.Int64
	dups      atomic.Int64
	lat       *sampler
	perStream []*streamState
}

type streamState struct {
	rooms     []int // one room (room stream), or a page stream's rooms
	connected atomic.Bool
	mu        sync.Mutex
	seen      map[uint64]bool // room<<32 | seq
}

// streamRooms is stream i's rooms: i's room, and on page streams the next ones
// spaced evenly over all rooms, so that every room has the same members.
func streamRooms(c config, i int) []int {
	if c.pageRooms == 0 {
		return []int{i%c.rooms + 1}
	}
	var rs []int
	for k := 0; k < c.pageRooms; k++ {
		rs = append(rs, (i+k*c.rooms/c.pageRooms)%c.rooms+1)
	}
	return rs
}

func openStreams(ctx context.Context, c config, first, count int) *streamSet {
	set := &streamSet{failed: map[string]int{}, lat: newSampler(200_000)}
	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableCompression: true, MaxConnsPerHost: 0,
		DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}
	client := &http.Client{Transport: tr}
	sem := make(chan struct{}, 200) // connects in flight
	var wg sync.WaitGroup
	for i := first; i < first+count; i++ {
		st := &streamState{rooms: streamRooms(c, i), seen: map[uint64]bool{}}
		set.perStream = append(set.perStream, st)
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			err := readStream(ctx, client, c, i, st, set, func() { <-sem; wg.Done() })
			if err != nil && ctx.Err() == nil {
				set.ended.Add(1)
			}
		}(i)
	}
	wg.Wait()
	return set
}

// readStream connects stream i, calls connected once it is (or failed), then
// reads events until ctx ends.
func readStream(ctx context.Context, client *http.Client, c config, i int, st *streamState, set *streamSet, connected func()) error {
	once := sync.OnceFunc(connected)
	defer once()
	base := c.hubs[i%len(c.hubs)]
	url := fmt.Sprintf("%s/api/v1/rooms/%d/stream", base, st.rooms[0])
	if c.pageRooms > 0 {
		ids := make([]string, len(st.rooms))
		for k, r := range st.rooms {
			ids[k] = strconv.Itoa(r)
		}
		url = base + "/api/v1/stream?rooms=" + strings.Join(ids, ",")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token(c.secret, int64(i+1)))
	resp, err := client.Do(req)
	if err != nil {
		set.fail(shortErr(err))
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		set.fail("status " + strconv.Itoa(resp.StatusCode))
		return nil
	}
	set.connected.Add(1)
	st.connected.Store(true)
	once()
	br := bufio.NewReaderSize(resp.Body, 4096)
	var event string
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		switch {
		case bytes.HasPrefix(line, []byte("event: ")):
			event = string(bytes.TrimSpace(line[7:]))
		case bytes.HasPrefix(line, []byte("data: ")) && event == "comment.created":
			now := time.Now().UnixNano()
			var d struct {
				T      int64  `json:"t"`
				Seq    uint32 `json:"seq"`
				RoomID int    `json:"roomId"` // page streams only
			}
			if json.Unmarshal(line[6:], &d) != nil {
				continue
			}
			if d.RoomID == 0 {
				d.RoomID = st.rooms[0]
			}
			set.deliv.Add(1)
			set.lat.add(float64(now-d.T) / 1e6)
			key := uint64(d.RoomID)<<32 | uint64(d.Seq)
			st.mu.Lock()
			if st.seen[key] {
				set.dups.Add(1)
			}
			st.seen[key] = true
			st.mu.Unlock()
		case len(bytes.TrimSpace(line)) == 0:
			event = ""
		}
	}
}

func (s *streamSet) fail(reason string) {
	s.mu.Lock()
	s.failed[reason]++
	s.mu.Unlock()
}

func shortErr(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

func (s *streamSet) result() received {
	r := received{Connected: int(s.connected.Load()), Ended: int(s.ended.Load()), Deliveries: s.deliv.Load(),
		Dups: s.dups.Load(), Seen: map[int][]uint32{}, Latencies: s.lat.values()}
	s.mu.Lock()
	for k, v := range s.failed {
		r.Failed += v
		if r.FailReasons == nil {
			r.FailReasons = map[string]int{}
		}
		r.FailReasons[k] = v
	}
	s.mu.Unlock()
	for _, st := range s.perStream {
		if !st.connected.Load() {
			continue // it never listened: nothing was expected of it
		}
		st.mu.Lock()
		per := map[int]uint32{}
		for key := range st.seen {
			per[int(key>>32)]++
		}
		for _, room := range st.rooms {
			r.Seen[room] = append(r.Seen[room], per[room])
		}
		st.mu.Unlock()
	}
	return r
}

// runChild holds its slice of streams until its stdin closes (the parent is
// done), then prints what they received.
func runChild(ctx context.Context, c config) error {
	set := openStreams(ctx, c, c.firstUser, c.childCount)
	fmt.Println("connected") // the parent waits for this line
	_, _ = io.Copy(io.Discard, os.Stdin)
	return json.NewEncoder(os.Stdout).Encode(set.result())
}

// ---- the parent: children, publisher, report ----

type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startChild(c config, first, count int) (*child, error) {
	args := append([]string{}, os.Args[1:]...)
	args = append(args, "-child-first", strconv.Itoa(first), "-child-count", strconv.Itoa(count))
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &child{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}, nil
}

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

// procUse is a process's CPU over the publishing window and its RSS at the end.
type procUse struct {
	CPUSecs             float64 `json:"cpuSecs"`
	CPUSecsPer1kDeliver float64 `json:"cpuSecsPer1000Deliveries"`
	RSSKB               int64   `json:"rssKB"`
	RSSKBPerStream      float64 `json:"rssKBPerStream"`
}

func runParent(ctx context.Context, c config) error {
	var rep report
	rep.Shape.Streams, rep.Shape.Rooms, rep.Shape.Rate = c.streams, c.rooms, c.rate
	rep.Shape.PageRooms, rep.Shape.Hubs, rep.Shape.Batch, rep.Shape.Ingest = c.pageRooms, len(c.hubs), c.batch, c.ingest != ""
	rep.Shape.Duration, rep.Shape.Payload, rep.Shape.Procs = c.duration.Seconds(), c.payload, c.procs

	// Streams: in children when procs > 1, else here.
	start := time.Now()
	var children []*child
	var local *streamSet
	if c.procs > 1 {
		per := (c.streams + c.procs - 1) / c.procs
		for first := 0; first < c.streams; first += per {
			ch, err := startChild(c, first, min(per, c.streams-first))
			if err != nil {
				return err
			}
			children = append(children, ch)
		}
		for _, ch := range children {
			if line, err := ch.out.ReadString('\n'); err != nil || strings.TrimSpace(line) != "connected" {
				return fmt.Errorf("a child did not connect: %q %v", line, err)
			}
		}
	} else {
		local = openStreams(ctx, c, 0, c.streams)
	}
	rep.Connect.Secs = time.Since(start).Seconds()
	// Let presence updates of the joins settle before measuring.
	sleep(ctx, 2*time.Second)

	hub0, redis0 := cpuOfAll(c.hubPIDs), cpuOfAll(c.redisPIDs)
	pubStart := time.Now()
	sent, failed, perRoom, pubLat := publish(ctx, c)
	window := time.Since(pubStart)
	sleep(ctx, c.drain)
	hub1, redis1 := cpuOfAll(c.hubPIDs), cpuOfAll(c.redisPIDs)

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
	// Expected counts only connected streams' rooms; failed ones never listened.
	rep.Publish.Sent, rep.Publish.Failed = sent, failed
	rep.Publish.P50ms, rep.Publish.P99ms = pct(pubLat, 50), pct(pubLat, 99)
	rep.Delivery.PerSec = float64(rep.Delivery.Delivered) / window.Seconds()
	rep.Delivery.P50ms, rep.Delivery.P95ms, rep.Delivery.P99ms = pct(lats, 50), pct(lats, 95), pct(lats, 99)
	rep.Delivery.MaxMs, rep.Delivery.SampleCount = pct(lats, 100), len(lats)
	rep.Hub = use(c.hubPIDs, hub1-hub0, rep.Delivery.Delivered, c.streams)
	rep.Redis = use(c.redisPIDs, redis1-redis0, rep.Delivery.Delivered, c.streams)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// publish sends c.rate events a second for c.duration, round robin over the
// rooms, each data {"t":<unix ns>,"seq":<per room>,"pad":"…"}: one request
// each, or with c.batch > 1 batches of that many events. lat is each
// request's round trip; sent and failed count events.
func publish(ctx context.Context, c config) (sent, failed int64, perRoom map[int]int64, lat []float64) {
	perRoom = map[int]int64{}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	send := func(base string, bodies []string, rooms []int) []bool { return postEvents(client, c.key, base, bodies) }
	if c.ingest != "" {
		rdb, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.ingest}, DisableCache: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen: -ingest:", err)
			return 0, 0, perRoom, nil
		}
		defer rdb.Close()
		send = func(_ string, bodies []string, rooms []int) []bool {
			return addEvents(rdb, c.ingestParts, bodies, rooms)
		}
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
		rooms := make([]int, per)
		bodies := make([]string, per)
		for i := range rooms {
			room := (n*per+i)%c.rooms + 1
			seqs[room]++
			rooms[i] = room
			bodies[i] = fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"t":%d,"seq":%d,"pad":%q}}`,
				room, time.Now().UnixNano(), seqs[room], pad)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(rooms []int, bodies []string, base string) {
			defer func() { <-sem; wg.Done() }()
			t := time.Now()
			ok := send(base, bodies, rooms)
			mu.Lock()
			defer mu.Unlock()
			for i, room := range rooms {
				if ok[i] {
					sent++
					perRoom[room]++
				} else {
					failed++
				}
			}
			lat = append(lat, float64(time.Since(t))/1e6)
		}(rooms, bodies, c.hubs[n%len(c.hubs)])
	}
	wg.Wait()
	return sent, failed, perRoom, lat
}

// postEvents publishes bodies (one request, or one batch request for
// several) and reports which were accepted.
func postEvents(client *http.Client, key, base string, bodies []string) []bool {
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

// addEvents adds bodies to the ingest streams of their rooms in one
// pipeline and reports which Redis took.
func addEvents(rdb rueidis.Client, parts int, bodies []string, rooms []int) []bool {
	cmds := make(rueidis.Commands, len(bodies))
	for i, b := range bodies {
		cmds[i] = rdb.B().Xadd().Key(fmt.Sprintf("ingest:{%d}", rooms[i]%parts)).Maxlen().Almost().Threshold("1000000").
			Id("*").FieldValue().FieldValue("event", b).Build()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok := make([]bool, len(bodies))
	for i, r := range rdb.DoMulti(ctx, cmds...) {
		ok[i] = r.Error() == nil
	}
	return ok
}

// ---- small helpers ----

// pidList parses comma-separated pids, skipping what is not one.
func pidList(s string) []int {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(p)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// token mints an HS256 access token for user (the hub's dev secret by default).
func token(secret string, user int64) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	now := time.Now().Unix()
	body := enc.EncodeToString([]byte(fmt.Sprintf(`{"sub":"%d","iat":%d,"exp":%d,"token_type":"access"}`, user, now, now+3600)))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(head + "." + body))
	return head + "." + body + "." + enc.EncodeToString(mac.Sum(nil))
}

// cpuOf returns a process's user+system CPU seconds from /proc/<pid>/stat.
func cpuOf(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start at ") ".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// rssKB returns a process's resident set from /proc/<pid>/status.
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

// cpuOfAll sums the CPU seconds of pids.
func cpuOfAll(pids []int) float64 {
	s := 0.0
	for _, p := range pids {
		s += cpuOf(p)
	}
	return s
}

// use reports what the processes pids used together (nil when none is known).
func use(pids []int, cpu float64, delivered int64, streams int) *procUse {
	if len(pids) == 0 || pids[0] == 0 {
		return nil
	}
	u := &procUse{CPUSecs: cpu}
	for _, p := range pids {
		u.RSSKB += rssKB(p)
	}
	if delivered > 0 {
		u.CPUSecsPer1kDeliver = cpu / float64(delivered) * 1000
	}
	u.RSSKBPerStream = float64(u.RSSKB) / float64(streams)
	return u
}

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// sampler keeps up to n values, then a uniform sample (reservoir).
type sampler struct {
	mu   sync.Mutex
	n    int
	seen int64
	v    []float64
	rnd  uint64
}

func newSampler(n int) *sampler { return &sampler{n: n, rnd: uint64(time.Now().UnixNano()) | 1} }

func (s *sampler) add(x float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	if len(s.v) < s.n {
		s.v = append(s.v, x)
		return
	}
	s.rnd ^= s.rnd << 13
	s.rnd ^= s.rnd >> 7
	s.rnd ^= s.rnd << 17
	if j := int64(s.rnd % uint64(s.seen)); j < int64(s.n) {
		s.v[j] = x
	}
}

func (s *sampler) values() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]float64(nil), s.v...)
}
