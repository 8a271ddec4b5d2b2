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
	users  int // topics in m that are users' logs, not rooms (under mu)
}

// room fans live events out to its local subscribers, in stream order. It keeps
// the last event it delivered so that it can repair itself from history: after
// the listener reconnects, or when a live seq jumps. While it repairs, live
// events wait in pending so that nothing overtakes the replay.
type room struct {
	id int64

	mu           sync.Mutex
	subs         map[*Subscriber]struct{}
	ready        chan struct{} // closed once lastID/lastSeq hold the room's position (history tail read at creation)
	lastID       StreamID
	lastSeq      int64
	repairing    bool
	again        bool // a repair was requested while one ran: make one more pass
	pending      []*Event
	pendingBytes int  // what pending holds, counted by queue (an upper bound)
	overflow     bool // pending overflowed: re-read history before going live
	closed       bool
	cancel       context.CancelFunc // ends the room's own subscription (cluster)
	online       int64              // count of the last presence.update delivered
}

// subscribe registers a subscriber in room id, creating the room (and reading
// its history tail in the background) if it is the first.
func (h *Hub) subscribe(id int64, user int64, connID string) *Subscriber {
	s := &Subscriber{
		User:     user,
		ConnID:   connID,
		ch:       make(chan *Event, h.cfg.ChannelCapacity),
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
		if id < 0 {
			h.rooms.users++
		}
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
		if r.id < 0 {
			h.rooms.users--
		}
		if r.cancel != nil {
			r.cancel()
		}
	}
	r.mu.Unlock()
	h.rooms.mu.Unlock()
}

// counts returns the number of local streams and rooms (users' logs apart).
func (h *Hub) counts() (conns, rooms int64) {
	h.rooms.mu.RLock()
	rooms = int64(len(h.rooms.m) - h.rooms.users)
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

// known reports whether the room has its position in history.
func (r *room) known() bool {
	select {
	case <-r.ready:
		return true
	default:
		return false
	}
}

// room returns the local room id, or nil.
func (h *Hub) room(id int64) *room {
	h.rooms.mu.RLock()
	r := h.rooms.m[id]
	h.rooms.mu.RUnlock()
	return r
}

// deliverLive hands one live event from the listener to its local room r.
func (h *Hub) deliverLive(r *room, ev *Event) {
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
// replay, whose drops are not counted as lagged (the room itself was behind).
func (h *Hub) fanoutLocked(r *room, ev *Event, replay bool) {
	if ev.Type == PresenceEventType && ev.HasID() {
		var p struct{ Count int64 }
		if json.Unmarshal(ev.Data, &p) == nil {
			r.online = p.Count
		}
	}
	n := 0
	for s := range r.subs {
		if s.send(ev) {
			n++
		} else if !replay {
			h.metrics.Lagged.Inc()
		}
	}
	h.metrics.Delivered.Add(n)
}
