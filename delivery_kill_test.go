package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

// killGateway is a real gateway in the test that records each hand-off's
// Idempotency-Key and, for the first call, does what the scenario asks.
type killGateway struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []string
	arrived chan struct{} // closed when the first call arrived
	once    sync.Once
	first   func(w http.ResponseWriter, r *http.Request)
}

func startKillGateway(t *testing.T, first func(w http.ResponseWriter, r *http.Request)) *killGateway {
	g := &killGateway{arrived: make(chan struct{}), first: first}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		g.mu.Lock()
		g.keys = append(g.keys, r.Header.Get("Idempotency-Key"))
		n := len(g.keys)
		g.mu.Unlock()
		if n == 1 && g.first != nil {
			g.once.Do(func() { close(g.arrived) })
			g.first(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(g.Server.CloseClientConnections)
	t.Cleanup(g.Close)
	return g
}

// blackhole accepts connections and never answers: a hand-off sent there
// never reaches a gateway.
func blackhole(t *testing.T) (url string, accepted <-chan struct{}) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	var once sync.Once
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			once.Do(func() { close(got) })
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/", got
}

// A hub instance is SIGKILLed while it holds a claimed hand-off: before the
// gateway got it, while the gateway holds it, and after the gateway's 2xx
// but before the outcome is written. Another instance finishes it within
// LOCK_TTL_SECS + 5 s, under the same Idempotency-Key, and the record ends
// sent.
func TestBinary_DeliverySurvivesSIGKILLAtEachStep(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	for _, tc := range []struct {
		name  string
		first func(w http.ResponseWriter, r *http.Request) // the gateway's first answer; nil: A's sink is a black hole
	}{
		{"before the call", nil},
		{"while the gateway holds it", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			panic(http.ErrAbortHandler) // no answer: returning would send a 200
		}},
		{"after the 2xx", func(w http.ResponseWriter, r *http.Request) {
			// The status goes out; the body never ends, so the hub is
			// stuck between the 2xx and writing it down.
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "{")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { killMidHandOff(t, bin, tc.first) })
	}
}

// killMidHandOff: instance A hands off with the gateway answering first
// (nil: A's sink is a black hole) and is killed while it holds the
// hand-off; B sends it under the same Idempotency-Key.
func killMidHandOff(t *testing.T, bin string, first func(w http.ResponseWriter, r *http.Request)) {
	rs := testredis.Start(t)
	g := startKillGateway(t, first)
	sinkA, arrived := g.URL, (<-chan struct{})(g.arrived)
	if first == nil {
		sinkA, arrived = blackhole(t)
	}
	env := func(sink string) []string {
		return []string{"REDIS_URL=" + rs.URL(), "LOCK_TTL_SECS=2", "DELIVERY_CHANNELS=push",
			`DELIVERY_RULES={"comment.created":{"push":{}}}`, "DELIVERY_SINK_URL=" + sink}
	}
	a, procA, logsA := testbin.Start(t, bin, env(sinkA)...)
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	id := testbin.Publish(t, nil, a, `{"roomId":7,"eventType":"comment.created","data":{},"recipientIds":[9]}`)
	nid := "7:" + id
	select {
	case <-arrived:
	case <-time.After(15 * time.Second):
		t.Fatalf("instance A never handed off; its log:\n%s", logsA)
	}
	b, _, logsB := testbin.Start(t, bin, env(g.URL)...)
	testbin.WaitHealth(t, b, 200, 15*time.Second)
	if err := procA.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procA.Exited()
	killed := time.Now()
	var rec deliveryRec
	// The promise is LOCK_TTL_SECS + 5 s (7 s here); the wait allows
	// four times that, so a busy machine does not fail it, and the
	// time taken is logged.
	deadline := killed.Add(4 * (2*time.Second + 5*time.Second))
	for {
		if time.Now().After(deadline) {
			t.Fatalf("not sent within 4 × (LOCK_TTL_SECS + 5 s) of the kill: %+v; B's log:\n%s", rec, logsB)
		}
		if recs := deliveriesAt(b, nid); len(recs) == 1 {
			rec = recs[0]
			if rec.State == "sent" {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	want := nid + "/9/push"
	for _, k := range g.keys {
		if k != want {
			t.Fatalf("the gateway got Idempotency-Key %q, want every call under %q", k, want)
		}
	}
	t.Logf("sent by B %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	calls := 2 // one by A, cut off, and one by B
	if first == nil {
		calls = 1 // A's went into the black hole
	}
	if len(g.keys) != calls || rec.Attempts != 2 {
		t.Fatalf("the gateway got %d calls, the record says %d attempts; want %d calls and 2 attempts",
			len(g.keys), rec.Attempts, calls)
	}
}

// In dev mode (the embedded Redis) deliveries go out too: a newcomer trying
// DELIVERY_* with `go run .` sees their gateway called.
func TestBinary_DevModeDeliversBeyondTheTab(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	g := startKillGateway(t, nil)
	a, _, logs := testbin.Start(t, bin, "DELIVERY_CHANNELS=push,email", "DELIVERY_SINK_URL="+g.URL,
		`DELIVERY_RULES={"comment.created":{"push":{},"email":{"digestSecs":1,"unless":"read"}}}`, `DELIVERY_CAPS={"push":{"perHour":1}}`)
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	first := testbin.Publish(t, nil, a, `{"roomId":7,"eventType":"comment.created","data":{},"recipientIds":[9]}`)
	second := testbin.Publish(t, nil, a, `{"roomId":7,"eventType":"comment.created","data":{},"recipientIds":[9],"dedupeKey":"k"}`)
	states := func(id string) map[string]string {
		out := map[string]string{}
		for _, d := range deliveriesAt(a, "7:"+id) {
			out[d.Channel] = d.State + " " + d.Reason
		}
		return out
	}
	testbin.Eventually(t, 15*time.Second, "a push, a push over the cap, one email digest of both", func() bool {
		f, s := states(first), states(second)
		return f["push"] == "sent " && s["push"] == "skipped rate_limited" && f["email"] == "sent " && s["email"] == "sent "
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.keys) != 2 {
		t.Fatalf("hand-offs %v, want a push and a digest; log:\n%s", g.keys, logs)
	}
}

// deliveryRec is what the kill tests read of a delivery record.
type deliveryRec struct {
	Channel, State, Reason string
	Attempts               int
}

// deliveriesAt reads a notification's deliveries from the hub at base (nil
// when it does not answer).
func deliveriesAt(base, nid string) []deliveryRec {
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/internal/notifications/"+nid+"/deliveries", nil)
	req.Header.Set("X-Internal-Key", "local_dev_internal_key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var env struct {
		Result struct{ Deliveries []deliveryRec }
	}
	_ = json.NewDecoder(resp.Body).Decode(&env)
	return env.Result.Deliveries
}
