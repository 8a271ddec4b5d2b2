package hub

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff bounds of the hub's retries: 250 ms doubling to 10 s (DESIGN.md:
// every second away is a second of events to replay, so retry sooner than
// the seed's 3 s to 60 s).
const (
	backoffMin = 250 * time.Millisecond
	backoffMax = 10 * time.Second
)

// Backoff spaces attempts: steps from Min doubling to Max, each wait drawn
// with equal jitter (half the step plus a random part of the other half), so
// that instances that lost Redis together do not return in one millisecond
// and none retries sooner than half a step. The zero Backoff uses 250 ms
// and 10 s. Not safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	step     time.Duration
}

// Next returns the next wait and doubles the step, up to Max.
func (b *Backoff) Next() time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = backoffMin
	}
	if hi < lo {
		hi = max(backoffMax, lo)
	}
	if b.step < lo {
		b.step = lo
	}
	d := b.step/2 + rand.N(b.step/2+1)
	b.step = min(2*b.step, hi)
	return d
}

// Reset starts again from Min: the last attempt got somewhere.
func (b *Backoff) Reset() { b.step = 0 }

// Wait sleeps for Next and reports false if ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool { return Sleep(ctx, b.Next()) }

// Retry calls attempt until it returns a nil error, with a Backoff's wait
// between failures, and returns nil then. It gives up and returns the last
// error when ctx ends or, with limit > 0, when limit has passed since it
// began. An attempt that made progress before failing (a connection that was
// up, a page that was read) says so, and the backoff starts again from its
// shortest wait. onFail, when not nil, sees each failure before the wait.
func Retry(ctx context.Context, limit time.Duration, attempt func(context.Context) (progress bool, err error), onFail func(error)) error {
	var b Backoff
	var deadline time.Time
	if limit > 0 {
		deadline = time.Now().Add(limit)
	}
	for {
		progress, err := attempt(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || (!deadline.IsZero() && time.Now().After(deadline)) {
			return err
		}
		if progress {
			b.Reset()
		}
		if onFail != nil {
			onFail(err)
		}
		if !b.Wait(ctx) {
			return err
		}
	}
}

// Sleep sleeps for d (none when d <= 0) and reports false if ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
