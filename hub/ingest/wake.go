package ingest

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/rueidis"
)

// wakePrefix is what every partition's stream name (PartitionKey) begins
// with, and no other key: the dead lists are ingest:dead:{p}, the
// idempotency keys ingest:<entry id>.
const wakePrefix = "ingest:{"

// waker tells an idle consumer on one Redis that a partition's stream
// changed. A connection of its own asks Redis to name every key under
// wakePrefix that another connection changes (CLIENT TRACKING ON BCAST
// NOLOOP: the consumer reads and finishes through it): Redis sends the key's
// name, never an entry, so an idle hub never takes an entry whole, the way
// a blocking XREADGROUP would. Where Redis refuses (the embedded dev Redis)
// or the connection is lost, the consumer looks again every idlePoll
// instead, and arm tries once more a maxBlock later.
//
// Only the consuming loop calls arm, wait and close; Redis' messages reach
// woke from the client's own goroutine.
type waker struct {
	rdb rueidis.Client
	log *slog.Logger
	ch  chan struct{} // holds one wake-up at most

	conn    rueidis.DedicatedClient // nil while not listening
	release func()
	lost    <-chan error // closed when Redis' messages stop
	retryAt time.Time    // no new try before this
	warned  bool         // the first refusal is logged, not every try
}

func newWaker(rdb rueidis.Client, log *slog.Logger) *waker {
	return &waker{rdb: rdb, log: log, ch: make(chan struct{}, 1)}
}

// woke is Redis' message: keys changed (nil: every key, as after a
// reconnection or a FLUSHALL).
func (w *waker) woke([]rueidis.RedisMessage) {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// arm reports whether Redis will say when an entry comes, asking it again
// when the connection was lost (at most once a maxBlock). A new connection
// starts woken: what came while none listened is read at once.
func (w *waker) arm(ctx context.Context) bool {
	if w.via() != nil {
		return true
	}
	if time.Now().Before(w.retryAt) {
		return false
	}
	w.retryAt = time.Now().Add(maxBlock)
	conn, release := w.rdb.Dedicate()
	lost := conn.SetOnInvalidations(w.woke)
	err := conn.Do(ctx, conn.B().ClientTracking().On().Prefix().Prefix(wakePrefix).Bcast().Noloop().Build()).Error()
	if err != nil {
		release()
		if !w.warned && ctx.Err() == nil {
			w.warned = true
			w.log.Info("ingest: Redis does not say when an entry comes (CLIENT TRACKING); an idle consumer looks again every "+idlePoll.String(), "err", err)
		}
		return false
	}
	w.conn, w.release, w.lost, w.warned = conn, release, lost, false
	w.woke(nil)
	return true
}

// via is the connection the consumer reads and finishes through: the
// waker's while it listens, else nil (the shared client's).
func (w *waker) via() rueidis.DedicatedClient {
	if w.conn != nil {
		select {
		case <-w.lost:
			w.close()
		default:
		}
	}
	return w.conn
}

// wait returns when a stream changed since the last drain, after d, or when
// ctx ends.
func (w *waker) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ch:
	case <-w.lost:
	case <-t.C:
	case <-ctx.Done():
	}
}

// drain forgets the wake-ups so far: called before a read, which sees
// every entry they were about.
func (w *waker) drain() {
	select {
	case <-w.ch:
	default:
	}
}

// close gives the connection back (rueidis turns tracking off on it).
func (w *waker) close() {
	if w.conn != nil {
		w.release()
		w.conn, w.release, w.lost = nil, nil, nil
	}
}
