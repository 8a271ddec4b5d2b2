package hub

import (
	"context"
	"strconv"
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

// sweep visits every room with presence state once, a page of rooms (SSCAN)
// at a time: a page costs four round trips however many rooms it holds (two
// more when some rooms are empty).
func (h *Hub) sweep(ctx context.Context) error {
	cursor := uint64(0)
	for {
		e, err := Call(h.rdb, ctx, h.rdb.B().Sscan().Key(PresenceRoomsKey).Cursor(cursor).Count(500).Build(), rueidis.RedisResult.AsScanEntry)
		if err != nil {
			return err
		}
		rooms := make([]int64, 0, len(e.Elements))
		for _, m := range e.Elements {
			if room, ok := ParseID(m); ok {
				rooms = append(rooms, room)
			}
		}
		if err := h.sweepRooms(ctx, rooms); err != nil {
			return err
		}
		if cursor = e.Cursor; cursor == 0 {
			return nil
		}
	}
}

// sweepRooms sweeps rooms, each step for all of them in one pipeline: their
// users and when each was last seen (HGETALL); the expired heartbeats and
// the dead instances' members of the users not seen for half
// PRESENCE_USER_TTL_SECS, the users left with none leaving
// (lua/presence_leave.lua, sweepBatch users a call); what is still queued
// for a broadcast (LLEN). A room with neither users nor a queue is no
// longer listed. A user seen more recently had a heartbeat then, which
// lives a whole TTL from it, or a stream whose live instance refreshed
// them (instances.go), so none of theirs can have gone (a stream that
// closes removes its member and looks at the rest itself): an open stream
// costs the sweep nothing but its field's read. The half TTL is the margin
// for this hub's clock against Redis' (TIME stamps the hash).
func (h *Hub) sweepRooms(ctx context.Context, rooms []int64) error {
	if len(rooms) == 0 {
		return nil
	}
	users, err := h.leaveStale(ctx, rooms)
	if err != nil {
		return err
	}
	queues, err := h.perRoom(ctx, rooms, func(room int64) rueidis.Completed {
		return h.rdb.B().Llen().Key(PresenceChangesKey(room)).Build()
	})
	if err != nil {
		return err
	}
	var empty []int64
	for i, queued := range queues {
		if queued > 0 {
			h.scheduleBroadcast(rooms[i])
		}
		if users[i] == 0 && queued == 0 {
			empty = append(empty, rooms[i])
		}
	}
	return h.unlist(ctx, empty)
}

// leaveStale reads each room's users and when each was last seen, removes
// the expired heartbeats and dead instances' members of those not seen for
// half PRESENCE_USER_TTL_SECS (a broadcast scheduled where someone left),
// and returns how many users each room had.
func (h *Hub) leaveStale(ctx context.Context, rooms []int64) ([]int, error) {
	cmds := make(rueidis.Commands, len(rooms))
	for i, room := range rooms {
		cmds[i] = h.rdb.B().Hgetall().Key(PresenceKey(room)).Build()
	}
	users := make([]int, len(rooms)) // how many each room has
	var execs []rueidis.LuaExec
	var execRooms []int64
	seenSince := time.Now().Add(-h.cfg.PresenceUserTTL / 2).UnixMilli()
	var dead string // read once some user is stale: a dead instance's users are
	deadRead := false
	for i, r := range DoMany(h.rdb, ctx, cmds) {
		seen, err := r.AsStrMap()
		if err != nil {
			return nil, RedisErr(err)
		}
		users[i] = len(seen)
		var stale []string
		for u, ms := range seen {
			if at, err := strconv.ParseInt(ms, 10, 64); err != nil || at < seenSince {
				stale = append(stale, u)
			}
		}
		if len(stale) > 0 && !deadRead {
			if _, err := h.renewInstance(ctx, readOnly); err != nil {
				return nil, err
			}
			dead, deadRead = h.DeadInstances(), true
		}
		for j := 0; j < len(stale); j += sweepBatch {
			execs = append(execs, h.leaveExec(rooms[i], "", stale[j:min(j+sweepBatch, len(stale))], dead))
			execRooms = append(execRooms, rooms[i])
		}
	}
	if len(execs) == 0 {
		return users, nil
	}
	for i, r := range RunMany(h.rdb, ctx, presenceLeaveScript, execs) {
		left, err := r.AsStrSlice()
		if err != nil {
			return nil, RedisErr(err)
		}
		if len(left) > 0 {
			h.scheduleBroadcast(execRooms[i])
		}
	}
	return users, nil
}

// unlist takes rooms with neither users nor a queue out of presence:rooms.
func (h *Hub) unlist(ctx context.Context, empty []int64) error {
	if len(empty) == 0 {
		return nil
	}
	if _, err := Call(h.rdb, ctx, h.rdb.B().Srem().Key(PresenceRoomsKey).Member(roomMembers(empty)...).Build(), NoReply); err != nil {
		return err
	}
	// A user who joined one of them since leaveStale's HGETALL may have
	// listed the room before the SREM: list again those that have users now
	// (a join after this look lists its room itself).
	joined, err := h.perRoom(ctx, empty, func(room int64) rueidis.Completed {
		return h.rdb.B().Hlen().Key(PresenceKey(room)).Build()
	})
	if err != nil {
		return err
	}
	var back []int64
	for i, n := range joined {
		if n > 0 {
			back = append(back, empty[i])
		}
	}
	if len(back) == 0 {
		return nil
	}
	_, err = Call(h.rdb, ctx, h.rdb.B().Sadd().Key(PresenceRoomsKey).Member(roomMembers(back)...).Build(), NoReply)
	return err
}

// perRoom sends cmd's command for each room in one pipeline and returns the
// integer replies in the rooms' order.
func (h *Hub) perRoom(ctx context.Context, rooms []int64, cmd func(room int64) rueidis.Completed) ([]int64, error) {
	cmds := make(rueidis.Commands, len(rooms))
	for i, room := range rooms {
		cmds[i] = cmd(room)
	}
	out := make([]int64, len(rooms))
	for i, r := range DoMany(h.rdb, ctx, cmds) {
		n, err := r.AsInt64()
		if err != nil {
			return nil, RedisErr(err)
		}
		out[i] = n
	}
	return out, nil
}

// roomMembers is rooms as members of PresenceRoomsKey.
func roomMembers(rooms []int64) []string {
	out := make([]string, len(rooms))
	for i, r := range rooms {
		out[i] = itoa(r)
	}
	return out
}
