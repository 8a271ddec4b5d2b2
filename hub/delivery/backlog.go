package delivery

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// runBacklog keeps the backlog gauges: index entries already due, and how
// long the oldest has waited.
func (d *Delivery) runBacklog(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		d.measureBacklog(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d *Delivery) measureBacklog(ctx context.Context) {
	now := time.Now().UnixMilli()
	cmds := make(rueidis.Commands, 0, 2*Shards)
	for shard := range Shards {
		key := DueIndexKey(shard)
		cmds = append(cmds, d.rdb.B().Zcount().Key(key).Min("-inf").Max(itoa(now)).Build(),
			d.rdb.B().Zrange().Key(key).Min("0").Max("0").Withscores().Build())
	}
	var total, oldest int64
	for i, r := range hub.DoMany(d.rdb, ctx, cmds) {
		if i%2 == 0 {
			n, err := r.AsInt64()
			if err != nil {
				return // unknown: the gauges keep their last values
			}
			total += n
			continue
		}
		zs, err := r.AsZScores()
		if err != nil {
			return
		}
		if len(zs) > 0 && now-int64(zs[0].Score) > oldest {
			oldest = now - int64(zs[0].Score)
		}
	}
	d.due.Store(total)
	d.oldest.Store(oldest)
}
