package testbin

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
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
