package delivery

import (
	"cmp"
	"context"
	"slices"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// What the operator's console reads of deliveries: a person's latest, and
// how many died.

// MaxRecent bounds the records OfUser returns.
const MaxRecent = 50

// OfUser returns user's latest deliveries, newest first (by their last
// change), at most MaxRecent: the finished ones last touched and the
// pending ones first due.
func (d *Delivery) OfUser(ctx context.Context, user int64) ([]Record, error) {
	res := hub.DoMany(d.rdb, ctx, rueidis.Commands{
		d.rdb.B().Zrevrange().Key(DoneKey(user)).Start(0).Stop(MaxRecent - 1).Build(),
		d.rdb.B().Zrange().Key(DueKey(user)).Min("0").Max(itoa(MaxRecent - 1)).Build(),
	})
	var rids []string
	for _, r := range res {
		ids, err := r.AsStrSlice()
		if err != nil {
			return nil, hub.RedisErr(err)
		}
		rids = append(rids, ids...)
	}
	out := []Record{}
	if len(rids) == 0 {
		return out, nil
	}
	raws, err := hub.Call(d.rdb, ctx, d.rdb.B().Hmget().Key(RecordsKey(user)).Field(rids...).Build(), rueidis.RedisResult.ToArray)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, r := range raws {
		raw, err := r.ToString()
		if err != nil || seen[rids[i]] { // nil: dropped meanwhile
			continue
		}
		seen[rids[i]] = true
		if rec, ok := d.record(user, rids[i], raw); ok {
			out = append(out, rec)
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int { return cmp.Compare(b.UpdatedAt, a.UpdatedAt) })
	return out[:min(len(out), MaxRecent)], nil
}

// DeadCount counts the dead deliveries of every user.
func (d *Delivery) DeadCount(ctx context.Context) (int64, error) {
	cmds := make(rueidis.Commands, Shards)
	for i := range Shards {
		cmds[i] = d.rdb.B().Zcard().Key(DeadIndexKey(i)).Build()
	}
	return hub.SumMany(d.rdb, ctx, cmds)
}
