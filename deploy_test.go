package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

// healthProxy is the tiny load balancer of the deploy test: each request goes
// to the first backend, in turn, whose /health answers 200.
type healthProxy struct {
	backends []string
	next     atomic.Int64
}

func (p *healthProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for i := 0; i < len(p.backends); i++ {
		b := p.backends[int(p.next.Add(1))%len(p.backends)]
		if testbin.HealthStatus(b) != 200 {
			continue
		}
		u, _ := url.Parse(b)
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.FlushInterval = -1 // SSE: every frame at once
		rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
		rp.ServeHTTP(w, r)
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
}

// resumingClient reads a room's stream through the proxy and reconnects with
// Last-Event-ID whenever it ends, as a browser's EventSource does.
type resumingClient struct {
	mu    sync.Mutex
	ids   []string
	stop  chan struct{}
	done  chan struct{}
	opens atomic.Int64
}

func startResumingClient(t *testing.T, base, token string, room int) *resumingClient {
	c := &resumingClient{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		last := ""
		for {
			select {
			case <-c.stop:
				return
			default:
			}
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/v1/rooms/%d/stream?token=%s", base, room, token), nil)
			if last != "" {
				req.Header.Set("Last-Event-ID", last)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				if resp != nil {
					resp.Body.Close()
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			c.opens.Add(1)
			go func() { <-c.stop; resp.Body.Close() }()
			sc := bufio.NewScanner(resp.Body)
			event := ""
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "event: "):
					event = line[7:]
				case strings.HasPrefix(line, "id: ") && event == "comment.created":
					last = line[4:]
					c.mu.Lock()
					c.ids = append(c.ids, last)
					c.mu.Unlock()
				case line == "":
					event = ""
				}
			}
			resp.Body.Close()
			time.Sleep(50 * time.Millisecond) // a browser waits retry:; shorter here
		}
	}()
	return c
}

func (c *resumingClient) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ids...)
}

// A rolling deploy: two instances behind a proxy that follows /health, 20
// clients resuming with Last-Event-ID, events flowing; one instance gets
// SIGTERM and exits. Every client ends with every event exactly once, in
// order.
func TestBinary_SIGTERMBehindAProxyLosesNothing(t *testing.T) {
	bin := testbin.Build(t)
	rs := testredis.Start(t)
	a, cmdA, logsA := testbin.Start(t, bin, "REDIS_URL="+rs.URL(), "MAX_CONNECTIONS_PER_USER=0")
	b, _, _ := testbin.Start(t, bin, "REDIS_URL="+rs.URL(), "MAX_CONNECTIONS_PER_USER=0")
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	testbin.WaitHealth(t, b, 200, 15*time.Second)
	proxy := httptest.NewServer(&healthProxy{backends: []string{a, b}})
	t.Cleanup(proxy.Close)

	token := devToken(t, a, 9)
	var clients []*resumingClient
	for i := 0; i < 20; i++ {
		clients = append(clients, startResumingClient(t, proxy.URL, token, 77))
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var open int64
		for _, c := range clients {
			open += c.opens.Load()
		}
		if open == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 clients connected", open)
		}
		time.Sleep(20 * time.Millisecond)
	}

	var accepted []string
	publish := func(n int) {
		for i := 0; i < n; i++ {
			req, _ := http.NewRequest(http.MethodPost, b+"/api/v1/notifications/publish",
				strings.NewReader(fmt.Sprintf(`{"roomId":77,"eventType":"comment.created","data":{"n":%d}}`, len(accepted))))
			req.Header.Set("X-Internal-Key", "local_dev_internal_key")
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("publish: %v %v", err, resp)
			}
			var env struct{ Result struct{ StreamID string } }
			_ = jsonDecode(resp, &env)
			accepted = append(accepted, env.Result.StreamID)
			time.Sleep(10 * time.Millisecond)
		}
	}
	publish(50)
	if err := cmdA.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmdA.Wait() }()
	publish(300) // about 4 s: the instance's streams end, spread, while events flow
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("instance A did not exit within 20 s of SIGTERM\n%s", logsA)
	}
	publish(50)
	last := accepted[len(accepted)-1]
	deadline = time.Now().Add(20 * time.Second)
	for i, c := range clients {
		for {
			ids := c.got()
			if len(ids) > 0 && ids[len(ids)-1] == last {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("client %d has %d of %d events", i, len(ids), len(accepted))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	moved := 0
	for i, c := range clients {
		close(c.stop)
		<-c.done
		if got := c.got(); strings.Join(got, " ") != strings.Join(accepted, " ") {
			t.Fatalf("client %d got %d events, %d accepted: not every one exactly once in order", i, len(got), len(accepted))
		}
		if c.opens.Load() > 1 {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no client reconnected: instance A served none of them")
	}
}

func jsonDecode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
