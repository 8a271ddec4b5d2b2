package hub

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"roomhub/lua"
)

var (
	presenceTouchScript = newScript(lua.PresenceTouch)
	presenceLeaveScript = rueidis.NewLuaScript(lua.PresenceLeave)
	userConnsScript     = rueidis.NewLuaScript(lua.UserConns)
)

// heartbeatMember is the presence member of explicit heartbeats; streams use
// their connection id.
const heartbeatMember = "hb"

// sweepBatch is how many users one sweep script call examines.
const sweepBatch = 100

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

// presence holds the local side of presence broadcasts: which rooms have a
// coalesced presence.update being sent by this instance.
type presence struct {
	mu      sync.Mutex
	running map[int64]bool // a broadcaster goroutine owns the room
	dirty   map[int64]bool // transitions queued since the broadcaster last looked
}

// touch marks user present in room through member; a join queues a transition.
// It is not abandoned when ctx is cancelled (see detach): a touch that Redis
// ran after the stream's leave would leave a ghost until the TTL.
func (h *Hub) touch(ctx context.Context, room, user int64, member string) error {
	ctx, cancel := detach(ctx)
	defer cancel()
	start := time.Now()
	joined, err := presenceTouchScript.Exec(ctx, h.rdb,
		[]string{PresenceKey(room), PresenceChangesKey(room), PresenceConnsKey(room, user)},
		[]string{itoa(user), member, itoa(h.cfg.PresenceUserTTL.Milliseconds()), itoa(int64(h.cfg.PresenceHashTTL / time.Second))},
	).AsInt64()
	h.metrics.observeRedis(start)
	if err != nil {
		return redisErr(err)
	}
	if joined == 1 {
		h.rdb.Do(ctx, h.rdb.B().Sadd().Key(PresenceRoomsKey).Member(itoa(room)).Build())
		h.scheduleBroadcast(room)
	}
	return nil
}

// touchMany marks user present through member in each room, in one pipeline:
// a page stream's join. Failures are logged; the clock tries again.
func (h *Hub) touchMany(ctx context.Context, user int64, member string, rooms []int64) {
	items := make([]presenceTouch, len(rooms))
	for i, r := range rooms {
		items[i] = presenceTouch{room: r, user: user, member: member}
	}
	h.touchBatch(ctx, items)
}

// presenceTouch is one stream's presence in one room.
type presenceTouch struct {
	room, user int64
	member     string
}

// touchBatch runs many touches in one pipeline (the clock's refreshes, a page
// stream's join). Like touch, it is not abandoned when ctx is cancelled.
func (h *Hub) touchBatch(ctx context.Context, items []presenceTouch) {
	if len(items) == 0 {
		return
	}
	ctx, cancel := detach(ctx)
	defer cancel()
	execs := make([]rueidis.LuaExec, len(items))
	for i, t := range items {
		execs[i] = rueidis.LuaExec{
			Keys: []string{PresenceKey(t.room), PresenceChangesKey(t.room), PresenceConnsKey(t.room, t.user)},
			Args: []string{itoa(t.user), t.member, itoa(h.cfg.PresenceUserTTL.Milliseconds()), itoa(int64(h.cfg.PresenceHashTTL / time.Second))},
		}
	}
	start := time.Now()
	results := presenceTouchScript.execMany(ctx, h.rdb, execs)
	h.metrics.observeRedis(start)
	failed := 0
	for i, r := range results {
		joined, err := r.AsInt64()
		if err != nil {
			failed++
			continue
		}
		if joined == 1 {
			h.rdb.Do(ctx, h.rdb.B().Sadd().Key(PresenceRoomsKey).Member(itoa(items[i].room)).Build())
			h.scheduleBroadcast(items[i].room)
		}
	}
	if failed > 0 {
		h.log.Warn("refreshing presence", "failed", failed, "of", len(items), "err", results[0].Error())
	}
}

// leave removes member (may be "") and expired members for users; those left
// with none leave the room. It reports how many left.
func (h *Hub) leave(ctx context.Context, room int64, member string, users []string) (int, error) {
	keys := []string{PresenceKey(room), PresenceChangesKey(room)}
	args := []string{member, itoa(int64(h.cfg.PresenceHashTTL / time.Second))}
	for _, u := range users {
		id, err := strconv.ParseInt(u, 10, 64)
		if err != nil {
			continue
		}
		keys = append(keys, PresenceConnsKey(room, id))
		args = append(args, u)
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	start := time.Now()
	left, err := presenceLeaveScript.Exec(ctx, h.rdb, keys, args).AsStrSlice()
	h.metrics.observeRedis(start)
	if err != nil {
		return 0, redisErr(err)
	}
	if len(left) > 0 {
		h.scheduleBroadcast(room)
	}
	return len(left), nil
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
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	start := time.Now()
	all, err := h.rdb.Do(rctx, h.rdb.B().Hgetall().Key(PresenceKey(room)).Build()).AsStrMap()
	h.metrics.observeRedis(start)
	if err != nil {
		return PresenceList{}, redisErr(err)
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
		if _, err := h.leave(ctx, room, "", stale); err != nil {
			h.log.Warn("sweeping stale presence", "room", room, "err", err)
		}
	}
	return list, nil
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
	h.goOwned(func(ctx context.Context) { h.broadcastPresence(ctx, room) })
}

func (h *Hub) broadcastPresence(ctx context.Context, room int64) {
	p := &h.presence
	bo := newBackoff()
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
		for {
			r, err := h.flushPresence(ctx, room)
			if err != nil {
				h.log.Warn("presence broadcast failed; retrying", "room", room, "err", err)
				p.mu.Lock()
				p.dirty[room] = true
				p.mu.Unlock()
				if !bo.wait(ctx) {
					break
				}
				continue
			}
			bo.reset()
			if r.kind == "wait" {
				if !sleepCtx(ctx, r.wait) {
					break
				}
				continue
			}
			if r.kind == "empty" || r.more == 0 {
				break
			}
		}
	}
}

// flushPresence publishes one presence.update from room's queued transitions.
func (h *Hub) flushPresence(ctx context.Context, room int64) (publishReply, error) {
	keys := []string{EventsKey(room), SeqKey(room), PresenceChangesKey(room), PresenceKey(room), PresenceGateKey(room)}
	r, err := h.runPublish(ctx, keys, room, PresenceEventType, "", "", "", "presence", eventExtras{})
	if err == nil && r.kind == "new" {
		h.metrics.countPublished(PresenceEventType)
		h.metrics.PresenceUpdates.Inc()
	}
	return r, err
}

// sweepEvery is how often one instance looks for users whose members expired.
func (h *Hub) sweepEvery() time.Duration {
	return min(max(h.cfg.PresenceUserTTL/4, 100*time.Millisecond), 10*time.Second)
}

// runSweeper removes expired presence (streams of a dead instance, heartbeats
// that stopped) on one instance at a time, under a lock, and sends what is
// still queued: a hub that died between a transition and its broadcast
// leaves nothing unsent.
func (h *Hub) runSweeper(ctx context.Context) {
	h.everyUnderLock(ctx, "presence-sweep", h.sweepEvery(), func(ctx context.Context) (time.Duration, error) {
		return 0, h.sweep(ctx)
	})
}

// sweep visits every room with presence state once.
func (h *Hub) sweep(ctx context.Context) error {
	cursor := uint64(0)
	for {
		rctx, cancel := context.WithTimeout(ctx, redisTimeout)
		e, err := h.rdb.Do(rctx, h.rdb.B().Sscan().Key(PresenceRoomsKey).Cursor(cursor).Count(500).Build()).AsScanEntry()
		cancel()
		if err != nil {
			return redisErr(err)
		}
		for _, m := range e.Elements {
			room, ok := parseRoomID(m)
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
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	users, err := h.rdb.Do(rctx, h.rdb.B().Hkeys().Key(PresenceKey(room)).Build()).AsStrSlice()
	cancel()
	if err != nil {
		return redisErr(err)
	}
	for i := 0; i < len(users); i += sweepBatch {
		if _, err := h.leave(ctx, room, "", users[i:min(i+sweepBatch, len(users))]); err != nil {
			return err
		}
	}
	rctx, cancel = context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	queued, err := h.rdb.Do(rctx, h.rdb.B().Llen().Key(PresenceChangesKey(room)).Build()).AsInt64()
	if err != nil {
		return redisErr(err)
	}
	if queued > 0 {
		h.scheduleBroadcast(room)
	}
	if len(users) == 0 && queued == 0 {
		h.rdb.Do(rctx, h.rdb.B().Srem().Key(PresenceRoomsKey).Member(itoa(room)).Build())
	}
	return nil
}

// registerConn records a new stream of user and evicts the user's oldest
// streams beyond MAX_CONNECTIONS_PER_USER, on whichever instance they are.
// Like touch, it is not abandoned when ctx is cancelled.
func (h *Hub) registerConn(ctx context.Context, user int64, connID string) error {
	ctx, cancel := detach(ctx)
	defer cancel()
	start := time.Now()
	evicted, err := userConnsScript.Exec(ctx, h.rdb, []string{UserConnsKey(user)},
		[]string{connID, strconv.Itoa(h.cfg.MaxConnectionsPerUser), itoa(int64(userConnsTTL / time.Second)), UserControlChannel},
	).AsStrSlice()
	h.metrics.observeRedis(start)
	if err != nil {
		return redisErr(err)
	}
	// The control channel tells every instance; evicting local ones here too
	// does not wait for the round trip (evicting twice is harmless).
	h.evict(evicted)
	return nil
}

// userConnsTTL bounds how long a user's stream registry outlives its last open.
const userConnsTTL = 24 * time.Hour

func (h *Hub) unregisterConn(ctx context.Context, user int64, connID string) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	h.rdb.Do(ctx, h.rdb.B().Zrem().Key(UserConnsKey(user)).Member(connID).Build())
}

// evict ends the local streams among connIDs with system.evicted.
func (h *Hub) evict(connIDs []string) {
	for _, id := range connIDs {
		if s := h.streams.get(id); s != nil && s.evict("connection limit", 0) {
			h.metrics.Evictions.Inc()
		}
	}
}

// controlMessage is what travels on the control channel.
type controlMessage struct {
	Evict []string `json:"evict,omitempty"`
	Muted int64    `json:"muted,omitempty"` // this user's muted types changed
}

func (h *Hub) onControl(payload string) {
	var m controlMessage
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		h.invalidMessage(UserControlChannel, "not a control message")
		return
	}
	h.evict(m.Evict)
	if m.Muted > 0 {
		h.reloadMutes(m.Muted)
	}
}
