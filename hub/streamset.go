package hub

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// streams are the open streams of this instance.
type streams struct {
	mu     sync.RWMutex
	byConn map[uint64]*Stream // by the random part of their connection ids
	// releasing counts ended streams whose release (presence, the cap) has
	// not finished: EndStreams waits for them too.
	releasing atomic.Int64
}

func (ss *streams) add(s *Stream) {
	ss.mu.Lock()
	ss.byConn[s.conn] = s
	ss.mu.Unlock()
}

func (ss *streams) remove(s *Stream) {
	ss.mu.Lock()
	delete(ss.byConn, s.conn)
	ss.mu.Unlock()
}

func (ss *streams) get(conn uint64) *Stream {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.byConn[conn]
}

func (ss *streams) count() int64 {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return int64(len(ss.byConn))
}

// snapshot appends every open stream to out.
func (ss *streams) snapshot(out []*Stream) []*Stream {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	for _, s := range ss.byConn {
		out = append(out, s)
	}
	return out
}

// ctxOf is a context that ends when done is closed.
func ctxOf(done <-chan struct{}) context.Context { return doneCtx(done) }

type doneCtx <-chan struct{}

func (d doneCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (d doneCtx) Done() <-chan struct{}       { return d }
func (d doneCtx) Err() error {
	select {
	case <-d:
		return context.Canceled
	default:
		return nil
	}
}
func (d doneCtx) Value(any) any { return nil }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
