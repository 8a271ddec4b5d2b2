package push

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// Counter is a count every instance moves (a platform's devices), kept in
// a Redis key and known here as last read or moved: a gauge reads it.
type Counter struct {
	rdb *hub.Redis
	key string
	n   atomic.Int64

	mu    sync.Mutex // orders what sets n: a read never undoes a later move
	moves int64      // how many times Add set n
}

// NewCounter is the count at key on core's Redis; once core starts it is
// read again every 15 s (the other instances move it too).
func NewCounter(core *hub.Hub, key string) *Counter {
	c := &Counter{rdb: core.Redis(), key: key}
	core.OnStart(func() { core.Go(c.refresh) })
	return c
}

// Value is the count as last read or moved.
func (c *Counter) Value() float64 { return float64(c.n.Load()) }

// Add moves the count by n.
func (c *Counter) Add(ctx context.Context, n int64) error {
	if n == 0 {
		return nil
	}
	total, err := hub.Call(c.rdb, ctx, c.rdb.B().Incrby().Key(c.key).Increment(n).Build(), rueidis.RedisResult.AsInt64)
	if err == nil {
		c.mu.Lock()
		c.moves++
		c.n.Store(max(total, 0))
		c.mu.Unlock()
	}
	return err
}

// refresh reads the count every 15 s until ctx ends.
func (c *Counter) refresh(ctx context.Context) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		c.mu.Lock()
		moves := c.moves
		c.mu.Unlock()
		n, err := hub.Call(c.rdb, ctx, c.rdb.B().Get().Key(c.key).Build(), rueidis.RedisResult.AsInt64)
		c.mu.Lock()
		// nil: none yet. A move meanwhile is newer than what this read found.
		if (err == nil || errors.Is(err, rueidis.Nil)) && c.moves == moves {
			c.n.Store(max(n, 0))
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
