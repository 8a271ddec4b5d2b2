package hub

import (
	"context"
	"sync"
	"time"
)

// presence holds the local side of presence broadcasts: which rooms have a
// coalesced presence.update being sent by this instance.
type presence struct {
	mu      sync.Mutex
	running map[int64]bool // a broadcaster goroutine owns the room
	dirty   map[int64]bool // transitions queued since the broadcaster last looked
}

// scheduleBroadcast makes sure a coalesced presence.update will be sent for
// room: one broadcaster per room and instance drains the queued transitions,
// waiting out the broadcast interval between updates.
func (h *Hub) scheduleBroadcast(room int64) {
	p := &h.presence
	p.mu.Lock()
	p.dirty[room] = true
	if p.running[room] {
		p.mu.Unlock()
		return
	}
	p.running[room] = true
	p.mu.Unlock()
	h.Go(func(ctx context.Context) { h.broadcastPresence(ctx, room) })
}

func (h *Hub) broadcastPresence(ctx context.Context, room int64) {
	p := &h.presence
	for {
		p.mu.Lock()
		if !p.dirty[room] || ctx.Err() != nil {
			delete(p.running, room)
			delete(p.dirty, room)
			p.mu.Unlock()
			return
		}
		p.dirty[room] = false
		p.mu.Unlock()
		_ = Retry(ctx, 0, func(ctx context.Context) (bool, error) {
			return h.drainPresence(ctx, room)
		}, func(err error) {
			h.log.Warn("presence broadcast failed; retrying", "room", room, "err", err)
			p.mu.Lock()
			p.dirty[room] = true
			p.mu.Unlock()
		})
	}
}

// drainPresence publishes room's queued transitions as coalesced
// presence.updates, waiting out the broadcast interval between them, until
// none is left or ctx ends. progress: at least one publish went through.
func (h *Hub) drainPresence(ctx context.Context, room int64) (progress bool, err error) {
	for {
		r, err := h.flushPresence(ctx, room)
		if err != nil {
			return progress, err
		}
		progress = true
		switch {
		case r.kind == "wait":
			if !Sleep(ctx, r.wait) {
				return true, nil
			}
		case r.kind == "empty" || r.more == 0:
			return true, nil
		}
	}
}

// flushPresence publishes one presence.update from room's queued transitions.
func (h *Hub) flushPresence(ctx context.Context, room int64) (publishReply, error) {
	keys := []string{EventsKey(room), RoomSeqKey(room), PresenceChangesKey(room), PresenceKey(room), PresenceGateKey(room)}
	r, err := h.runPublish(ctx, publishPresenceScript, keys, room, PresenceEventType, NowTimestamp(),
		itoa(h.cfg.PresenceBroadcast.Milliseconds()), itoa(int64(h.cfg.PresenceListMax)), itoa(int64(h.cfg.PresenceHashTTL/time.Second)))
	if err == nil && r.kind == "new" {
		h.metrics.countPublished(PresenceEventType)
		h.metrics.PresenceUpdates.Inc()
	}
	return r, err
}
