package push

import (
	"context"
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
	// breakAfter failures in a row (no answer, 429, 5xx, an answer over
	// the bounds) pause an origin for pauseFor, doubling to maxPause while
	// the first push after a pause fails too.
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
	failures    int       // failures in a row
	pausedUntil time.Time // no push before this
	pauses      int       // pauses in a row: each twice as long
}

// NewGate is a Gate of all slots, perOrigin of them per origin, on the
// clock now.
func NewGate(all, perOrigin int, now func() time.Time) *Gate {
	return &Gate{now: now, all: make(chan struct{}, all), perOrigin: perOrigin, origins: map[string]*originState{}}
}

// Enter takes a slot for a push to origin. When the origin is paused or
// its slots are full it takes none and says when to try again (wait); a
// push that took one calls Leave with whether it failed.
func (g *Gate) Enter(ctx context.Context, origin string) (wait time.Time, err error) {
	g.mu.Lock()
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
		g.mu.Unlock()
		return o.pausedUntil, nil
	case o.inFlight >= g.perOrigin:
		g.mu.Unlock()
		return now.Add(busyWait), nil
	}
	o.inFlight++
	g.mu.Unlock()
	select {
	case g.all <- struct{}{}:
		return time.Time{}, nil
	case <-ctx.Done():
		g.mu.Lock()
		o.inFlight--
		g.forgetIfIdle(origin, o, g.now())
		g.mu.Unlock()
		return time.Time{}, ctx.Err()
	}
}

// Leave gives back a push's slots and counts how it went.
func (g *Gate) Leave(origin string, failed bool) {
	<-g.all
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.origins[origin]
	if o == nil {
		return
	}
	o.inFlight--
	now := g.now()
	switch {
	case !failed:
		o.failures, o.pauses = 0, 0
	case now.Before(o.pausedUntil):
		// a push that was under way when the origin was paused
	default:
		o.failures++
		if o.failures >= breakAfter {
			o.pausedUntil = now.Add(min(maxPause, pauseFor<<min(o.pauses, 10)))
			o.pauses++
			o.failures = breakAfter - 1 // after the pause, one more failure pauses it again
		}
	}
	g.forgetIfIdle(origin, o, now)
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
