package hub

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// Stats: what each instance tells the fleet of itself, for the operator's
// overview (GET /api/v1/internal/overview). Every StatsEvery the clock
// writes the instance's figures to instance:stats:<id> (JSON, living three
// periods: a killed instance's drop out by themselves); any instance reads
// those of the live ones (Fleet). It costs Redis one write per instance per
// period, nothing per stream or publish.

// StatsEvery is how often an instance writes its figures.
const StatsEvery = 2 * time.Second

// InstanceStats is one instance's figures, as it last wrote them.
type InstanceStats struct {
	ID              string    `json:"id"`
	Connections     int64     `json:"connections"`
	Rooms           int64     `json:"rooms"`
	StartedAt       string    `json:"startedAt"`
	PublishesPerSec float64   `json:"publishesPerSec"`
	Counts          StatsSets `json:"counts,omitempty"`
}

// StatsSets are the counters other packages add to an instance's figures
// (StatsFrom), by name: "deliveries" → state → deliveries since start.
type StatsSets map[string]map[string]int64

// stats is the instance's publish rate's last reading and the counters
// other packages registered.
type stats struct {
	mu        sync.Mutex
	from      map[string]func() map[string]int64
	published uint64    // publishes at the last write
	at        time.Time // the last write
}

// StatsFrom adds f's counters to this instance's figures under name,
// read at each write. Call it before Start.
func (h *Hub) StatsFrom(name string, f func() map[string]int64) {
	h.stats.mu.Lock()
	defer h.stats.mu.Unlock()
	if h.stats.from == nil {
		h.stats.from = map[string]func() map[string]int64{}
	}
	h.stats.from[name] = f
}

// statsNow is this instance's figures at now: the publish rate over the
// time since the last call.
func (h *Hub) statsNow(now time.Time) InstanceStats {
	conns, rooms := h.counts()
	s := InstanceStats{ID: h.inst.id, Connections: conns, Rooms: rooms, StartedAt: MsTimestamp(h.started.UnixMilli())}
	published := h.metrics.PublishedTotal()
	h.stats.mu.Lock()
	defer h.stats.mu.Unlock()
	if !h.stats.at.IsZero() && now.After(h.stats.at) {
		s.PublishesPerSec = float64(published-h.stats.published) / now.Sub(h.stats.at).Seconds()
	}
	h.stats.published, h.stats.at = published, now
	if len(h.stats.from) > 0 {
		s.Counts = make(StatsSets, len(h.stats.from))
	}
	for name, f := range h.stats.from {
		s.Counts[name] = f()
	}
	return s
}

// writeStats writes this instance's figures (the clock calls it every
// StatsEvery).
func (h *Hub) writeStats(ctx context.Context) {
	b, _ := json.Marshal(h.statsNow(time.Now())) // plain fields and maps: never fails
	cmd := h.rdb.B().Set().Key(InstanceStatsKey(h.inst.id)).Value(string(b)).Px(3 * StatsEvery).Build()
	if _, err := Call(h.rdb, ctx, cmd, rueidis.RedisResult.ToString); err != nil {
		h.log.Debug("writing this instance's figures", "err", err)
	}
}

// Fleet returns the figures of the instances whose lease lives, ordered by
// id: an instance that has not written its figures yet (just started, or
// a hub without them) is left out.
func (h *Hub) Fleet(ctx context.Context) ([]InstanceStats, error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	ids, err := Call(h.rdb, ctx, h.rdb.B().Zrangebyscore().Key(PresenceInstancesKey).Min(now).Max("+inf").Build(), rueidis.RedisResult.AsStrSlice)
	if err != nil || len(ids) == 0 {
		return []InstanceStats{}, err
	}
	slices.Sort(ids)
	cmds := make(rueidis.Commands, len(ids))
	for i, id := range ids {
		cmds[i] = h.rdb.B().Get().Key(InstanceStatsKey(id)).Build()
	}
	out := make([]InstanceStats, 0, len(ids))
	for _, r := range DoMany(h.rdb, ctx, cmds) {
		raw, err := r.ToString()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return nil, RedisErr(err)
		}
		var s InstanceStats
		if json.Unmarshal([]byte(raw), &s) == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// SumCounts adds up the instances' counters of name, state by state.
func SumCounts(fleet []InstanceStats, name string) map[string]int64 {
	sum := map[string]int64{}
	for _, s := range fleet {
		for k, n := range s.Counts[name] {
			sum[k] += n
		}
	}
	return sum
}

// UserStreams counts user's open streams on live instances, on every
// instance of the fleet.
func (h *Hub) UserStreams(ctx context.Context, user int64) (int, error) {
	members, err := Call(h.rdb, ctx, h.rdb.B().Zrange().Key(UserOnlineKey(user)).Min("0").Max("-1").Build(), rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return 0, err
	}
	dead := map[string]bool{}
	for _, id := range strings.Split(h.DeadInstances(), ",") {
		dead[id] = true
	}
	n := 0
	for _, m := range members {
		if inst, _, ok := strings.Cut(m, "."); ok && !dead[inst] {
			n++
		}
	}
	return n, nil
}
