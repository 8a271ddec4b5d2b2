package push

import (
	"sync"
	"time"
)

// Bounds of what pushes may hold at once, and the breaker's numbers.
const (
	// MaxInFlight bounds one instance's pushes in flight to one platform's
	// services. Each holds at most a 4 KB message out and MaxAnswerHeader
	// + MaxAnswerBody in, so the bytes of every push in flight are bounded
	// too (~2 MiB a platform).
	MaxInFlight = 128
	// MaxPerOrigin bounds the pushes in flight to one push service origin:
	// a slow one never holds more than half of an instance's 64 hand-off
	// jobs, nor every push slot.
	MaxPerOrigin = 32
	// busyWait is when a push that found its origin's slots full is tried
	// again.
	busyWait = time.Second
	// breakAfter failures in a row (no answer, an answer over the bounds;
	// 429 and 5xx once a person) pause an origin for pauseFor, doubling to
	// maxPause while the first push after a pause fails too.
	breakAfter = 5
	pauseFor   = 30 * time.Second
	maxPause   = 5 * time.Minute
	// maxOrigins bounds the origins remembered: past it, those idle and
	// not paused are forgotten.
	maxOrigins = 4096
)

// Gate holds the bounds of one instance's pushes to one platform's
// services: slots in all, slots per push service origin, and a breaker per
// origin.
type Gate struct {
	now       func() time.Time
	all       chan struct{}
	perOrigin int

	mu      sync.Mutex
	origins map[string]*originState
}

type originState struct {
	inFlight    int
	failures    int             // failures in a row
	failedFor   map[string]bool // whose answered failures counted in the row: one user's count once
	pausedUntil time.Time       // no push before this
	pauses      int             // pauses in a row: each twice as long
}

// NewGate is a Gate of all slots, perOrigin of them per origin, on the
// clock now.
func NewGate(all, perOrigin int, now func() time.Time) *Gate {
	return &Gate{now: now, all: make(chan struct{}, all), perOrigin: perOrigin, origins: map[string]*originState{}}
}

// Pass is a push's place in a Gate, given back by Leave.
type Pass struct {
	origin string
	pooled bool // it holds one of the instance's slots
}

// Enter takes a slot for a push to origin. When the origin is paused, its
// slots are full, or the instance's are (and share is false), it takes none
// and says when to try again (wait): the push is not an attempt, and it
// never waits here. share is a hand-off's own place: taken even when the
// instance's slots are all held (by pushes to services that hang), so that
// every hand-off can send one push; the hand-offs in flight bound those.
func (g *Gate) Enter(origin string, share bool) (p Pass, wait time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	o := g.origins[origin]
	if o == nil {
		if len(g.origins) >= maxOrigins {
			g.forgetIdle(now)
		}
		o = &originState{}
		g.origins[origin] = o
	}
	switch {
	case now.Before(o.pausedUntil):
		return Pass{}, o.pausedUntil
	case o.inFlight >= g.perOrigin:
		return Pass{}, now.Add(busyWait)
	}
	p = Pass{origin: origin}
	select {
	case g.all <- struct{}{}:
		p.pooled = true
	default:
		if !share {
			g.forgetIfIdle(origin, o, now)
			return Pass{}, now.Add(busyWait)
		}
	}
	o.inFlight++
	return p, time.Time{}
}

// Leave gives back a push's slots and counts how it went: unanswered (no
// answer in time, or one over the bounds) always counts against the
// origin's breaker; refused (429, 5xx: an answer about one subscription)
// counts once for each of who in a row of failures, so one person's
// subscriptions never pause a service for everyone; neither is a success.
func (g *Gate) Leave(p Pass, unanswered, refused bool, who string) {
	if p.pooled {
		<-g.all
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.origins[p.origin]
	if o == nil {
		return
	}
	o.inFlight--
	now := g.now()
	switch {
	case !unanswered && !refused:
		o.failures, o.pauses, o.failedFor = 0, 0, nil
	case now.Before(o.pausedUntil):
		// a push that was under way when the origin was paused
	case refused && !unanswered && o.failedFor[who]:
		// this one's subscriptions counted already
	default:
		if refused && !unanswered {
			if o.failedFor == nil {
				o.failedFor = map[string]bool{}
			}
			o.failedFor[who] = true // at most breakAfter: the row ends in a pause or a success
		}
		o.failures++
		if o.failures >= breakAfter {
			o.pausedUntil = now.Add(min(maxPause, pauseFor<<min(o.pauses, 10)))
			o.pauses++
			o.failures, o.failedFor = breakAfter-1, nil // after the pause, one more failure pauses it again
		}
	}
	g.forgetIfIdle(p.origin, o, now)
}

// forgetIfIdle drops o when it has nothing to remember. Called with g.mu
// held.
func (g *Gate) forgetIfIdle(origin string, o *originState, now time.Time) {
	if o.inFlight == 0 && o.failures == 0 && !now.Before(o.pausedUntil) {
		delete(g.origins, origin)
	}
}

// forgetIdle drops origins with nothing in flight and no pause running.
// Called with g.mu held.
func (g *Gate) forgetIdle(now time.Time) {
	for k, o := range g.origins {
		if o.inFlight == 0 && !now.Before(o.pausedUntil) {
			delete(g.origins, k)
		}
	}
}
