package hub

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"roomhub/lua"
)

var (
	presenceTouchScript = NewScript(lua.PresenceTouch)
	presenceLeaveScript = NewScript(lua.PresenceLeave)
)

// heartbeatMember is the presence member of explicit heartbeats; streams use
// their connection id.
const heartbeatMember = "hb"

// OnlineUser is one entry of GET presence.
type OnlineUser struct {
	UserID   int64  `json:"userId"`
	LastSeen string `json:"lastSeen"`
}

// PresenceList is the answer of GET presence.
type PresenceList struct {
	OnlineUsers []OnlineUser `json:"onlineUsers"`
	Count       int          `json:"count"`
}

// HeartbeatAck is the answer of a presence heartbeat.
type HeartbeatAck struct {
	Acknowledged bool  `json:"acknowledged"`
	NextInSecs   int64 `json:"nextInSecs"`
}

// touch marks user present in room through member; a join queues a transition.
// It is not abandoned when ctx is cancelled (see detach): a touch that Redis
// ran after the stream's leave would leave a ghost until the TTL.
func (h *Hub) touch(ctx context.Context, room, user int64, member string) error {
	ctx, cancel := Detach(ctx)
	defer cancel()
	calls := h.touchCalls([]presenceTouch{{room: room, user: user, members: []string{member}}})
	joined, err := Run(h.rdb, ctx, presenceTouchScript, calls[0].Keys, calls[0].Args, rueidis.RedisResult.AsIntSlice)
	if err != nil {
		return err
	}
	if len(joined) == 1 && joined[0] == 1 {
		h.joined(ctx, room)
	}
	return nil
}

// presenceTouch is a user's presence in one room through some members (the
// connection ids of their streams there, or the heartbeat member).
type presenceTouch struct {
	room, user int64
	members    []string
}

// touchesPerCall bounds the touches of one presence_touch.lua call (and the
// users of one presence_refresh.lua call): about a millisecond of Redis'
// time, so an instance's 10,000 streams are 50 calls, each sent when the
// one before has answered (the Cost rule).
const touchesPerCall = 200

// touchCalls groups touches into presence_touch.lua's calls, in order: on
// one Redis touchesPerCall at a time; on a cluster, where items come sorted
// by room, each room's apart (its keys share its slot).
func (h *Hub) touchCalls(items []presenceTouch) []rueidis.LuaExec {
	head := []string{itoa(h.cfg.PresenceUserTTL.Milliseconds()), itoa(int64(h.cfg.PresenceHashTTL / time.Second)),
		itoa(int64(h.streamConnsTTL() / time.Second))}
	var calls []rueidis.LuaExec
	for n, t := range items {
		if n%touchesPerCall == 0 || h.sharded && t.room != items[n-1].room {
			calls = append(calls, rueidis.LuaExec{Args: append([]string(nil), head...)})
		}
		c := &calls[len(calls)-1]
		c.Keys = append(c.Keys, PresenceKey(t.room), PresenceChangesKey(t.room), PresenceConnsKey(t.room, t.user), EventsKey(t.room), RoomSeqKey(t.room))
		c.Args = append(append(c.Args, itoa(t.user), strconv.Itoa(len(t.members))), t.members...)
	}
	return calls
}

// touchBatch runs many touches (a stream's join, the streams an instance
// joins again; on a cluster it sorts items by room): calls of many touches each,
// one after the other (see touchesPerCall). Like touch, it is not abandoned
// when ctx is cancelled.
func (h *Hub) touchBatch(ctx context.Context, items []presenceTouch) {
	if len(items) == 0 {
		return
	}
	ctx, cancel := Detach(ctx)
	defer cancel()
	if h.sharded { // a room's touches together, one call per room
		sort.SliceStable(items, func(a, b int) bool { return items[a].room < items[b].room })
	}
	calls := h.touchCalls(items)
	k := 0 // the first touch of call i
	h.runPresenceCalls(ctx, presenceTouchScript, calls, "refreshing presence", func(i int, r rueidis.RedisResult) error {
		joined, err := r.AsIntSlice()
		for j, v := range joined {
			if v == 1 {
				h.joined(ctx, items[k+j].room)
			}
		}
		k += len(calls[i].Keys) / 5
		return err
	})
}

// runPresenceCalls runs calls of script one after the other (on a cluster
// 32 at a time, rooms' calls spread over the masters), hands each answer
// to each, and logs how many failed as what.
func (h *Hub) runPresenceCalls(ctx context.Context, script Script, calls []rueidis.LuaExec, what string, each func(i int, r rueidis.RedisResult) error) {
	chunk := 1
	if h.sharded {
		chunk = 32
	}
	failed := 0
	var firstErr error
	for i, r := range RunChunked(h.rdb, ctx, script, calls, chunk) {
		if err := each(i, r); err != nil {
			if failed++; firstErr == nil {
				firstErr = err
			}
		}
	}
	if failed > 0 {
		h.log.Warn(what, "failedCalls", failed, "of", len(calls), "err", firstErr)
	}
}

// joined follows a join: the room is listed for the sweeper, and its
// transition broadcast.
func (h *Hub) joined(ctx context.Context, room int64) {
	if _, err := Call(h.rdb, ctx, h.rdb.B().Sadd().Key(PresenceRoomsKey).Member(itoa(room)).Build(), NoReply); err != nil {
		h.log.Warn("listing a room with presence", "room", room, "err", err)
	}
	h.scheduleBroadcast(room)
}

// leave removes member (may be ""), expired heartbeats and the members of
// the dead instances (comma separated, may be "") for users; those left
// with none leave the room. It reports how many left.
func (h *Hub) leave(ctx context.Context, room int64, member string, users []string, dead string) (int, error) {
	e := h.leaveExec(room, member, users, dead)
	left, err := Run(h.rdb, ctx, presenceLeaveScript, e.Keys, e.Args, rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return 0, err
	}
	if len(left) > 0 {
		h.scheduleBroadcast(room)
	}
	return len(left), nil
}

// leaveExec is lua/presence_leave.lua's call for leave's arguments.
func (h *Hub) leaveExec(room int64, member string, users []string, dead string) rueidis.LuaExec {
	keys := []string{PresenceKey(room), PresenceChangesKey(room)}
	args := []string{member, itoa(int64(h.cfg.PresenceHashTTL / time.Second)), dead}
	for _, u := range users {
		id, err := strconv.ParseInt(u, 10, 64)
		if err != nil {
			continue
		}
		keys = append(keys, PresenceConnsKey(room, id))
		args = append(args, u)
	}
	return rueidis.LuaExec{Keys: keys, Args: args}
}

// Heartbeat keeps user present in room for PRESENCE_USER_TTL_SECS.
func (h *Hub) Heartbeat(ctx context.Context, room, user int64) (HeartbeatAck, error) {
	if err := h.touch(ctx, room, user, heartbeatMember); err != nil {
		return HeartbeatAck{}, err
	}
	h.metrics.Heartbeats.Inc()
	return HeartbeatAck{Acknowledged: true, NextInSecs: h.heartbeatEvery()}, nil
}

// heartbeatEvery is how often clients should send heartbeats: half the TTL
// (30 s with the default 60 s), so one lost heartbeat does not drop a user.
func (h *Hub) heartbeatEvery() int64 {
	return max(int64(h.cfg.PresenceUserTTL/time.Second)/2, 1)
}

// Presence lists room's online users. Users whose last sign of life is older
// than PRESENCE_USER_TTL_SECS are left out, and swept (so their leave is
// announced).
func (h *Hub) Presence(ctx context.Context, room int64) (PresenceList, error) {
	all, err := Call(h.rdb, ctx, h.rdb.B().Hgetall().Key(PresenceKey(room)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return PresenceList{}, err
	}
	now := time.Now()
	list := PresenceList{OnlineUsers: []OnlineUser{}}
	var stale []string
	for u, seen := range all {
		id, err1 := strconv.ParseInt(u, 10, 64)
		ms, err2 := strconv.ParseInt(seen, 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		t := time.UnixMilli(ms)
		if now.Sub(t) > h.cfg.PresenceUserTTL {
			stale = append(stale, u)
			continue
		}
		list.OnlineUsers = append(list.OnlineUsers, OnlineUser{UserID: id, LastSeen: t.UTC().Format(time.RFC3339)})
	}
	sort.Slice(list.OnlineUsers, func(i, j int) bool { return list.OnlineUsers[i].UserID < list.OnlineUsers[j].UserID })
	list.Count = len(list.OnlineUsers)
	if len(stale) > 0 {
		// A stale lastSeen only means no recent touch: members decide. The
		// sweep removes those with none and announces their leave.
		if _, err := h.leave(ctx, room, "", stale, h.DeadInstances()); err != nil {
			h.log.Warn("sweeping stale presence", "room", room, "err", err)
		}
	}
	return list, nil
}
