package hub

import (
	"context"
	"fmt"
)

// pendingMax and pendingMaxBytes bound what a repairing room holds in memory;
// beyond either the room re-reads history instead, where those events are too.
const (
	pendingMax      = 4096
	pendingMaxBytes = 8 << 20
)

// queue holds a live event back while the room repairs; past pendingMax events
// or pendingMaxBytes it drops them all and the repair re-reads history, where
// they are too.
func (r *topic) queue(ev *Event) {
	if r.overflow {
		return
	}
	if len(r.pending) == 0 {
		r.pendingBytes = 0
	}
	size := len(ev.Data) + len(ev.frame)
	if len(r.pending) >= pendingMax || r.pendingBytes+size > pendingMaxBytes {
		r.overflow, r.pending = true, nil
		return
	}
	r.pending = append(r.pending, ev)
	r.pendingBytes += size
}

// repairAll makes every local room catch up from history: the listener has
// (re)subscribed and may have missed messages while it was away.
func (h *Hub) repairAll() {
	h.topics.mu.RLock()
	defer h.topics.mu.RUnlock()
	for _, r := range h.topics.m {
		h.requestRepair(r)
	}
}

// requestRepair makes r re-read history before it delivers live again. A
// repair already running is told to make one more pass: its last read may
// predate what was missed.
func (h *Hub) requestRepair(r *topic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
	case r.repairing:
		r.again = true
	default:
		r.repairing = true
		r.pending = r.pending[:0]
		h.Go(func(ctx context.Context) { h.repairRoom(ctx, r) })
	}
}

// repairRoom brings r up to date from history, then releases what waited in
// pending and returns the room to live delivery. A failing read is retried
// with backoff, never skipped; it stops when the room closes or the hub does.
func (h *Hub) repairRoom(ctx context.Context, r *topic) {
	_ = Retry(ctx, 0, func(ctx context.Context) (bool, error) { return h.repairPass(ctx, r) },
		func(err error) { h.log.Warn("repairing topic from history", "topic", r.id, "err", err) })
}

// repairPass does repairRoom's work until it is done (nil), the topic closes
// (nil) or a read fails. progress: some read went through.
func (h *Hub) repairPass(ctx context.Context, r *topic) (progress bool, err error) {
	for {
		r.mu.Lock()
		closed, known, from := r.closed, r.known(), r.pos
		r.mu.Unlock()
		if closed {
			return progress, nil
		}
		if ctx.Err() != nil {
			return progress, ctx.Err()
		}
		if !known {
			tail, err := h.tail(ctx, r.id)
			if err != nil {
				return progress, fmt.Errorf("reading the tail: %w", err)
			}
			progress = true
			r.mu.Lock()
			r.pos = Position{tail.ID, tail.Seq}
			// Messages queued since the room was created were published after
			// its first member came: start just before the first of them,
			// even if the tail read already saw it.
			for _, ev := range r.pending {
				if ev.HasID() {
					r.pos = Position{ev.ID.prev(), ev.Seq - 1}
					break
				}
			}
			close(r.ready)
			for m := range r.subs {
				m.s.place(m, r.pos)
			}
			r.mu.Unlock()
			continue
		}
		page, err := h.readAfter(ctx, r.id, from.ID, historyPage)
		if err != nil {
			return progress, fmt.Errorf("replaying history: %w", err)
		}
		progress = true
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return true, nil
		}
		if len(page) > 0 && from.Seq > 0 && page[0].Seq != from.Seq+1 && r.pos == from {
			// History no longer holds what came right after the last delivered
			// event (trimmed, or Redis lost it): announce it.
			h.fanoutLocked(r, newGap(from.ID, page[0].ID), true)
		}
		for _, ev := range page {
			if r.pos.ID.Less(ev.ID) {
				h.fanoutLocked(r, ev, true)
				r.pos.Advance(ev)
			}
		}
		if len(page) == historyPage {
			r.mu.Unlock()
			continue
		}
		if r.overflow || r.again {
			if r.overflow {
				r.overflow, r.pending = false, nil
			}
			r.again = false
			r.mu.Unlock()
			continue
		}
		pending := r.pending
		r.pending = nil
		again := false
		for i, ev := range pending {
			if h.applyLocked(r, ev, true) {
				r.pending = append([]*Event(nil), pending[i:]...)
				again = true
				break
			}
		}
		if !again {
			r.repairing = false
		}
		r.mu.Unlock()
		if !again {
			return true, nil
		}
	}
}
