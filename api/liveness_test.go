package api_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// freezeProxy forwards TCP to Redis; freezeSubscribers makes the connections
// that subscribed go silent both ways without closing: a half-open TCP
// connection, as a dead NAT entry or a demoted node's leftovers leave behind.
// While refuse is set, new connections are closed at once (Redis away);
// lag and upRate make the link slow.
type freezeProxy struct {
	l      net.Listener
	mu     sync.Mutex
	conns  []*proxyConn
	refuse atomic.Bool // new connections are closed at once
	// lag delays what a connection that subscribed sends Redis (a slow link
	// to a listener), in ns.
	lag atomic.Int64
	// upRate, when set before connections open, bounds what each sends
	// Redis, in bytes a second (a link that takes its time).
	upRate atomic.Int64
}

type proxyConn struct {
	subscriber atomic.Bool
	frozen     atomic.Bool
	severed    atomic.Bool // Redis' side closed, the client's kept open and silent
	redis      net.Conn
}

func startFreezeProxy(t *testing.T, target string) *freezeProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{l: l}
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
			if p.refuse.Load() {
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
			if bps := p.upRate.Load(); bps > 0 {
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
							time.Sleep(time.Duration(p.lag.Load())) // the link's latency, not a wait for a signal
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

func (p *freezeProxy) Addr() string { return p.l.Addr().String() }

// severSubscribers closes Redis' side of every connection that has
// subscribed, and keeps the client's side open and silent: Redis forgets the
// subscriber, the hub's connection looks alive (a listener left on a node
// that no longer takes the writes).
func (p *freezeProxy) severSubscribers() int {
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

// freezeSubscribers silences every connection that has subscribed so far.
func (p *freezeProxy) freezeSubscribers() int {
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

// A listener whose connection went silently dead hears nothing; its probe
// finds out, it reconnects and replays, and the stream gets every event.
func TestListener_SilentlyDeadConnectionIsProbedAndHealed(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	proxy := startFreezeProxy(t, rs.Addr())
	th := testhub.Start(t, proxy.Addr(), func(c *testhub.Configs) { c.ListenerIdle = 300 * time.Millisecond })
	c := th.OpenStream(t, 130, 1, "")
	first := th.Publish(t, 130, "comment.created", map[string]any{"n": 0})
	if f := c.Next(t, testhub.Wait); f.ID != first.StreamID {
		t.Fatalf("got %+v", f)
	}
	if n := proxy.freezeSubscribers(); n == 0 {
		t.Fatal("no subscribed connection to freeze")
	}
	var want []string
	for i := 1; i <= 5; i++ {
		want = append(want, th.Publish(t, 130, "comment.created", map[string]any{"n": i}).StreamID)
	}
	for _, id := range want {
		if f := c.Next(t, 15*time.Second); f.ID != id {
			t.Fatalf("got %+v, want %s", f, id)
		}
	}
	if n := th.Hub.Metrics().ProbeFailures.Get(); n == 0 {
		t.Fatal("pubsub_probe_failures_total = 0: something else healed the listener")
	}
	th.WaitHealthy(t)
}
