package hub

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

var keepaliveFrame = []byte(":keepalive\n\n")

// clockTick is how often the clock looks at every stream: a quarter of the
// keepalive, between 10 ms and 1 s.
func (h *Hub) clockTick() time.Duration {
	return min(max(h.cfg.KeepAlive/4, 10*time.Millisecond), time.Second)
}

// runClock is the one timer of all streams: on each tick it sends keepalives
// to streams quiet for SSE_KEEPALIVE_SECS, ends streams whose token expired,
// refreshes the presence of streams due (in one pipeline, one call per room
// and user: a stream of a user whose other stream in the room is due comes
// along, and from then on they are due together) and, in proxy mode,
// asks again whether their users may still use their rooms. A stream costs
// it a few field reads per tick, and no timer of its own.
func (h *Hub) runClock(ctx context.Context) {
	t := time.NewTicker(h.clockTick())
	defer t.Stop()
	var busy atomic.Bool // a refresh or re-check batch is running
	var all []*Stream
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			all = h.streams.snapshot(all[:0])
			var due refreshes
			var recheck []*Stream
			next := now.Add(h.RefreshEvery())
			for _, s := range all {
				if !s.expires.IsZero() && now.After(s.expires) {
					s.Close()
					continue
				}
				if now.Sub(time.Unix(0, s.lastWrite.Load())) >= h.cfg.KeepAlive {
					s.sendRaw(keepaliveFrame)
				}
				if busy.Load() {
					continue
				}
				if now.After(s.nextRefresh) {
					due.addStream(s, next)
				}
				if every := h.RecheckEvery(); every > 0 && now.After(s.nextRecheck) {
					s.nextRecheck = now.Add(every)
					recheck = append(recheck, s)
				}
			}
			due.bringAlong(all, next)
			clear(all) // keep no ended stream alive until the next tick
			if touches := due.touches; len(touches) > 0 || len(recheck) > 0 {
				busy.Store(true)
				h.Go(func(ctx context.Context) {
					defer busy.Store(false)
					h.touchBatch(ctx, touches)
					h.recheck(ctx, recheck)
				})
			}
		}
	}
}

// recheck ends, with system.evicted, the streams whose user may no longer use
// one of their rooms. A backend that cannot answer keeps the stream: it is
// asked again next time.
func (h *Hub) recheck(ctx context.Context, streams []*Stream) {
	for _, s := range streams {
		for _, room := range s.rooms() {
			if errors.Is(h.CheckRoom(ctx, s.User, s.grant, room), ErrForbidden) {
				s.evict("access revoked", room)
				break
			}
		}
	}
}

// RefreshEvery is how often an open stream refreshes its presence: well within
// PRESENCE_USER_TTL_SECS, so an open tab never drops out.
func (h *Hub) RefreshEvery() time.Duration { return max(h.cfg.PresenceUserTTL/3, 100*time.Millisecond) }
