package hub

import (
	"context"
	"fmt"
)

// pendingMax and pendingMaxBytes bound what a repairing topic holds in memory;
// beyond either the topic re-reads history instead, where those events are too.
const (
	pendingMax      = 4096
	pendingMaxBytes = 8 << 20
)

// queue holds a live event back while the topic repairs; past pendingMax events
// or pendingMaxBytes it drops them all and the repair re-reads history, where
// they are too.
func (t *topic) queue(ev *Event) {
	if t.overflow {
		return
	}
	if len(t.pending) == 0 {
		t.pendingBytes = 0
	}
	size := len(ev.Data) + len(ev.frame)
	if len(t.pending) >= pendingMax || t.pendingBytes+size > pendingMaxBytes {
		t.overflow, t.pending = true, nil
		return
	}
	t.pending = append(t.pending, ev)
	t.pendingBytes += size
}

// repairAll makes every local topic catch up from history: the listener has
// (re)subscribed and may have missed messages while it was away.
func (h *Hub) repairAll() {
	h.topics.mu.RLock()
	defer h.topics.mu.RUnlock()
	for _, t := range h.topics.m {
		h.requestRepair(t)
	}
}

// requestRepair makes t re-read history before it delivers live again. A
// repair already running is told to make one more pass: its last read may
// predate what was missed.
func (h *Hub) requestRepair(t *topic) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
	case t.repairing:
		t.again = true
	default:
		t.repairing = true
		t.pending = t.pending[:0]
		h.Go(func(ctx context.Context) { h.repairTopic(ctx, t) })
	}
}

// repairTopic brings t up to date from history, then releases what waited in
// pending and returns the topic to live delivery. A failing read is retried
// with backoff, never skipped; it stops when the topic closes or the hub does.
func (h *Hub) repairTopic(ctx context.Context, t *topic) {
	_ = Retry(ctx, 0, func(ctx context.Context) (bool, error) { return h.repairPass(ctx, t) },
		func(err error) { h.log.Warn("repairing topic from history", "topic", t.id, "err", err) })
}

// repairPass does repairTopic's work until it is done (nil), the topic closes
// (nil) or a read fails. progress: some read went through.
func (h *Hub) repairPass(ctx context.Context, t *topic) (progress bool, err error) {
	for {
		t.mu.Lock()
		closed, known, from := t.closed, t.known(), t.pos
		t.mu.Unlock()
		if closed {
			return progress, nil
		}
		if ctx.Err() != nil {
			return progress, ctx.Err()
		}
		c := h.newCursor(t.id, from, false, 0)
		if !known {
			if err := c.seekTail(ctx); err != nil {
				return progress, fmt.Errorf("reading the tail: %w", err)
			}
			progress = true
			t.place(c.pos)
			continue
		}
		page, err := c.next(ctx, historyPage, historyPageBytes)
		if err != nil {
			return progress, fmt.Errorf("replaying history: %w", err)
		}
		progress = true
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return true, nil
		}
		if page.gap != nil {
			h.fanoutLocked(t, page.gap, true)
		}
		for _, ev := range page.events {
			h.fanoutLocked(t, ev, true)
		}
		t.pos = c.pos
		if page.more {
			t.mu.Unlock()
			continue
		}
		if t.overflow || t.again {
			if t.overflow {
				t.overflow, t.pending = false, nil
			}
			t.again = false
			t.mu.Unlock()
			continue
		}
		done := h.releasePendingLocked(t)
		t.mu.Unlock()
		if done {
			return true, nil
		}
	}
}

// place gives a new topic its first position, from which live events follow:
// the history tail tail, or just before the first live event that waited
// (it was published after the first member came, even if the tail read
// already saw it). Every member that has none takes it.
func (t *topic) place(tail Position) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pos = tail
	for _, ev := range t.pending {
		if ev.HasID() {
			t.pos = justBefore(ev)
			break
		}
	}
	close(t.ready)
	for _, m := range t.subs {
		m.s.place(m, t.pos)
	}
}

// releasePendingLocked delivers the live events that waited during the
// repair and reports whether the topic is live again; false: one of them
// jumped, and the repair goes on from there.
func (h *Hub) releasePendingLocked(t *topic) bool {
	pending := t.pending
	t.pending = nil
	for i, ev := range pending {
		if h.applyLocked(t, ev, true) {
			t.pending = append([]*Event(nil), pending[i:]...)
			return false
		}
	}
	t.repairing = false
	return true
}
