package hub

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"roomhub/lua"
)

var readSettleScript = rueidis.NewLuaScript(lua.ReadSettle)

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
func (h *Hub) markPending(ctx context.Context, user int64) error {
	_, err := call(h, ctx, h.rdb.B().Zincrby().Key(ReadPendingKey(pendingShard(user))).Increment(1).Member(itoa(user)).Build(), done)
	return err
}

func pendingShard(user int64) int { return int(user % readPendingShards) }

// runFlusher flushes reads every WriteBehindInterval (0: never; tests call
// FlushReads), one instance at a time (lock:write-behind). After a temporary
// sink failure it waits longer each time, up to maxFlushBackoff.
func (h *Hub) runFlusher(ctx context.Context) {
	if h.cfg.WriteBehindInterval <= 0 {
		return
	}
	var backoff time.Duration
	h.everyUnderLock(ctx, "write-behind", h.cfg.WriteBehindInterval, func(ctx context.Context) (time.Duration, error) {
		st, err := h.FlushReads(ctx)
		if st.Failed {
			backoff = min(max(2*backoff, h.cfg.WriteBehindInterval), maxFlushBackoff)
		} else {
			backoff = 0
		}
		return backoff, err
	})
}

// finalFlush is the flush Close runs: what is pending reaches the sink before
// the instance exits, unless another instance is flushing right now.
func (h *Hub) finalFlush(ctx context.Context) {
	lock := NewLock(h.rdb, "write-behind", h.cfg.LockTTL, h.metrics)
	if ok, err := lock.Acquire(ctx); err != nil || !ok {
		return
	}
	defer func() { _, _ = lock.Release(ctx) }()
	if st, err := h.FlushReads(ctx); err != nil {
		h.log.Warn("final write-behind flush", "err", err)
	} else {
		h.log.Info("final write-behind flush", "flushed", st.Flushed, "dead", st.Dead)
	}
}

// FlushReads sends every user's pending reads to the sink, up to
// WriteBehindBatchSize per user and request, and removes from Redis only what
// the sink accepted and did not change meanwhile. A temporary sink failure
// ends the flush (Failed); the reads stay for the next one. The caller holds
// the write-behind lock (or is a test).
func (h *Hub) FlushReads(ctx context.Context) (FlushStats, error) {
	var st FlushStats
	for shard := 0; shard < readPendingShards; shard++ {
		key := ReadPendingKey(shard)
		users, err := call(h, ctx, h.rdb.B().Zrange().Key(key).Min("0").Max(itoa(flushUsersPerShard-1)).Withscores().Build(),
			rueidis.RedisResult.AsZScores)
		if err != nil {
			return st, err
		}
		for _, z := range users {
			user, ok := parseRoomID(z.Member)
			if !ok {
				continue
			}
			left, err := h.flushUser(ctx, user, &st)
			if err != nil || st.Failed {
				return st, err
			}
			if left == 0 {
				score := strconv.FormatFloat(z.Score, 'f', -1, 64)
				if _, err := run(h, ctx, zremUnchangedScript, []string{key}, []string{z.Member, score}, done); err != nil {
					return st, err
				}
			}
		}
	}
	return st, nil
}

// flushUser flushes one user's reads in batches and returns how many remain.
func (h *Hub) flushUser(ctx context.Context, user int64, st *FlushStats) (int64, error) {
	pending, err := call(h, ctx, h.rdb.B().Hgetall().Key(ReadStatusKey(user)).Build(), rueidis.RedisResult.AsStrMap)
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
		n := min(len(ids), h.cfg.WriteBehindBatchSize)
		batch := make([]Read, n)
		for i, id := range ids[:n] {
			batch[i] = Read{UserID: user, NotificationID: id, ReadAt: pending[id]}
		}
		ids = ids[n:]
		sctx, cancel := context.WithTimeout(ctx, sinkTimeout)
		serr := h.sink.Flush(sctx, batch)
		cancel()
		mode, reason := "ack", ""
		switch {
		case serr == nil:
			h.metrics.FlushTotal.Inc()
		case errors.Is(serr, ErrSinkRefused):
			h.metrics.FlushFailures["permanent"].Inc()
			h.log.Warn("the read sink refused reads for good; keeping them as dead letters", "user", user, "reads", n, "err", serr)
			mode, reason = "dead", strconv.Quote(serr.Error())
		default:
			h.metrics.FlushFailures["temporary"].Inc()
			h.log.Warn("the read sink failed; retrying later", "user", user, "reads", n, "err", serr)
			st.Failed = true
			return left, nil
		}
		settled, remaining, err := h.settleReads(ctx, user, batch, mode, reason)
		if err != nil {
			return left, err
		}
		if mode == "ack" {
			st.Flushed += int(settled)
			h.metrics.FlushEntries.Add(int(settled))
		} else {
			st.Dead += int(settled)
			h.metrics.DeadLetters.Add(int(settled))
		}
		left = remaining
	}
	return left, nil
}

// settleReads runs read_settle.lua for a flushed batch.
func (h *Hub) settleReads(ctx context.Context, user int64, batch []Read, mode, reason string) (settled, left int64, err error) {
	args := make([]string, 0, 3+2*len(batch))
	args = append(args, mode, reason, itoa(int64(deadLetterTTL/time.Second)))
	for _, r := range batch {
		args = append(args, r.NotificationID, r.ReadAt)
	}
	rctx, cancel := detach(ctx)
	defer cancel()
	arr, err := run(h, rctx, readSettleScript, []string{ReadStatusKey(user), ReadDeadKey(user)}, args, rueidis.RedisResult.AsIntSlice)
	if err != nil {
		return 0, 0, err
	}
	if len(arr) != 2 {
		return 0, 0, fmt.Errorf("%w: read settle answered %d values", ErrRedisReply, len(arr))
	}
	return arr[0], arr[1], nil
}
