package hub

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"roomhub/lua"
)

// Instances: what keeps an open stream present costs Redis one call per hub
// instance per period, not a write per stream. Each instance holds a lease
// in presence:instances (renewed every RefreshEvery, for
// PRESENCE_USER_TTL_SECS); its streams' members in presence:conns:{room}:<u>
// and user:online:{u} are "<instance>.<connection>" with no expiry (+inf),
// and count while the lease lives. A closing stream removes its own; the
// members of an instance whose lease ran out (it was killed) are removed by
// the sweep, which finds its users through their last heartbeat: the
// instance refreshes those (lua/presence_refresh.lua: one HSET per room), so
// the users of a dead instance are the only streaming users the sweep looks
// at. An instance whose own lease lapsed (Redis out of reach for a TTL)
// joins its streams again: a sweep may have taken them out meanwhile.

var (
	instanceScript        = NewScript(lua.PresenceInstance)
	presenceRefreshScript = NewScript(lua.PresenceRefresh)
)

// instancesForget is how long a dead instance stays in the registry, so
// that sweeps, claims and registrations remove its members: far longer
// than a sweep takes, and twice user:online's life after its last
// registration (userConnsTTL), so that a member no one removed has expired
// with its key before its instance is forgotten (and would count again).
const instancesForget = 2 * userConnsTTL

// connsEvery is how many presence refreshes pass between two renewals of
// the TTL of the presence:conns keys of an instance's streams (a write per
// user: the cost the lease saves, were it made every time).
const connsEvery = 15

// streamConnsTTL is how long the presence:conns key of a user with a stream
// lives without a renewal: three renewals' worth, at least the key ttl. A
// key a dead instance left lives no longer.
func (h *Hub) streamConnsTTL() time.Duration {
	return max(h.cfg.PresenceHashTTL, 3*connsEvery*h.RefreshEvery()).Round(time.Second)
}

// instances is this instance's id and the registry's last reading.
type instances struct {
	id string // this instance's: the prefix of its streams' connection ids

	refreshes int // presence refreshes so far (the clock's goroutine, one at a time)

	mu    sync.Mutex
	taken bool   // a lease was taken (Close ends it)
	dead  string // ids of the instances whose lease ended, comma separated
	fleet int    // the lowest InstanceVersion among the live instances; 0 until read
}

// InstanceVersion is what this hub's instance id says of it ("v1-…"):
// raised when a version writes Redis data an older hub cannot read. A hub
// writes such data only once every live instance is at least that version
// (FleetVersion), so that a rolling deploy's old instances keep reading
// what the new ones write. An id without it is an older hub's (0).
const InstanceVersion = 1

// newInstanceID names this instance in the registry: its version, then 13
// random hex digits.
func newInstanceID() string { return "v" + strconv.Itoa(InstanceVersion) + "-" + newID()[:13] }

// FleetVersion is the lowest InstanceVersion among the hub instances whose
// lease lives, at this instance's last reading of the registry (every
// presence refresh): 0 until the first, or while an older hub lives.
func (h *Hub) FleetVersion() int {
	h.inst.mu.Lock()
	defer h.inst.mu.Unlock()
	return h.inst.fleet
}

// newConn draws the random part of a new stream's connection id.
func newConn() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return binary.BigEndian.Uint64(b[:])
}

// connID names a stream of this instance in Redis: "<instance>.<random>",
// the random part in 16 hex digits. A stream keeps only the number: the name
// is built when Redis needs it.
func (h *Hub) connID(conn uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], conn)
	return h.inst.id + "." + hex.EncodeToString(b[:])
}

// parseConnID returns the random part of a connection id of this instance,
// false when id names another instance's stream or is malformed.
func (h *Hub) parseConnID(id string) (uint64, bool) {
	rest, ok := strings.CutPrefix(id, h.inst.id+".")
	if !ok || len(rest) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 16, 64)
	return n, err == nil
}

// DeadInstances is the ids of the hub instances whose lease had ended at
// this instance's last renewal, comma separated: a stream in user:online
// counts unless its instance is among them.
func (h *Hub) DeadInstances() string {
	h.inst.mu.Lock()
	defer h.inst.mu.Unlock()
	return h.inst.dead
}

// readOnly is renewInstance's lease for a reading of the registry alone.
const readOnly time.Duration = -1

// renewInstance renews this instance's lease for lease (0: ends it;
// readOnly: only reads the registry, as the sweep does) and keeps the
// registry's dead instances (DeadInstances). It reports whether the lease
// had lapsed (or was never taken).
func (h *Hub) renewInstance(ctx context.Context, lease time.Duration) (bool, error) {
	ms := ""
	if lease != readOnly {
		ms = itoa(lease.Milliseconds())
	}
	reply, err := Run(h.rdb, ctx, instanceScript, []string{PresenceInstancesKey},
		[]string{h.inst.id, ms, itoa(instancesForget.Milliseconds())}, rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return false, err
	}
	if len(reply) < 2 {
		return false, ErrRedisReply
	}
	fleet, err := strconv.Atoi(reply[1])
	if err != nil {
		return false, fmt.Errorf("%w: fleet version %q", ErrRedisReply, reply[1])
	}
	h.inst.mu.Lock()
	h.inst.taken = h.inst.taken || lease != readOnly
	h.inst.dead = strings.Join(reply[2:], ",")
	if fleet >= 0 { // none lives: this one's lease is ending, or it only read
		h.inst.fleet = fleet
	}
	h.inst.mu.Unlock()
	return reply[0] == "1", nil
}

// leaseTaken reports whether this instance has taken its lease.
func (h *Hub) leaseTaken() bool {
	h.inst.mu.Lock()
	defer h.inst.mu.Unlock()
	return h.inst.taken
}

// takeLease takes this instance's lease if no renewal has yet: a stream's
// members name the instance, and an instance killed before the clock's
// first renewal would leave them to no sweep.
func (h *Hub) takeLease(ctx context.Context) {
	if h.leaseTaken() {
		return
	}
	if _, err := h.renewInstance(ctx, h.cfg.PresenceUserTTL); err != nil {
		h.log.Warn("taking this instance's presence lease", "err", err)
	}
}

// endInstance ends this instance's lease once its streams are released: a
// member a failed leave left behind is swept at once.
func (h *Hub) endInstance(ctx context.Context) {
	if !h.leaseTaken() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := h.renewInstance(ctx, 0); err != nil {
		h.log.Warn("ending this instance's presence lease", "err", err)
	}
}

// refreshPresence is the clock's presence work of one period for streams
// (the open ones): the lease renewed, and the last heartbeat of each
// (room, user) they hold refreshed; a user no longer present, or all of
// them when the lease had lapsed, joined again through the streams still
// open.
func (h *Hub) refreshPresence(ctx context.Context, streams []*Stream) {
	ctx, cancel := Detach(ctx)
	defer cancel()
	lapsed, err := h.renewInstance(ctx, h.cfg.PresenceUserTTL)
	if err != nil {
		h.log.Warn("renewing this instance's presence lease", "err", err)
		return
	}
	if lapsed {
		h.joinStreams(ctx, streams, nil)
		return
	}
	byRoom := map[int64][]int64{} // room → its users here, once each
	seen := map[[2]int64]bool{}
	for _, s := range streams {
		for _, room := range s.rooms() {
			if k := [2]int64{room, s.User}; !seen[k] {
				seen[k] = true
				byRoom[room] = append(byRoom[room], s.User)
			}
		}
	}
	var connsTTL time.Duration // renewed every connsEvery refreshes
	if h.inst.refreshes%connsEvery == 0 {
		connsTTL = h.streamConnsTTL()
	}
	h.inst.refreshes++
	missing := h.refreshSeen(ctx, byRoom, connsTTL)
	if len(missing) > 0 {
		h.joinStreams(ctx, streams, func(room, user int64) bool { return missing[[2]int64{room, user}] })
	}
}

// refreshSeen refreshes the last heartbeat of byRoom's users
// (lua/presence_refresh.lua, at most touchesPerCall users a call; on a
// cluster of one room), and their presence:conns keys' TTL to connsTTL
// unless it is 0, and returns the (room, user) pairs no longer present.
func (h *Hub) refreshSeen(ctx context.Context, byRoom map[int64][]int64, connsTTL time.Duration) map[[2]int64]bool {
	type call struct {
		exec  rueidis.LuaExec
		rooms map[int]int64 // index in Keys of a room's hash → the room
		users int
	}
	var calls []*call
	for room, users := range byRoom {
		for len(users) > 0 {
			var c *call
			if n := len(calls); n > 0 && !h.sharded && calls[n-1].users < touchesPerCall {
				c = calls[n-1]
			} else {
				c = &call{exec: rueidis.LuaExec{Args: []string{itoa(int64(h.cfg.PresenceHashTTL / time.Second)), itoa(int64(connsTTL / time.Second))}},
					rooms: map[int]int64{}}
				calls = append(calls, c)
			}
			// On a cluster a call holds one room (its keys share its slot),
			// and a room of more users than touchesPerCall takes more calls.
			take := users[:min(len(users), touchesPerCall-c.users)]
			users = users[len(take):]
			c.rooms[len(c.exec.Keys)+1] = room
			c.exec.Keys = append(c.exec.Keys, PresenceKey(room), EventsKey(room), RoomSeqKey(room))
			c.exec.Args = append(c.exec.Args, strconv.Itoa(len(take)))
			for _, u := range take {
				if connsTTL > 0 {
					c.exec.Keys = append(c.exec.Keys, PresenceConnsKey(room, u))
				}
				c.exec.Args = append(c.exec.Args, itoa(u))
			}
			c.users += len(take)
		}
	}
	execs := make([]rueidis.LuaExec, len(calls))
	for i, c := range calls {
		execs[i] = c.exec
	}
	missing := map[[2]int64]bool{}
	h.runPresenceCalls(ctx, presenceRefreshScript, execs, "refreshing presence", func(i int, r rueidis.RedisResult) error {
		pairs, err := r.AsStrSlice()
		for j := 0; j+1 < len(pairs); j += 2 {
			k, _ := strconv.Atoi(pairs[j])
			u, _ := strconv.ParseInt(pairs[j+1], 10, 64)
			missing[[2]int64{calls[i].rooms[k], u}] = true
		}
		return err
	})
	return missing
}

// joinStreams makes streams present in their rooms (where want says so;
// nil: in all): a stream's join, or again when its members may have been
// swept. A stream that has ended by then leaves again: its release's leave
// may have run before the touch, and a stream's member has no expiry.
func (h *Hub) joinStreams(ctx context.Context, streams []*Stream, want func(room, user int64) bool) {
	var items []presenceTouch
	var joined []*Stream
	for _, s := range streams {
		n := len(items)
		for _, room := range s.rooms() {
			if want == nil || want(room, s.User) {
				items = append(items, presenceTouch{room: room, user: s.User, members: []string{s.connID()}})
			}
		}
		if len(items) > n {
			joined = append(joined, s)
		}
	}
	h.touchBatch(ctx, items)
	for _, s := range joined {
		if s.ended() {
			h.undo(ctx, s.leaveRooms)
		}
	}
}

// undo runs f, which takes back what a stream that ended wrote, with a
// context of its own: ctx (the stream's request's) may be over already.
func (h *Hub) undo(ctx context.Context, f func(context.Context)) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	defer cancel()
	f(ctx)
}

// InstanceID is this instance's id in the registry (and in its figures).
func (h *Hub) InstanceID() string { return h.inst.id }
