package hub

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff bounds: 250 ms doubling to 10 s (DESIGN.md: every second away is a
// second of events to replay, so retry sooner than the seed's 3 s to 60 s).
const (
	backoffMin = 250 * time.Millisecond
	backoffMax = 10 * time.Second
)

// backoff is exponential backoff with full jitter.
type backoff struct{ next time.Duration }

func newBackoff() *backoff { return &backoff{next: backoffMin} }

func (b *backoff) reset() { b.next = backoffMin }

// wait sleeps for the next interval and reports false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	d := b.next/2 + rand.N(b.next/2+1)
	b.next = min(b.next*2, backoffMax)
	return sleepCtx(ctx, d)
}

// sleepCtx sleeps for d and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
