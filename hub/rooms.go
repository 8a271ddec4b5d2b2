package hub

import (
	"context"
	"sync"
	"sync/atomic"
)

// rooms are the rooms with at least one local subscriber. Fan-out looks up one
// room per event, so its cost grows with that room's subscribers only.
type rooms struct {
	mu    sync.RWMutex
	m     map[int64]*room
	conns atomic.Int64
}

// room fans live events out to its local subscribers, in stream order. It keeps
// the last event it delivered so that it can repair itself from history: after
// the listener reconnects, or when a live seq jumps. While it repairs, live
// events wait in pending so that nothing overtakes the replay.
type room struct {
	id int64

	mu        sync.Mutex
	subs      map[*Subscriber]struct{}
	known     bool // lastID/lastSeq hold the room's position (history tail read at creation)
	lastID    StreamID
	lastSeq   int64
	repairing bool
	pending   []*Event
	overflow  bool // pending overflowed: re-read history before going live
	closed    bool
}

// pendingMax bounds what a repairing room holds in memory; beyond it the room
// re-reads history instead, where those events are too.
const pendingMax = 4096

// Subscriber is one stream's subscription to a room. The room never blocks on
// it: when its buffer is full the subscriber is marked lagged.
type Subscriber struct {
	room   *room
	User   int64
	ConnID string

	ch     chan *Event
	lagged atomic.Bool
	lagCh  chan struct{} // a token when lagged becomes true
	evict  chan struct{} // closed when the stream must end (evicted)
	once   sync.Once
}

// Events delivers the room's live events.
func (s *Subscriber) Events() <-chan *Event { return s.ch }

// Lagged signals that the subscriber's buffer overflowed and events were dropped.
func (s *Subscriber) Lagged() <-chan struct{} { return s.lagCh }

// Evicted is closed when this stream has been evicted (per-user connection cap).
func (s *Subscriber) Evicted() <-chan struct{} { return s.evict }

func (s *Subscriber) send(ev *Event) bool {
	select {
	case s.ch <- ev:
		return true
	default:
		if !s.lagged.Swap(true) {
			select {
			case s.lagCh <- struct{}{}:
			default:
			}
		}
		return false
	}
}

// clearLag forgets an overflow and drops what is buffered; the caller re-reads
// history from its last sent id, which holds everything dropped.
func (s *Subscriber) clearLag() {
	s.lagged.Store(false)
	select {
	case <-s.lagCh:
	default:
	}
	for {
		select {
		case <-s.ch:
		default:
			return
		}
	}
}

func (s *Subscriber) evicted() { s.once.Do(func() { close(s.evict) }) }

// subscribe registers a subscriber in room id, creating the room (and reading
// its history tail in the background) if it is the first.
func (h *Hub) subscribe(id int64, user int64, connID string) *Subscriber {
	s := &Subscriber{
		User:   user,
		ConnID: connID,
		ch:     make(chan *Event, h.cfg.ChannelCapacity),
		lagCh:  make(chan struct{}, 1),
		evict:  make(chan struct{}),
	}
	h.rooms.mu.Lock()
	r := h.rooms.m[id]
	created := r == nil
	if created {
		r = &room{id: id, subs: map[*Subscriber]struct{}{}, repairing: true}
		h.rooms.m[id] = r
	}
	r.mu.Lock()
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	s.room = r
	h.rooms.mu.Unlock()
	h.rooms.conns.Add(1)
	if created {
		h.goOwned(func(ctx context.Context) { h.repairRoom(ctx, r) })
	}
	return s
}

// unsubscribe removes s; the last one out frees the room.
func (h *Hub) unsubscribe(s *Subscriber) {
	r := s.room
	h.rooms.mu.Lock()
	r.mu.Lock()
	if _, ok := r.subs[s]; ok {
		delete(r.subs, s)
		h.rooms.conns.Add(-1)
	}
	if len(r.subs) == 0 && !r.closed {
		r.closed = true
		r.pending = nil
		delete(h.rooms.m, r.id)
	}
	r.mu.Unlock()
	h.rooms.mu.Unlock()
}

// counts returns the number of local streams and rooms.
func (h *Hub) counts() (conns, rooms int64) {
	h.rooms.mu.RLock()
	rooms = int64(len(h.rooms.m))
	h.rooms.mu.RUnlock()
	return h.rooms.conns.Load(), rooms
}

// room returns the local room id, or nil.
func (h *Hub) room(id int64) *room {
	h.rooms.mu.RLock()
	r := h.rooms.m[id]
	h.rooms.mu.RUnlock()
	return r
}

// deliverLive hands one live event from the listener to its local room.
func (h *Hub) deliverLive(ev *Event) {
	r := h.room(ev.Room)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if r.repairing {
		r.queue(ev)
		return
	}
	if h.applyLocked(r, ev) {
		r.repairing = true
		r.pending = append(r.pending[:0], ev)
		h.goOwned(func(ctx context.Context) { h.repairRoom(ctx, r) })
	}
}

func (r *room) queue(ev *Event) {
	if r.overflow {
		return
	}
	if len(r.pending) >= pendingMax {
		r.overflow, r.pending = true, nil
		return
	}
	r.pending = append(r.pending, ev)
}

// applyLocked delivers ev unless it is a duplicate. It reports true, delivering
// nothing, when ev's seq jumps past the next one: the room must repair first.
func (h *Hub) applyLocked(r *room, ev *Event) (needRepair bool) {
	if !ev.HasID() {
		h.fanoutLocked(r, ev)
		return false
	}
	if !r.lastID.Less(ev.ID) {
		return false // already delivered (replay overlap)
	}
	if r.lastSeq > 0 && ev.Seq > r.lastSeq+1 {
		return true
	}
	if r.lastSeq > 0 && ev.Seq <= r.lastSeq {
		// A newer id with a lower seq: Redis lost its data and numbering starts
		// again (a new epoch). What the old epoch held after lastID is unknowable.
		h.fanoutLocked(r, newSystemEvent(GapEventType, gapInfo{Requested: r.lastID.String(), Oldest: ev.ID.String()}))
	}
	h.fanoutLocked(r, ev)
	r.lastID, r.lastSeq = ev.ID, ev.Seq
	return false
}

// gapInfo is the data of system.gap.
type gapInfo struct {
	Requested string `json:"requested"`
	Oldest    string `json:"oldest"`
}

func (h *Hub) fanoutLocked(r *room, ev *Event) {
	n := 0
	for s := range r.subs {
		if s.send(ev) {
			n++
		} else {
			h.metrics.Lagged.Inc()
		}
	}
	h.metrics.Delivered.Add(n)
}

// repairAll makes every local room catch up from history: the listener has
// (re)subscribed and may have missed messages while it was away.
func (h *Hub) repairAll() {
	h.rooms.mu.RLock()
	defer h.rooms.mu.RUnlock()
	for _, r := range h.rooms.m {
		r.mu.Lock()
		if !r.repairing && !r.closed {
			r.repairing = true
			r.pending = r.pending[:0]
			h.goOwned(func(ctx context.Context) { h.repairRoom(ctx, r) })
		}
		r.mu.Unlock()
	}
}

// repairRoom brings r up to date from history, then releases what waited in
// pending and returns the room to live delivery. A failing read is retried
// with backoff, never skipped; it stops when the room closes or the hub does.
func (h *Hub) repairRoom(ctx context.Context, r *room) {
	bo := newBackoff()
	wait := func() bool { return bo.wait(ctx) }
	for {
		r.mu.Lock()
		closed, known, from, fromSeq := r.closed, r.known, r.lastID, r.lastSeq
		r.mu.Unlock()
		if closed || ctx.Err() != nil {
			return
		}
		if !known {
			tail, err := h.tail(ctx, r.id)
			if err != nil {
				h.log.Warn("reading room tail", "room", r.id, "err", err)
				if !wait() {
					return
				}
				continue
			}
			r.mu.Lock()
			r.known, r.lastID, r.lastSeq = true, tail.ID, tail.Seq
			r.mu.Unlock()
			continue
		}
		page, err := h.readAfter(ctx, r.id, from, historyPage)
		if err != nil {
			h.log.Warn("replaying room history", "room", r.id, "err", err)
			if !wait() {
				return
			}
			continue
		}
		bo.reset()
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		if len(page) > 0 && fromSeq > 0 && page[0].Seq != fromSeq+1 && r.lastID == from {
			// History no longer holds what came right after the last delivered
			// event (trimmed, or Redis lost it): announce it.
			h.fanoutLocked(r, newSystemEvent(GapEventType, gapInfo{Requested: from.String(), Oldest: page[0].ID.String()}))
		}
		for _, ev := range page {
			if r.lastID.Less(ev.ID) {
				h.fanoutLocked(r, ev)
				r.lastID, r.lastSeq = ev.ID, ev.Seq
			}
		}
		if len(page) == historyPage {
			r.mu.Unlock()
			continue
		}
		if r.overflow {
			r.overflow, r.pending = false, nil
			r.mu.Unlock()
			continue
		}
		pending := r.pending
		r.pending = nil
		again := false
		for i, ev := range pending {
			if h.applyLocked(r, ev) {
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
			return
		}
	}
}
