package hub

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

var keepaliveFrame = []byte(":keepalive\n\n")

// clockTick is how often the clock looks at every stream: a quarter of the
// keepalive, between 10 ms and 1 s, and at most a third of RefreshEvery (a
// lease renewed late by a whole tick would lapse with a short TTL).
func (h *Hub) clockTick() time.Duration {
	return min(max(h.cfg.KeepAlive/4, 10*time.Millisecond), time.Second, h.RefreshEvery()/3)
}

// runClock is the one timer of all streams: on each tick it sends keepalives
// to streams quiet for SSE_KEEPALIVE_SECS, ends streams whose token expired,
// every RefreshEvery renews the instance's presence lease and its streams'
// last heartbeats (instances.go), every StatsEvery writes its figures
// (stats.go) and, in proxy mode, asks again whether
// their users may still use their rooms. A stream costs it a few field
// reads per tick, and no timer of its own.
func (h *Hub) runClock(ctx context.Context) {
	t := time.NewTicker(h.clockTick())
	defer t.Stop()
	// A refresh batch and a re-check round run apart: a slow access backend
	// must not hold presence back, nor the reverse.
	var refreshing, rechecking, writing atomic.Bool
	var all []*Stream
	nextStats := time.Now()
	// The lease is taken at once: what this instance may write waits on its
	// reading of the registry (FleetVersion).
	nextPresence := time.Now().Add(h.RefreshEvery())
	h.goFlagged(&refreshing, func(ctx context.Context) { h.refreshPresence(ctx, nil) })
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			all = h.streams.snapshot(all[:0])
			var recheck []*Stream
			nowNanos := now.UnixNano()
			for _, s := range all {
				if s.expires != 0 && nowNanos > s.expires {
					s.Close()
					continue
				}
				if time.Duration(nowNanos-s.lastWrite.Load()) >= h.cfg.KeepAlive {
					s.sendRaw(keepaliveFrame)
				}
				if every := h.RecheckEvery(); every > 0 && !rechecking.Load() && nowNanos > s.nextRecheck {
					s.nextRecheck = nowNanos + int64(every)
					recheck = append(recheck, s)
				}
			}
			if !refreshing.Load() && !now.Before(nextPresence) {
				nextPresence = now.Add(h.RefreshEvery())
				open := make([]*Stream, 0, len(all))
				for _, s := range all {
					if !s.ended() {
						open = append(open, s)
					}
				}
				h.goFlagged(&refreshing, func(ctx context.Context) { h.refreshPresence(ctx, open) })
			}
			if !writing.Load() && !now.Before(nextStats) {
				nextStats = now.Add(StatsEvery)
				h.goFlagged(&writing, h.writeStats)
			}
			clear(all) // keep no ended stream alive until the next tick
			if len(recheck) > 0 {
				h.goFlagged(&rechecking, func(ctx context.Context) { h.recheck(ctx, recheck) })
			}
		}
	}
}

// goFlagged runs f as h's goroutine with busy set while it runs.
func (h *Hub) goFlagged(busy *atomic.Bool, f func(context.Context)) {
	busy.Store(true)
	if !h.Go(func(ctx context.Context) {
		defer busy.Store(false)
		f(ctx)
	}) {
		busy.Store(false)
	}
}

// recheckConcurrency bounds the access checks one re-check round has in
// flight: enough that thousands of stream-rooms against a backend that takes
// its 2 s finish in a few seconds.
const recheckConcurrency = 2048

// recheck ends, with system.evicted, the streams whose user may no longer use
// one of their rooms. The checks run concurrently, at most
// recheckConcurrency at once, the round bounded by one re-check interval
// (at least 5 s). A backend that cannot answer keeps the stream: it is asked
// again next time.
func (h *Hub) recheck(ctx context.Context, streams []*Stream) {
	ctx, cancel := context.WithTimeout(ctx, max(h.RecheckEvery(), 5*time.Second))
	defer cancel()
	var g errgroup.Group
	g.SetLimit(recheckConcurrency)
round:
	for _, s := range streams {
		for _, room := range s.rooms() {
			if ctx.Err() != nil {
				break round // the round is over: the rest wait for the next one
			}
			g.Go(func() error {
				if errors.Is(h.CheckRoom(ctx, s.User, s.grant, room), ErrForbidden) {
					s.evict("access revoked", room)
				}
				return nil
			})
		}
	}
	_ = g.Wait() // the calls never fail: a backend that cannot answer is asked next round
}

// RefreshEvery is how often an instance renews its presence lease and its
// streams' last heartbeats: well within PRESENCE_USER_TTL_SECS, so an open
// tab never drops out.
func (h *Hub) RefreshEvery() time.Duration { return max(h.cfg.PresenceUserTTL/3, 100*time.Millisecond) }
