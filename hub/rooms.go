package hub

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
)

// rooms are the rooms with at least one local subscriber. Fan-out looks up one
// room per event, so its cost grows with that room's subscribers only.
type rooms struct {
	mu     sync.RWMutex
	m      map[int64]*room
	byConn map[string]*Subscriber // for evictions
	conns  atomic.Int64
}

// room fans live events out to its local subscribers, in stream order. It keeps
// the last event it delivered so that it can repair itself from history: after
// the listener reconnects, or when a live seq jumps. While it repairs, live
// events wait in pending so that nothing overtakes the replay.
type room struct {
	id int64

	mu        sync.Mutex
	subs      map[*Subscriber]struct{}
	known     bool          // lastID/lastSeq hold the room's position (history tail read at creation)
	ready     chan struct{} // closed once known
	lastID    StreamID
	lastSeq   int64
	repairing bool
	again     bool // a repair was requested while one ran: make one more pass
	pending   []*Event
	overflow  bool // pending overflowed: re-read history before going live
	closed    bool
	cancel    context.CancelFunc // ends the room's own subscription (cluster)
	online    int64              // count of the last presence.update delivered
}

// pendingMax bounds what a repairing room holds in memory; beyond it the room
// re-reads history instead, where those events are too.
const pendingMax = 4096

// Subscriber is one stream's subscription to a room. The room never blocks on
// it. When its buffer overflows on a live event the subscriber is lagged (the
// client cannot keep up); when it overflows while the room replays history it
// is behind, and the stream re-reads history itself.
type Subscriber struct {
	room   *room
	User   int64
	ConnID string

	ch       chan *Event
	lagged   atomic.Bool
	behind   atomic.Bool
	lagCh    chan struct{} // a token when lagged becomes true
	behindCh chan struct{} // a token when behind becomes true
	evict    chan struct{} // closed when the stream must end (evicted)
	once     sync.Once

	mu     sync.Mutex
	missed StreamID // first id not handed over since the last clearLag
}

// Events delivers the room's live events.
func (s *Subscriber) Events() <-chan *Event { return s.ch }

// Lagged signals that live events overflowed the buffer: the client is too slow.
func (s *Subscriber) Lagged() <-chan struct{} { return s.lagCh }

// Behind signals that a history replay overflowed the buffer: catch up from history.
func (s *Subscriber) Behind() <-chan struct{} { return s.behindCh }

// Evicted is closed when this stream has been evicted (per-user connection cap).
func (s *Subscriber) Evicted() <-chan struct{} { return s.evict }

// send hands ev over without blocking. An event with an id that finds the
// buffer full is recorded as missed; history holds it, so a subscriber that is
// behind gets no more of them until it has caught up.
func (s *Subscriber) send(ev *Event, replay bool) bool {
	if s.behind.Load() && ev.HasID() {
		return true // it will read this from history
	}
	select {
	case s.ch <- ev:
		return true
	default:
	}
	if ev.HasID() {
		s.mu.Lock()
		if s.missed.IsZero() {
			s.missed = ev.ID
		}
		s.mu.Unlock()
	}
	flag, ch := &s.lagged, s.lagCh
	if replay {
		flag, ch = &s.behind, s.behindCh
	}
	if !flag.Swap(true) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return false
}

// clearLag forgets overflows and drops what is buffered, before the stream
// re-reads history from its last sent id, which holds everything dropped. It
// returns the oldest id dropped or missed, for a stream that has sent nothing
// yet and so has no id to re-read from.
func (s *Subscriber) clearLag() StreamID {
	s.lagged.Store(false)
	s.behind.Store(false)
	for _, ch := range []chan struct{}{s.lagCh, s.behindCh} {
		select {
		case <-ch:
		default:
		}
	}
	s.mu.Lock()
	first := s.missed
	s.missed = StreamID{}
	s.mu.Unlock()
	for {
		select {
		case ev := <-s.ch:
			if ev.HasID() && (first.IsZero() || ev.ID.Less(first)) {
				first = ev.ID
			}
		default:
			return first
		}
	}
}

// IsLagged reports whether live events overflowed the buffer: outside a
// catch-up, that means the client cannot keep up.
func (s *Subscriber) IsLagged() bool { return s.lagged.Load() }

// overflowed reports whether events were dropped since the last clearLag.
func (s *Subscriber) overflowed() bool { return s.lagged.Load() || s.behind.Load() }

// evicted ends the stream with system.evicted; it reports whether this call did.
func (s *Subscriber) evicted() bool {
	done := false
	s.once.Do(func() { close(s.evict); done = true })
	return done
}

// subscribe registers a subscriber in room id, creating the room (and reading
// its history tail in the background) if it is the first.
func (h *Hub) subscribe(id int64, user int64, connID string) *Subscriber {
	s := &Subscriber{
		User:     user,
		ConnID:   connID,
		ch:       make(chan *Event, h.cfg.ChannelCapacity),
		lagCh:    make(chan struct{}, 1),
		behindCh: make(chan struct{}, 1),
		evict:    make(chan struct{}),
	}
	h.rooms.mu.Lock()
	r := h.rooms.m[id]
	created := r == nil
	var subCtx context.Context // the room's own subscription (cluster), ended by its close
	if created {
		r = &room{id: id, subs: map[*Subscriber]struct{}{}, repairing: true, ready: make(chan struct{})}
		if h.sharded {
			subCtx, r.cancel = context.WithCancel(h.ctx)
		}
		h.rooms.m[id] = r
	}
	r.mu.Lock()
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	s.room = r
	h.rooms.byConn[connID] = s
	h.rooms.mu.Unlock()
	h.rooms.conns.Add(1)
	if created {
		h.goOwned(func(ctx context.Context) { h.repairRoom(ctx, r) })
		if subCtx != nil {
			h.goOwned(func(context.Context) { h.roomSubscription(subCtx, r) })
		}
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
		delete(h.rooms.byConn, s.ConnID)
		h.rooms.conns.Add(-1)
	}
	if len(r.subs) == 0 && !r.closed {
		r.closed = true
		r.pending = nil
		delete(h.rooms.m, r.id)
		if r.cancel != nil {
			r.cancel()
		}
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

// onlineUsers sums the online users last announced in the local rooms.
func (h *Hub) onlineUsers() int64 {
	h.rooms.mu.RLock()
	defer h.rooms.mu.RUnlock()
	var n int64
	for _, r := range h.rooms.m {
		r.mu.Lock()
		n += r.online
		r.mu.Unlock()
	}
	return n
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
	if h.applyLocked(r, ev, false) {
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
func (h *Hub) applyLocked(r *room, ev *Event, replay bool) (needRepair bool) {
	if !ev.HasID() {
		h.fanoutLocked(r, ev, replay)
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
		h.fanoutLocked(r, newGap(r.lastID, ev.ID), replay)
	}
	h.fanoutLocked(r, ev, replay)
	r.lastID, r.lastSeq = ev.ID, ev.Seq
	return false
}

// gapInfo is the data of system.gap: the client's position and the oldest id
// history still holds (null when history is empty).
type gapInfo struct {
	Requested string  `json:"requested"`
	Oldest    *string `json:"oldest"`
}

func newGap(requested StreamID, oldest StreamID) *Event {
	g := gapInfo{Requested: requested.String()}
	if !oldest.IsZero() {
		o := oldest.String()
		g.Oldest = &o
	}
	return newSystemEvent(GapEventType, g)
}

// fanoutLocked hands ev to every subscriber; replay marks events of a history
// replay, whose overflow makes a subscriber behind rather than lagged.
func (h *Hub) fanoutLocked(r *room, ev *Event, replay bool) {
	if ev.Type == PresenceEventType && ev.HasID() {
		var p struct{ Count int64 }
		if json.Unmarshal(ev.Data, &p) == nil {
			r.online = p.Count
		}
	}
	n := 0
	for s := range r.subs {
		if s.send(ev, replay) {
			n++
		} else if !replay {
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
		h.requestRepair(r)
	}
}

// requestRepair makes r re-read history before it delivers live again. A
// repair already running is told to make one more pass: its last read may
// predate what was missed.
func (h *Hub) requestRepair(r *room) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
	case r.repairing:
		r.again = true
	default:
		r.repairing = true
		r.pending = r.pending[:0]
		h.goOwned(func(ctx context.Context) { h.repairRoom(ctx, r) })
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
			close(r.ready)
			// Messages queued since the room was created were published after
			// its first subscriber came: start just before the first of them,
			// even if the tail read already saw it.
			for _, ev := range r.pending {
				if ev.HasID() {
					r.lastID, r.lastSeq = ev.ID.prev(), ev.Seq-1
					break
				}
			}
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
			h.fanoutLocked(r, newGap(from, page[0].ID), true)
		}
		for _, ev := range page {
			if r.lastID.Less(ev.ID) {
				h.fanoutLocked(r, ev, true)
				r.lastID, r.lastSeq = ev.ID, ev.Seq
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
			return
		}
	}
}
