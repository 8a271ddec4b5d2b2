// Package devredis runs the embedded in-process Redis of dev mode
// (miniredis), with its keys' TTLs running on the wall clock.
package devredis

import (
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// tick is how often TTLs move on: the hub's gates, presence and locks
// expire by TTL, so they must pass, but miniredis' own way (ClockTTL)
// walks every key, sorted, on every command that follows a clock tick,
// which made a fan-out to 600 recipients slower with each recipient until it
// took more than 3 s a pipeline. Ten times a second is precise enough for
// TTLs of a second and more, and costs one walk a tick.
const tick = 100 * time.Millisecond

// Redis is a running miniredis and the goroutine that moves its TTLs on.
type Redis struct {
	*miniredis.Miniredis
	stop chan struct{}
	wg   sync.WaitGroup
}

// Start starts miniredis on a free loopback port.
func Start() (*Redis, error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, err
	}
	r := &Redis{Miniredis: mr, stop: make(chan struct{})}
	r.wg.Add(1)
	go r.run()
	return r, nil
}

func (r *Redis) run() {
	defer r.wg.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			r.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Close stops the TTLs' goroutine, then miniredis.
func (r *Redis) Close() {
	close(r.stop)
	r.wg.Wait()
	r.Miniredis.Close()
}
