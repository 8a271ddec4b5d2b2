package testhub

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// FreezeProxy forwards TCP to Redis; FreezeSubscribers makes the connections
// that subscribed go silent both ways without closing: a half-open TCP
// connection, as a dead NAT entry or a demoted node's leftovers leave behind.
// While refuse is set, new connections are closed at once (Redis away);
// lag and upRate make the link slow.
type FreezeProxy struct {
	l      net.Listener
	mu     sync.Mutex
	conns  []*proxyConn
	Refuse atomic.Bool // new connections are closed at once
	// lag delays what a connection that subscribed sends Redis (a slow link
	// to a listener), in ns.
	Lag atomic.Int64
	// upRate, when set before connections open, bounds what each sends
	// Redis, in bytes a second (a link that takes its time).
	UpRate atomic.Int64
}

type proxyConn struct {
	subscriber atomic.Bool
	frozen     atomic.Bool
	severed    atomic.Bool // Redis' side closed, the client's kept open and silent
	redis      net.Conn
}

// StartFreezeProxy forwards a listener of its own to target until the test
// ends.
func StartFreezeProxy(t *testing.T, target string) *FreezeProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FreezeProxy{l: l}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if p.Refuse.Load() {
				c.Close()
				continue
			}
			r, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			pc := &proxyConn{redis: r}
			var lim *rate.Limiter
			if bps := p.UpRate.Load(); bps > 0 {
				lim = rate.NewLimiter(rate.Limit(bps), 16<<10)
			}
			p.mu.Lock()
			p.conns = append(p.conns, pc)
			p.mu.Unlock()
			pipe := func(dst, src net.Conn, up bool) {
				defer wg.Done()
				defer func() {
					if up || !pc.severed.Load() {
						dst.Close()
					}
				}()
				buf := make([]byte, 16<<10)
				for {
					n, err := src.Read(buf)
					if n > 0 {
						if up && lim != nil {
							_ = lim.WaitN(context.Background(), n)
						}
						// A (P)SUBSCRIBE command, not a script mentioning the word.
						if up && bytes.Contains(bytes.ToUpper(buf[:n]), []byte("SUBSCRIBE\r\n")) {
							pc.subscriber.Store(true)
						}
						if up && pc.subscriber.Load() {
							time.Sleep(time.Duration(p.Lag.Load())) // the link's latency, not a wait for a signal
						}
						if !pc.frozen.Load() {
							if _, err := dst.Write(buf[:n]); err != nil {
								return
							}
						}
					}
					if err != nil {
						return
					}
				}
			}
			wg.Add(2)
			go pipe(r, c, true)
			go pipe(c, r, false)
			t.Cleanup(func() { c.Close(); r.Close() })
		}
	}()
	return p
}

// Addr is where clients connect to reach Redis through the proxy.
func (p *FreezeProxy) Addr() string { return p.l.Addr().String() }

// SeverSubscribers closes Redis' side of every connection that has
// subscribed, and keeps the client's side open and silent: Redis forgets the
// subscriber, the hub's connection looks alive (a listener left on a node
// that no longer takes the writes).
func (p *FreezeProxy) SeverSubscribers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.conns {
		if c.subscriber.Load() && !c.severed.Load() {
			c.severed.Store(true)
			c.frozen.Store(true)
			c.redis.Close()
			n++
		}
	}
	return n
}

// FreezeSubscribers silences every connection that has subscribed so far.
func (p *FreezeProxy) FreezeSubscribers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.conns {
		if c.subscriber.Load() && !c.frozen.Load() {
			c.frozen.Store(true)
			n++
		}
	}
	return n
}
