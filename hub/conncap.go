package hub

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"roomhub/lua"
)

var userConnsScript = NewScript(lua.UserConns)

// registerConn records a new stream of user and evicts the user's oldest
// streams beyond MAX_CONNECTIONS_PER_USER, on whichever instance they are.
// Like touch, it is not abandoned when ctx is cancelled.
func (h *Hub) registerConn(ctx context.Context, user int64, connID string) error {
	ctx, cancel := Detach(ctx)
	defer cancel()
	evicted, err := Run(h.rdb, ctx, userConnsScript, []string{UserConnsKey(user), UserOnlineKey(user)},
		[]string{connID, strconv.Itoa(h.cfg.MaxConnectionsPerUser), itoa(int64(userConnsTTL / time.Second)), UserControlChannel,
			itoa(h.onlineLease().Milliseconds())},
		rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return err
	}
	// The control channel tells every instance; evicting local ones here too
	// does not wait for the round trip (evicting twice is harmless).
	h.evict(evicted)
	return nil
}

// userConnsTTL bounds how long a user's stream registry outlives its last open.
const userConnsTTL = 24 * time.Hour

func (h *Hub) unregisterConn(ctx context.Context, user int64, connID string) {
	if err := CallMany(h.rdb, ctx, rueidis.Commands{
		h.rdb.B().Zrem().Key(UserConnsKey(user)).Member(connID).Build(),
		h.rdb.B().Zrem().Key(UserOnlineKey(user)).Member(connID).Build(),
	}); err != nil {
		h.log.Warn("unregistering stream from the connection cap", "user", user, "err", err)
	}
}

// evict ends the local streams among connIDs with system.evicted.
func (h *Hub) evict(connIDs []string) {
	for _, id := range connIDs {
		if s := h.streams.get(id); s != nil && s.evict("connection limit", 0) {
			h.metrics.Evictions.Inc()
		}
	}
}

// onlineLease is how long a stream counts as open in user:online without a
// renewal: the presence TTL, renewed by the clock every third of it.
func (h *Hub) onlineLease() time.Duration { return h.cfg.PresenceUserTTL }

// renewOnline renews the online leases of the clock's due streams, one
// call per user.
func (h *Hub) renewOnline(ctx context.Context, conns map[int64][]string) {
	if len(conns) == 0 {
		return
	}
	ctx, cancel := Detach(ctx)
	defer cancel()
	lease := h.onlineLease()
	until := float64(time.Now().Add(lease).UnixMilli())
	cmds := make(rueidis.Commands, 0, 2*len(conns))
	for user, ids := range conns {
		z := h.rdb.B().Zadd().Key(UserOnlineKey(user)).Xx().ScoreMember()
		for _, id := range ids {
			z = z.ScoreMember(until, id)
		}
		cmds = append(cmds, z.Build(), h.rdb.B().Pexpire().Key(UserOnlineKey(user)).Milliseconds(2*lease.Milliseconds()).Build())
	}
	if err := CallMany(h.rdb, ctx, cmds); err != nil {
		h.log.Warn("renewing online leases", "users", len(conns), "err", err)
	}
}
