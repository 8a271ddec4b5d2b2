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
	subs         []*member     // each at its own member.at
	ready        chan struct{} // closed once pos holds the topic's position (history tail read at creation)
	carried      chan struct{} // PUBSUB_MODE=channels: closed once the listener's connection carries the topic
	pos          Position
	repairing    bool
	again        bool // a repair was requested while one ran: make one more pass
	pending      []*Event
	pendingBytes int  // what pending holds, counted by queue (an upper bound)
	overflow     bool // pending overflowed: re-read history before going live
	closed       bool
	cancel       context.CancelFunc // ends the topic's own subscription (cluster)
	online       int64              // count of the last presence.update delivered
	scratch      writeScratch       // the fan-out's write buffers
}

// subscribe adds m to its topic, creating the topic (and reading its history
// tail in the background) if m is the first. A topic that knows its position
// gives it to m: live events follow from there.
func (h *Hub) subscribe(m *member) {
	id := m.topicID
	h.topics.mu.Lock()
	t := h.topics.m[id]
	created := t == nil
	var subCtx context.Context // the topic's own subscription, ended by its close
	if created {
		t = &topic{id: id, repairing: true, ready: make(chan struct{})}
		if h.channels != nil {
			t.carried = make(chan struct{})
			if h.channels.add(id) {
				close(t.carried)
			}
		} else if h.sharded {
			subCtx, t.cancel = context.WithCancel(h.ctx)
		}
		h.topics.m[id] = t
		if id < 0 {
			h.topics.users++
		}
	}
	m.topic = t
	t.mu.Lock()
	m.at = int32(len(t.subs))
	t.subs = append(t.subs, m)
	if t.known() {
		m.s.place(m, t.pos)
	}
	t.mu.Unlock()
	h.topics.mu.Unlock()
	if created {
		h.Go(func(ctx context.Context) { h.repairTopic(ctx, t) })
		if subCtx != nil {
			h.Go(func(context.Context) { h.topicSubscription(subCtx, t) })
		}
	}
}

// removeLocked takes m out of t.subs, moving the last member into its place;
// the slice shrinks when a quarter of it is left.
func (t *topic) removeLocked(m *member) {
	if int(m.at) >= len(t.subs) || t.subs[m.at] != m {
		return
	}
	last := len(t.subs) - 1
	moved := t.subs[last]
	t.subs[m.at], moved.at = moved, m.at
	t.subs[last] = nil
	t.subs = t.subs[:last]
	if cap(t.subs) > 64 && len(t.subs) < cap(t.subs)/4 {
		t.subs = append([]*member(nil), t.subs...)
	}
}

// unsubscribe removes m; the last one out frees the topic.
func (h *Hub) unsubscribe(m *member) {
	t := m.topic
	h.topics.mu.Lock()
	t.mu.Lock()
	t.removeLocked(m)
	if len(t.subs) == 0 && !t.closed {
		t.closed = true
		t.pending = nil
		delete(h.topics.m, t.id)
		if t.id < 0 {
			h.topics.users--
		}
		if t.cancel != nil {
			t.cancel()
		}
		if h.channels != nil {
			h.channels.remove(t.id)
		}
	}
	t.mu.Unlock()
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
	for _, t := range h.topics.m {
		t.mu.Lock()
		n += t.online
		t.mu.Unlock()
	}
	return n
}

// known reports whether the topic has its position in history.
func (t *topic) known() bool {
	return isClosed(t.ready)
}

// markCarried records that the listener's connection carries t.
func (t *topic) markCarried() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.carried != nil && !isClosed(t.carried) {
		close(t.carried)
	}
}

// topic returns the local topic id, or nil.
func (h *Hub) topic(id int64) *topic {
	h.topics.mu.RLock()
	t := h.topics.m[id]
	h.topics.mu.RUnlock()
	return t
}

// deliverLive hands one live event from the listener to its local topic t
// and returns how many local streams follow t.
func (h *Hub) deliverLive(t *topic, ev *Event) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0
	}
	if t.repairing {
		t.queue(ev)
		return len(t.subs)
	}
	if h.applyLocked(t, ev, false) {
		t.repairing = true
		t.pending = append(t.pending[:0], ev)
		h.Go(func(ctx context.Context) { h.repairTopic(ctx, t) })
	}
	return len(t.subs)
}

// applyLocked delivers ev unless it is a duplicate. It reports true, delivering
// nothing, when ev's seq jumps past the next one: the topic must repair first.
func (h *Hub) applyLocked(t *topic, ev *Event, replay bool) (needRepair bool) {
	if !ev.HasID() {
		h.fanoutLocked(t, ev, replay)
		return false
	}
	switch t.pos.Check(ev) {
	case Duplicate:
		return false // already delivered (replay overlap)
	case Jump:
		return true
	case Epoch:
		// Redis lost its data and numbering starts again. What the old epoch
		// held after the position is unknowable.
		h.fanoutLocked(t, newGap(t.pos.ID, ev.ID), replay)
	}
	h.fanoutLocked(t, ev, replay)
	t.pos.Advance(ev)
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
// replay, whose drops are not counted as lagged (the topic itself was behind).
func (h *Hub) fanoutLocked(t *topic, ev *Event, replay bool) {
	if ev.Type == PresenceEventType && ev.HasID() {
		var p struct{ Count int64 }
		if json.Unmarshal(ev.Data, &p) == nil {
			t.online = p.Count
		}
	}
	n := 0
	for _, m := range t.subs {
		if m.s.offer(m, ev, &t.scratch) {
			n++
		} else if !replay {
			h.metrics.Lagged.Inc()
		}
	}
	h.metrics.Delivered.Add(n)
}
