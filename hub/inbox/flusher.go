package inbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"roomhub/hub"
	"roomhub/lua"
)

var readSettleScript = hub.NewScript(lua.ReadSettle)

// flushUsersPerShard bounds the users one flush visits per index shard; the
// rest wait for the next cycle.
const flushUsersPerShard = 1000

// maxFlushBackoff bounds how long the flusher waits after a temporary failure.
const maxFlushBackoff = 5 * time.Minute

// deadLetterTTL is how long refused reads are kept for inspection.
const deadLetterTTL = 30 * 24 * time.Hour

// FlushStats says what one flush did.
type FlushStats struct {
	Flushed int // reads the sink accepted
	Dead    int // reads the sink refused for good
	Failed  bool
}

// markPending lists user as having reads for the flusher, before the read is
// written: a crash in between leaves only an empty listing, which the flusher
// drops.
func (ib *Inbox) markPending(ctx context.Context, user int64) error {
	_, err := hub.Call(ib.rdb, ctx, ib.rdb.B().Zincrby().Key(ReadPendingKey(pendingShard(user))).Increment(1).Member(itoa(user)).Build(), hub.NoReply)
	return err
}

func pendingShard(user int64) int { return int(user % ReadPendingShards) }

// runFlusher flushes reads every WriteBehindInterval (0: never; tests call
// FlushReads), one instance at a time (lock:write-behind). After a temporary
// sink failure it waits longer each time, up to maxFlushBackoff.
func (ib *Inbox) runFlusher(ctx context.Context) {
	if ib.cfg.WriteBehindInterval <= 0 {
		return
	}
	bo := hub.Backoff{Min: 2 * ib.cfg.WriteBehindInterval, Max: maxFlushBackoff}
	ib.core.EveryUnderLock(ctx, "write-behind", ib.cfg.WriteBehindInterval, func(ctx context.Context) (time.Duration, error) {
		st, err := ib.FlushReads(ctx)
		if !st.Failed {
			bo.Reset()
			return 0, err
		}
		return bo.Next(), err
	})
}

// finalFlush is the flush Close runs: what is pending reaches the sink before
// the instance exits, unless another instance is flushing right now.
func (ib *Inbox) finalFlush(ctx context.Context) {
	lock := hub.NewLock(ib.rdb, "write-behind", ib.coreCfg.LockTTL, ib.core.Metrics())
	if ok, err := lock.Acquire(ctx); err != nil || !ok {
		return
	}
	defer func() { _, _ = lock.Release(ctx) }()
	if st, err := ib.FlushReads(ctx); err != nil {
		ib.log.Warn("final write-behind flush", "err", err)
	} else {
		ib.log.Info("final write-behind flush", "flushed", st.Flushed, "dead", st.Dead)
	}
}

// FlushReads sends every user's pending reads to the sink, up to
// WriteBehindBatchSize per user and request, and removes from Redis only what
// the sink accepted and did not change meanwhile. A temporary sink failure
// ends the flush (Failed); the reads stay for the next one. The caller holds
// the write-behind lock (or is a test).
// A flush that finds reads has a span of its own (a trace per flush).
func (ib *Inbox) FlushReads(ctx context.Context) (st FlushStats, err error) {
	var span trace.Span
	defer func() {
		if span != nil {
			span.SetAttributes(attribute.Int("roomhub.flushed", st.Flushed), attribute.Int("roomhub.dead", st.Dead))
			if err != nil || st.Failed {
				span.SetStatus(codes.Error, "the flush stopped early")
			}
			span.End()
		}
	}()
	for shard := 0; shard < ReadPendingShards; shard++ {
		key := ReadPendingKey(shard)
		users, err := hub.Call(ib.rdb, ctx, ib.rdb.B().Zrange().Key(key).Min("0").Max(itoa(flushUsersPerShard-1)).Withscores().Build(),
			rueidis.RedisResult.AsZScores)
		if err != nil {
			return st, err
		}
		if len(users) > 0 && span == nil {
			ctx, span = ib.core.Tracer().Start(ctx, "write-behind flush")
		}
		for _, z := range users {
			user, ok := hub.ParseID(z.Member)
			if !ok {
				continue
			}
			left, err := ib.flushUser(ctx, user, &st)
			if err != nil || st.Failed {
				return st, err
			}
			if left == 0 {
				score := strconv.FormatFloat(z.Score, 'f', -1, 64)
				if _, err := hub.Run(ib.rdb, ctx, zremUnchangedScript, []string{key}, []string{z.Member, score}, hub.NoReply); err != nil {
					return st, err
				}
			}
		}
	}
	return st, nil
}

// flushUser flushes one user's reads in batches and returns how many remain.
func (ib *Inbox) flushUser(ctx context.Context, user int64, st *FlushStats) (int64, error) {
	pending, err := hub.Call(ib.rdb, ctx, ib.rdb.B().Hgetall().Key(ReadStatusKey(user)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return 0, err
	}
	ids := make([]string, 0, len(pending))
	for id := range pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	left := int64(len(ids))
	for len(ids) > 0 {
		n := min(len(ids), ib.cfg.WriteBehindBatch)
		batch := make([]Read, n)
		for i, id := range ids[:n] {
			batch[i] = Read{UserID: user, NotificationID: id, ReadAt: pending[id]}
		}
		ids = ids[n:]
		sctx, cancel := context.WithTimeout(ctx, sinkTimeout)
		serr := ib.sink.Flush(sctx, batch)
		cancel()
		mode, reason := "ack", ""
		switch {
		case serr == nil:
			ib.metrics.flushes.Inc()
		case errors.Is(serr, ErrSinkRefused):
			ib.metrics.flushFailures["permanent"].Inc()
			ib.log.WarnContext(ctx, "the read sink refused reads for good; keeping them as dead letters", "user", user, "reads", n, "err", serr)
			mode, reason = "dead", strconv.Quote(serr.Error())
		default:
			ib.metrics.flushFailures["temporary"].Inc()
			ib.log.WarnContext(ctx, "the read sink failed; retrying later", "user", user, "reads", n, "err", serr)
			st.Failed = true
			return left, nil
		}
		settled, remaining, err := ib.settleReads(ctx, user, batch, mode, reason)
		if err != nil {
			return left, err
		}
		if mode == "ack" {
			st.Flushed += int(settled)
			ib.metrics.flushEntries.Add(int(settled))
		} else {
			st.Dead += int(settled)
			ib.metrics.deadLetters.Add(int(settled))
		}
		left = remaining
	}
	return left, nil
}

// settleReads runs read_settle.lua for a flushed batch.
func (ib *Inbox) settleReads(ctx context.Context, user int64, batch []Read, mode, reason string) (settled, left int64, err error) {
	args := make([]string, 0, 3+2*len(batch))
	args = append(args, mode, reason, itoa(int64(deadLetterTTL/time.Second)))
	for _, r := range batch {
		args = append(args, r.NotificationID, r.ReadAt)
	}
	rctx, cancel := hub.Detach(ctx)
	defer cancel()
	arr, err := hub.Run(ib.rdb, rctx, readSettleScript, []string{ReadStatusKey(user), ReadDeadKey(user)}, args, rueidis.RedisResult.AsIntSlice)
	if err != nil {
		return 0, 0, err
	}
	if len(arr) != 2 {
		return 0, 0, fmt.Errorf("%w: read settle answered %d values", hub.ErrRedisReply, len(arr))
	}
	return arr[0], arr[1], nil
}
