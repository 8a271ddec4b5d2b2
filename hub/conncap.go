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
		[]string{connID, strconv.Itoa(h.cfg.MaxConnectionsPerUser), itoa(int64(userConnsTTL / time.Second)), UserControlChannel, h.DeadInstances()},
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
		conn, ok := h.parseConnID(id)
		if !ok {
			continue // another instance's
		}
		if s := h.streams.get(conn); s != nil && s.evict("connection limit", 0) {
			h.metrics.Evictions.Inc()
		}
	}
}
