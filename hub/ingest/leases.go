package ingest

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// share keeps this instance counted, renews its leases, gives back what is
// over its share (N / live instances, rounded up) and takes free
// partitions up to it.
func (in *Ingest) share(ctx context.Context) error {
	n := in.cfg.Partitions
	ttl := in.coreCfg.LockTTL
	now := time.Now().UnixMilli()
	res := hub.DoMany(in.rdb, ctx, rueidis.Commands{
		in.rdb.B().Zadd().Key(InstancesKey).ScoreMember().ScoreMember(float64(now+ttl.Milliseconds()), in.id).Build(),
		in.rdb.B().Zremrangebyscore().Key(InstancesKey).Min("-inf").Max(strconv.FormatInt(now, 10)).Build(),
		in.rdb.B().Zcard().Key(InstancesKey).Build(),
		in.rdb.B().Pexpire().Key(InstancesKey).Milliseconds(10 * ttl.Milliseconds()).Build(),
	})
	live, err := res[2].AsInt64()
	if err != nil {
		return hub.RedisErr(err)
	}
	share := int(math.Ceil(float64(n) / float64(max(live, 1))))

	// Renew what is held; what another holder took is gone.
	held := in.ownedSorted()
	if len(held) > 0 {
		got, err := in.lease(ctx, held)
		if err != nil {
			return err
		}
		for i, p := range held {
			if !got[i] {
				delete(in.owned, p)
				in.log.Info("ingest: partition taken over by another instance", "partition", p)
			}
		}
	}
	// Give back what is over the share: another instance takes it.
	if held = in.ownedSorted(); len(held) > share {
		extra := held[share:]
		for _, p := range extra {
			delete(in.owned, p)
		}
		in.release(ctx, extra)
	}
	// Take free partitions up to the share.
	if want := share - len(in.owned); want > 0 {
		if err := in.takeFree(ctx, want); err != nil {
			in.publishOwned()
			return err
		}
		if len(in.owned) > len(held) {
			in.log.Info("ingest: consuming partitions", "partitions", in.ownedSorted(), "share", share, "instances", live)
		}
	}
	in.publishOwned()
	return nil
}

// takeFree takes up to want partitions no instance holds, starting from a
// place of its own so that instances starting together do not race for the
// same. A partition that cannot be read (its key is not a stream) is left
// to the others and reported; the rest go on.
func (in *Ingest) takeFree(ctx context.Context, want int) (failed error) {
	n := in.cfg.Partitions
	cmds := make(rueidis.Commands, n)
	for p := range n {
		cmds[p] = in.rdb.B().Exists().Key(LeaseKey(p)).Build()
	}
	var free []int
	start := int(hashOf(in.id) % uint32(n))
	exists := hub.DoMany(in.rdb, ctx, cmds)
	for i := range n {
		p := (start + i) % n
		if e, err := exists[p].AsInt64(); err == nil && e == 0 && in.owned[p] == nil && !in.unreadable[p].Load() {
			free = append(free, p)
		}
	}
	free = free[:min(len(free), want)]
	if len(free) == 0 {
		return nil
	}
	got, err := in.lease(ctx, free)
	if err != nil {
		return err
	}
	for i, p := range free {
		if !got[i] {
			continue
		}
		if err := in.ensureGroup(ctx, p); err != nil {
			in.release(ctx, []int{p})
			if wrongType(err) {
				in.markUnreadable(p, true, "taking it")
			} else {
				failed = fmt.Errorf("partition %d: %w", p, err)
			}
			continue
		}
		in.owned[p] = &partition{p: p}
		in.idle = false // read what its last holder left pending at once
	}
	return failed
}

// lease takes or renews the leases of ps, reporting which it holds.
func (in *Ingest) lease(ctx context.Context, ps []int) ([]bool, error) {
	execs := make([]rueidis.LuaExec, len(ps))
	for i, p := range ps {
		execs[i] = rueidis.LuaExec{Keys: []string{LeaseKey(p)},
			Args: []string{in.id, strconv.FormatInt(in.coreCfg.LockTTL.Milliseconds(), 10)}}
	}
	got := make([]bool, len(ps))
	for i, r := range hub.RunMany(in.rdb, ctx, leaseScript, execs) {
		v, err := r.AsInt64()
		if err != nil {
			return nil, hub.RedisErr(err)
		}
		got[i] = v == 1
	}
	return got, nil
}

// release gives the leases of ps back where this instance holds them, in
// one pipeline.
func (in *Ingest) release(ctx context.Context, ps []int) {
	execs := make([]rueidis.LuaExec, len(ps))
	for i, p := range ps {
		execs[i] = rueidis.LuaExec{Keys: []string{LeaseKey(p)}, Args: []string{in.id}}
	}
	for i, r := range hub.RunMany(in.rdb, ctx, hub.LockReleaseScript, execs) {
		if err := r.Error(); err != nil && ctx.Err() == nil {
			in.log.Warn("ingest: giving a partition back", "partition", ps[i], "err", err)
		}
	}
}

// releaseAll acknowledges what the last round finished, gives every lease
// back and leaves the instances' count, so that the others take over at
// once (on Close).
func (in *Ingest) releaseAll() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
	defer cancel()
	if err := in.sendHeld(ctx); err != nil {
		in.log.Warn("ingest: acknowledging the last entries", "err", err)
	}
	if held := in.ownedSorted(); len(held) > 0 {
		in.release(ctx, held)
		clear(in.owned)
	}
	_, _ = hub.Call(in.rdb, ctx, in.rdb.B().Zrem().Key(InstancesKey).Member(in.id).Build(), hub.NoReply)
	in.publishOwned()
}
