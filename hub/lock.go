package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/rueidis"

	"roomhub/lua"
)

var lockAcquireScript = NewScript(lua.LockAcquire)

// LockReleaseScript gives a lock (or an ingest lease) back, only where the
// caller still owns it: KEYS[1] the lock, ARGV[1] the owner.
var LockReleaseScript = NewScript(lua.LockRelease)

// Lock is a Redis lock (lock:<name>) with an owner: only the holder that took it
// can release it, and it expires by itself after its TTL if the holder dies.
// A Lock is one holder; it is not safe for concurrent use.
type Lock struct {
	rdb     rueidis.Client
	key     string
	owner   string
	ttl     time.Duration
	metrics *Metrics
}

// NewLock returns a holder for the lock of that name. Every Lock has its own owner id.
func NewLock(rdb rueidis.Client, name string, ttl time.Duration, m *Metrics) *Lock {
	return &Lock{rdb: rdb, key: LockKey(name), owner: newID(), ttl: ttl, metrics: m}
}

// Acquire takes the lock if it is free. It reports false when another owner holds it.
func (l *Lock) Acquire(ctx context.Context) (bool, error) {
	start := time.Now()
	secs := int64(l.ttl / time.Second)
	if secs < 1 {
		secs = 1
	}
	n, err := lockAcquireScript.Exec(ctx, l.rdb, []string{l.key},
		[]string{l.owner, itoa(secs)}).AsInt64()
	l.metrics.observeRedis(start)
	l.metrics.countLock(n == 1, err)
	return n == 1, err
}

// Release frees the lock if this holder still owns it, and reports whether it did.
func (l *Lock) Release(ctx context.Context) (bool, error) {
	start := time.Now()
	n, err := LockReleaseScript.Exec(ctx, l.rdb, []string{l.key}, []string{l.owner}).AsInt64()
	l.metrics.observeRedis(start)
	return n == 1, err
}

// EveryUnderLock runs work every interval until ctx ends, on one instance at
// a time (lock:<name>). work may ask for a pause before its next turn (a
// backoff); its errors are logged.
func (h *Hub) EveryUnderLock(ctx context.Context, name string, interval time.Duration, work func(context.Context) (time.Duration, error)) {
	lock := NewLock(h.rdb, name, h.cfg.LockTTL, h.metrics)
	t := time.NewTicker(interval)
	defer t.Stop()
	var next time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Before(next) {
				continue
			}
		}
		if ok, err := lock.Acquire(ctx); err != nil || !ok {
			continue
		}
		pause, err := work(ctx)
		if err != nil && ctx.Err() == nil {
			h.log.Warn("background work failed", "work", name, "err", err)
		}
		next = time.Now().Add(pause)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
		_, _ = lock.Release(rctx)
		cancel()
	}
}

// newID returns 16 random bytes in hex: owner and connection ids.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
