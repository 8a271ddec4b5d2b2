package hub

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// sweepBatch is how many users one sweep script call examines.
const sweepBatch = 100

// sweepEvery is how often one instance looks for users whose members expired.
func (h *Hub) sweepEvery() time.Duration {
	return min(max(h.cfg.PresenceUserTTL/4, 100*time.Millisecond), 10*time.Second)
}

// runSweeper removes expired presence (streams of a dead instance, heartbeats
// that stopped) on one instance at a time, under a lock, and sends what is
// still queued: a hub that died between a transition and its broadcast
// leaves nothing unsent.
func (h *Hub) runSweeper(ctx context.Context) {
	h.EveryUnderLock(ctx, "presence-sweep", h.sweepEvery(), func(ctx context.Context) (time.Duration, error) {
		return 0, h.sweep(ctx)
	})
}

// sweep visits every room with presence state once.
func (h *Hub) sweep(ctx context.Context) error {
	cursor := uint64(0)
	for {
		e, err := Call(h.rdb, ctx, h.rdb.B().Sscan().Key(PresenceRoomsKey).Cursor(cursor).Count(500).Build(), rueidis.RedisResult.AsScanEntry)
		if err != nil {
			return err
		}
		for _, m := range e.Elements {
			room, ok := ParseID(m)
			if ok {
				if err := h.sweepRoom(ctx, room); err != nil {
					return err
				}
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return nil
		}
	}
}

func (h *Hub) sweepRoom(ctx context.Context, room int64) error {
	users, err := Call(h.rdb, ctx, h.rdb.B().Hkeys().Key(PresenceKey(room)).Build(), rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return err
	}
	for i := 0; i < len(users); i += sweepBatch {
		if _, err := h.leave(ctx, room, "", users[i:min(i+sweepBatch, len(users))]); err != nil {
			return err
		}
	}
	queued, err := Call(h.rdb, ctx, h.rdb.B().Llen().Key(PresenceChangesKey(room)).Build(), rueidis.RedisResult.AsInt64)
	if err != nil {
		return err
	}
	if queued > 0 {
		h.scheduleBroadcast(room)
	}
	if len(users) == 0 && queued == 0 {
		if _, err := Call(h.rdb, ctx, h.rdb.B().Srem().Key(PresenceRoomsKey).Member(itoa(room)).Build(), NoReply); err != nil {
			return err
		}
	}
	return nil
}
