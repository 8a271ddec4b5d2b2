package hub

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"roomhub/lua"
)

var userConnsScript = rueidis.NewLuaScript(lua.UserConns)

// registerConn records a new stream of user and evicts the user's oldest
// streams beyond MAX_CONNECTIONS_PER_USER, on whichever instance they are.
// Like touch, it is not abandoned when ctx is cancelled.
func (h *Hub) registerConn(ctx context.Context, user int64, connID string) error {
	ctx, cancel := detach(ctx)
	defer cancel()
	evicted, err := run(h, ctx, userConnsScript, []string{UserConnsKey(user)},
		[]string{connID, strconv.Itoa(h.cfg.MaxConnectionsPerUser), itoa(int64(userConnsTTL / time.Second)), UserControlChannel},
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
	if _, err := call(h, ctx, h.rdb.B().Zrem().Key(UserConnsKey(user)).Member(connID).Build(), done); err != nil {
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
