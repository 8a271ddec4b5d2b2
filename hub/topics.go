package hub

import (
	"context"
	"encoding/json"
	"sync"
)

// topics are the topics (rooms, users' logs) with at least one local member.
// Fan-out looks up one topic per event, so its cost grows with that topic's
// members only.
type topics struct {
	mu    sync.RWMutex
	m     map[int64]*topic
	users int // topics in m that are users' logs, not rooms (under mu)
}

// topic fans the live events of a room or a user's log out to its local
// members, in stream order. Its Position is the last event it delivered, so
// that it can repair itself from history: after the listener reconnects, or
// when a live seq jumps. While it repairs, live events wait in pending so
// that nothing overtakes the replay.
type topic struct {
	id int64

	mu           sync.Mutex
	subs         map[*member]struct{}
	ready        chan struct{} // closed once pos holds the topic's position (history tail read at creation)
	pos          Position
	repairing    bool
	again        bool // a repair was requested while one ran: make one more pass
	pending      []*Event
	pendingBytes int  // what pending holds, counted by queue (an upper bound)
	overflow     bool // pending overflowed: re-read history before going live
	closed       bool
	cancel       context.CancelFunc // ends the room's own subscription (cluster)
	online       int64              // count of the last presence.update delivered
}

// subscribe adds m to its topic, creating the topic (and reading its history
// tail in the background) if m is the first. A topic that knows its position
// gives it to m: live events follow from there.
func (h *Hub) subscribe(m *member) {
	id := m.topicID
	h.topics.mu.Lock()
	r := h.topics.m[id]
	created := r == nil
	var subCtx context.Context // the room's own subscription (cluster), ended by its close
	if created {
		r = &topic{id: id, subs: map[*member]struct{}{}, repairing: true, ready: make(chan struct{})}
		if h.perTopic {
			subCtx, r.cancel = context.WithCancel(h.ctx)
		}
		h.topics.m[id] = r
		if id < 0 {
			h.topics.users++
		}
	}
	m.topic = r
	r.mu.Lock()
	r.subs[m] = struct{}{}
	if r.known() {
		m.s.place(m, r.pos)
	}
	r.mu.Unlock()
	h.topics.mu.Unlock()
	if created {
		h.Go(func(ctx context.Context) { h.repairRoom(ctx, r) })
		if subCtx != nil {
			h.Go(func(context.Context) { h.roomSubscription(subCtx, r) })
		}
	}
}

// unsubscribe removes m; the last one out frees the topic.
func (h *Hub) unsubscribe(m *member) {
	r := m.topic
	h.topics.mu.Lock()
	r.mu.Lock()
	delete(r.subs, m)
	if len(r.subs) == 0 && !r.closed {
		r.closed = true
		r.pending = nil
		delete(h.topics.m, r.id)
		if r.id < 0 {
			h.topics.users--
		}
		if r.cancel != nil {
			r.cancel()
		}
	}
	r.mu.Unlock()
	h.topics.mu.Unlock()
}

// counts returns the number of local streams and rooms (users' logs apart).
func (h *Hub) counts() (conns, rooms int64) {
	h.topics.mu.RLock()
	rooms = int64(len(h.topics.m) - h.topics.users)
	h.topics.mu.RUnlock()
	return h.streams.count(), rooms
}

// onlineUsers sums the online users last announced in the local rooms.
func (h *Hub) onlineUsers() int64 {
	h.topics.mu.RLock()
	defer h.topics.mu.RUnlock()
	var n int64
	for _, r := range h.topics.m {
		r.mu.Lock()
		n += r.online
		r.mu.Unlock()
	}
	return n
}

// known reports whether the room has its position in history.
func (r *topic) known() bool {
	return isClosed(r.ready)
}

// topic returns the local topic id, or nil.
func (h *Hub) topic(id int64) *topic {
	h.topics.mu.RLock()
	r := h.topics.m[id]
	h.topics.mu.RUnlock()
	return r
}

// deliverLive hands one live event from the listener to its local topic r.
func (h *Hub) deliverLive(r *topic, ev *Event) {
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
		h.Go(func(ctx context.Context) { h.repairRoom(ctx, r) })
	}
}

// applyLocked delivers ev unless it is a duplicate. It reports true, delivering
// nothing, when ev's seq jumps past the next one: the room must repair first.
func (h *Hub) applyLocked(r *topic, ev *Event, replay bool) (needRepair bool) {
	if !ev.HasID() {
		h.fanoutLocked(r, ev, replay)
		return false
	}
	switch r.pos.Check(ev) {
	case Duplicate:
		return false // already delivered (replay overlap)
	case Jump:
		return true
	case Epoch:
		// Redis lost its data and numbering starts again. What the old epoch
		// held after the position is unknowable.
		h.fanoutLocked(r, newGap(r.pos.ID, ev.ID), replay)
	}
	h.fanoutLocked(r, ev, replay)
	r.pos.Advance(ev)
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

// fanoutLocked hands ev to every member; replay marks events of a history
// replay, whose drops are not counted as lagged (the room itself was behind).
func (h *Hub) fanoutLocked(r *topic, ev *Event, replay bool) {
	if ev.Type == PresenceEventType && ev.HasID() {
		var p struct{ Count int64 }
		if json.Unmarshal(ev.Data, &p) == nil {
			r.online = p.Count
		}
	}
	n := 0
	for m := range r.subs {
		if m.s.offer(m, ev) {
			n++
		} else if !replay {
			h.metrics.Lagged.Inc()
		}
	}
	h.metrics.Delivered.Add(n)
}
