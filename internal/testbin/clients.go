package testbin

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is the tiny load balancer of the deploy and chaos tests: each request
// goes to the next backend, in turn, whose /health answers 200. SSE frames
// pass at once.
type Proxy struct {
	URL string

	mu       sync.Mutex
	backends []string
	conns    map[net.Conn]bool // client connections, for Drop
	next     atomic.Int64
}

// StartProxy starts a proxy in front of backends; t.Cleanup closes it.
func StartProxy(t testing.TB, backends ...string) *Proxy {
	p := &Proxy{backends: backends, conns: map[net.Conn]bool{}}
	srv := httptest.NewUnstartedServer(p)
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch s {
		case http.StateNew:
			p.conns[c] = true
		case http.StateClosed, http.StateHijacked:
			delete(p.conns, c)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// SetBackends replaces the backends (an instance restarted on a new port).
func (p *Proxy) SetBackends(backends ...string) {
	p.mu.Lock()
	p.backends = backends
	p.mu.Unlock()
}

// Drop cuts every client connection, as a network failure would.
func (p *Proxy) Drop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
		n++
	}
	return n
}

// ServeHTTP forwards r to a healthy backend.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	backends := append([]string(nil), p.backends...)
	p.mu.Unlock()
	for range backends {
		b := backends[int(p.next.Add(1))%len(backends)]
		if HealthStatus(b) != 200 {
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

// Frame is one event a Client received: its type, id and data.
type Frame struct{ Event, ID, Data string }

// Client reads a room's stream and reconnects with Last-Event-ID whenever it
// ends, as a browser's EventSource does. It keeps every event it received.
type Client struct {
	Room  int
	Opens atomic.Int64

	mu     sync.Mutex
	frames []Frame
	stop   chan struct{}
	done   chan struct{}
}

// StartClient reads room's stream at base with token until Stop.
func StartClient(base, token string, room int) *Client {
	c := &Client{Room: room, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run(base, token)
	return c
}

func (c *Client) run(base, token string) {
	defer close(c.done)
	last := ""
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/v1/rooms/%d/stream?token=%s", base, c.Room, token), nil)
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
		c.Opens.Add(1)
		ended := make(chan struct{})
		go func() {
			select {
			case <-c.stop:
			case <-ended:
			}
			resp.Body.Close()
		}()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		var f Frame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				f.Event = line[7:]
			case strings.HasPrefix(line, "id: "):
				f.ID = line[4:]
			case strings.HasPrefix(line, "data: "):
				f.Data = line[6:]
			case line == "":
				if f.Event != "" && f.Event != "presence.update" {
					if f.ID != "" {
						last = f.ID
					}
					c.mu.Lock()
					c.frames = append(c.frames, f)
					c.mu.Unlock()
				}
				f = Frame{}
			}
		}
		close(ended)
		time.Sleep(50 * time.Millisecond) // a browser waits retry:; shorter here
	}
}

// Frames returns what the client received so far.
func (c *Client) Frames() []Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Frame(nil), c.frames...)
}

// IDs returns the ids of the events of type typ received so far.
func (c *Client) IDs(typ string) []string {
	var ids []string
	for _, f := range c.Frames() {
		if f.Event == typ {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

// Stop ends the client and waits for it.
func (c *Client) Stop() {
	close(c.stop)
	<-c.done
}
