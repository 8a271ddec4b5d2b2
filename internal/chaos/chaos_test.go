// Package chaos runs roomhub through the faults production brings, with real
// processes: two hub binaries behind a proxy that follows /health, a Redis
// master with a replica watched by three sentinels, clients that resume with
// Last-Event-ID, a publisher at a fixed rate. Faults come on a schedule
// (listener kills, cut client connections, CLIENT PAUSE, a failover, a killed
// master restarted empty, a hub restart); at the end every client's events
// are checked against what was accepted: an event may be lost only with a
// system.gap before the next one (Redis lost it), never silently, never twice,
// never out of order.
//
//	make chaos   # 60 s;  make soak: 10 min, resources sampled
//	go test -run TestChaos ./internal/chaos/ -chaos.duration=60s -chaos.report=/tmp/chaos.json
package chaos

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"roomhub/internal/ports"
	"roomhub/internal/sse"
	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

var (
	duration = flag.Duration("chaos.duration", 40*time.Second, "how long faults come while events are published")
	rate     = flag.Int("chaos.rate", 50, "publishes per second")
	report   = flag.String("chaos.report", "", "write the JSON report here")
	sample   = flag.Duration("chaos.sample", 0, "sample the hubs' RSS, goroutines and open files this often (soak)")
	replicas = flag.Int("chaos.wait-replicas", 1, "PUBLISH_WAIT_REPLICAS of the hubs (0: acknowledged writes a killed master had not replicated are lost, and may be lost silently)")
)

// Report is what a chaos run found.
type Report struct {
	DurationSecs float64          `json:"durationSecs"`
	WaitReplicas int              `json:"waitReplicas"`
	Faults       map[string]int   `json:"faults"`
	Accepted     int              `json:"accepted"`
	Clients      int              `json:"clients"`
	Expected     int              `json:"expected"` // accepted events × the clients of their room
	Delivered    int              `json:"delivered"`
	LostSilently int              `json:"lostSilently"`
	LostWithGap  int              `json:"lostWithGap"`
	Duplicated   int              `json:"duplicated"`
	OutOfOrder   int              `json:"outOfOrder"`
	Gaps         int              `json:"gaps"`
	Reconnects   int              `json:"reconnects"`
	Problems     []string         `json:"problems,omitempty"` // what each client lacked or got wrong, in short
	Samples      []ResourceSample `json:"samples,omitempty"`
}

// ResourceSample is one look at a hub process.
type ResourceSample struct {
	AtSecs     float64 `json:"atSecs"`
	Hub        string  `json:"hub"`
	RSSKB      int64   `json:"rssKB"`
	Goroutines int     `json:"goroutines"`
	OpenFiles  int     `json:"openFiles"`
}

// hub is one running instance.
type hub struct {
	url, debug string
	cmd        *testbin.Proc
	logs       *testbin.Logs
}

const rooms = 4

func TestChaos(t *testing.T) {
	bin := testbin.Build(t)
	sn := testredis.StartSentinels(t)
	start := func() *hub {
		dbg := freeAddr(t)
		url, cmd, logs := testbin.Start(t, bin, "REDIS_URL="+sn.URL(), "MAX_CONNECTIONS_PER_USER=0", "DEBUG_ADDR="+dbg,
			"PUBLISH_WAIT_REPLICAS="+strconv.Itoa(*replicas))
		testbin.WaitHealth(t, url, 200, 30*time.Second)
		return &hub{url: url, debug: dbg, cmd: cmd, logs: logs}
	}
	run := &chaosRun{t: t, sn: sn, start: start, hubs: []*hub{start(), start()}}
	run.proxy = testbin.StartProxy(t, run.hubs[0].url, run.hubs[1].url)
	clients := run.openClients(testbin.DevToken(t, run.hubs[0].url, 9))
	defer func() {
		for _, c := range clients {
			c.Stop()
		}
	}()

	rep := Report{Faults: map[string]int{}, Clients: len(clients), WaitReplicas: *replicas}
	began := time.Now()
	pub := startPublisher(run.proxy.URL, *rate)
	stopSampling := run.sample(&rep, began)
	faults := run.faults()
	every := *duration / time.Duration(len(faults)+1)
	for i := 0; time.Since(began) < *duration; i++ {
		time.Sleep(every)
		f := faults[i%len(faults)]
		t.Logf("%5.1fs fault: %s", time.Since(began).Seconds(), f.name)
		f.do()
		rep.Faults[f.name]++
	}
	for _, f := range faults {
		if rep.Faults[f.name] == 0 {
			t.Errorf("fault %q never ran: the run is too short for its faults", f.name)
		}
	}
	accepted := pub.stop()
	stopSampling()
	rep.DurationSecs = time.Since(began).Seconds()
	tally(&rep, clients, accepted)

	b, _ := json.MarshalIndent(rep, "", "  ")
	t.Logf("report:\n%s", b)
	if *report != "" {
		if err := os.WriteFile(*report, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if rep.LostSilently > 0 || rep.Duplicated > 0 || rep.OutOfOrder > 0 {
		t.Fatalf("lost silently %d, duplicated %d, out of order %d", rep.LostSilently, rep.Duplicated, rep.OutOfOrder)
	}
	// Publishes stall while no replica answers (PUBLISH_WAIT_REPLICAS): ten
	// seconds' worth is enough to prove something.
	if rep.Delivered == 0 || rep.Accepted < 10*(*rate) {
		t.Fatalf("only %d events accepted, %d delivered: the run proved little", rep.Accepted, rep.Delivered)
	}
}

// chaosRun is what the chaos run's steps share: the Sentinel set, the hubs
// (hubs[0] is replaced when a fault restarts it, under mu, which the
// sampler reads them under) and the proxy the clients and publisher use.
type chaosRun struct {
	t     *testing.T
	sn    *testredis.Sentinels
	start func() *hub
	mu    sync.Mutex
	hubs  []*hub
	proxy *testbin.Proxy
}

// openClients opens 12 resuming clients over the rooms through the proxy,
// as token's user, and waits until each is connected.
func (r *chaosRun) openClients(token string) []roomClient {
	var clients []roomClient
	for i := 0; i < 12; i++ {
		room := 300 + i%rooms
		clients = append(clients, roomClient{room, sse.StartBrowser(fmt.Sprintf("%s/api/v1/rooms/%d/stream?token=%s", r.proxy.URL, room, token), sse.BrowserOptions{})})
	}
	testbin.Eventually(r.t, 20*time.Second, "clients connected", func() bool {
		for _, c := range clients {
			if c.Opens() == 0 {
				return false
			}
		}
		return true
	})
	return clients
}

// sample samples each hub into rep every -sample (none when 0) until the
// returned stop is called.
func (r *chaosRun) sample(rep *Report, began time.Time) (stop func()) {
	var sampler sync.WaitGroup
	done := make(chan struct{})
	if *sample > 0 {
		sampler.Add(1)
		go func() {
			defer sampler.Done()
			tick := time.NewTicker(*sample)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					r.mu.Lock()
					for i, h := range r.hubs {
						rep.Samples = append(rep.Samples, sampleHub(fmt.Sprint("hub", i), h, time.Since(began)))
					}
					r.mu.Unlock()
				}
			}
		}()
	}
	return func() { close(done); sampler.Wait() }
}

// fault is one thing that goes wrong, by name.
type fault struct {
	name string
	do   func()
}

// faults are the run's faults, taken in turn.
func (r *chaosRun) faults() []fault {
	t, sn := r.t, r.sn
	return []fault{
		{"kill the listeners' connections", func() {
			if out := redisCLI(t, sn.MasterPort(t), "CLIENT", "KILL", "TYPE", "pubsub"); out == "0" {
				t.Logf("CLIENT KILL TYPE pubsub killed no listener (all were reconnecting)")
			}
		}},
		{"cut every client connection", func() {
			if r.proxy.Drop() == 0 {
				t.Logf("no client connection to cut (all were reconnecting)")
			}
		}},
		{"pause Redis 1.5 s", func() { redisCLI(t, sn.MasterPort(t), "CLIENT", "PAUSE", "1500", "ALL") }},
		{"fail the master over", func() {
			old := sn.MasterPort(t)
			redisCLI(t, sn.Sentinels[0].Port, "SENTINEL", "FAILOVER", sn.Name)
			testbin.Eventually(t, 30*time.Second, "a new master", func() bool { p := sn.MasterPort(t); return p != 0 && p != old })
		}},
		{"kill the master, restart it empty", func() {
			old := sn.MasterPort(t)
			srv := sn.Master
			if sn.Replica.Port == old {
				srv = sn.Replica
			}
			srv.Kill()
			testbin.Eventually(t, 30*time.Second, "a new master", func() bool { p := sn.MasterPort(t); return p != 0 && p != old })
			srv.Restart() // empty; the sentinels make it a replica of the new master
		}},
		{"restart one hub", func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			h := r.hubs[0]
			_ = h.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-h.cmd.Exited():
			case <-time.After(25 * time.Second):
				t.Fatalf("a hub did not exit within 25 s of SIGTERM\n%s", h.logs)
			}
			r.hubs[0] = r.start()
			r.proxy.SetBackends(r.hubs[0].url, r.hubs[1].url)
		}},
	}
}

// tally lets every client catch up (or gives up on it after 30 s: what it
// lacks counts as lost) and adds what each got of accepted into rep.
func tally(rep *Report, clients []roomClient, accepted map[int][]string) {
	deadline := time.Now().Add(30 * time.Second)
	for _, c := range clients {
		want := accepted[c.room]
		for len(want) > 0 && time.Now().Before(deadline) && !c.Has(want[len(want)-1]) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, c := range clients {
		rep.Reconnects += int(c.Opens()) - 1
		res := sse.Check(c.Frames(), accepted[c.room], sse.Options{Counts: func(f sse.Frame) bool { return f.Event == "comment.created" }})
		rep.Expected += res.Expected
		rep.Delivered += res.Delivered
		rep.LostSilently += res.LostSilently
		rep.LostWithGap += res.LostWithGap
		rep.Duplicated += res.Duplicated
		rep.OutOfOrder += res.OutOfOrder
		rep.Gaps += res.Gaps
		for _, p := range res.Problems {
			rep.Problems = append(rep.Problems, fmt.Sprintf("client %d (room %d): %s", i, c.room, p))
		}
	}
	for _, ids := range accepted {
		rep.Accepted += len(ids)
	}
}

// roomClient is a resuming client of one room.
type roomClient struct {
	room int
	*sse.Browser
}

// publisher publishes comment.created round robin over the rooms, each with
// an idempotency key, retrying a failed publish (same key) until it is
// accepted; accepted ids per room are in publish order.
type publisher struct {
	mu       sync.Mutex
	accepted map[int][]string
	quit     chan struct{}
	done     chan struct{}
}

func startPublisher(base string, perSec int) *publisher {
	p := &publisher{accepted: map[int][]string{}, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		client := &http.Client{Timeout: 5 * time.Second}
		tick := time.NewTicker(time.Second / time.Duration(perSec))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-p.quit:
				return
			case <-tick.C:
			}
			room := 300 + n%rooms
			body := fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d},"idempotencyKey":"c%d"}`, room, n, n)
			for {
				id, err := testbin.TryPublish(client, base, body)
				if err == nil {
					p.mu.Lock()
					p.accepted[room] = append(p.accepted[room], id)
					p.mu.Unlock()
					break
				}
				select {
				case <-p.quit:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return p
}

func (p *publisher) stop() map[int][]string {
	close(p.quit)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

func sampleHub(name string, h *hub, at time.Duration) ResourceSample {
	s := ResourceSample{AtSecs: at.Seconds(), Hub: name}
	pid := h.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				s.RSSKB, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			}
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.OpenFiles = len(fds)
	}
	if resp, err := http.Get("http://" + h.debug + "/debug/pprof/goroutine?debug=1"); err == nil {
		var first string
		_, _ = fmt.Fscanln(resp.Body, &first, &first, &first, &s.Goroutines) // "goroutine profile: total N"
		resp.Body.Close()
	}
	return s
}

// redisCLI runs a fault's command and returns its output; a command that
// fails (or that Redis refuses) fails the test: a fault that did not happen
// proves nothing.
func redisCLI(t *testing.T, port int, args ...string) string {
	t.Helper()
	out, err := exec.Command("redis-cli", append([]string{"-p", strconv.Itoa(port)}, args...)...).CombinedOutput()
	res := strings.TrimSpace(string(out))
	if err != nil || strings.HasPrefix(res, "ERR") || strings.HasPrefix(res, "(error)") {
		t.Errorf("redis-cli %v: %v %s", args, err, res)
	}
	return res
}

func freeAddr(t *testing.T) string { return ports.Addr(t) }
