package inbox

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// timersEvery is how often one instance looks for due timers: snoozed items
// wake and expired ones leave within it (and at once for whoever reads the
// inbox: every inbox script settles it first).
const timersEvery = time.Second

// timersPerShard bounds the users one pass settles per index shard; the
// rest wait for the next pass.
const timersPerShard = 1000

func timerShard(user int64) int { return int(user % TimerShards) }

// markTimer lists user for the timer worker at dueMs, before the timer is
// written: a crash in between leaves only a listing, which the worker
// settles and drops. An earlier due time already listed stays (ZADD LT).
func (ib *Inbox) markTimer(ctx context.Context, user int64, dueMs string) error {
	return ib.markTimers(ctx, []int64{user}, dueMs)
}

// runTimers settles the users whose timers are due, every timersEvery, on
// one instance at a time (lock:inbox-timers).
func (ib *Inbox) runTimers(ctx context.Context) {
	ib.core.EveryUnderLock(ctx, "inbox-timers", timersEvery, func(ctx context.Context) (time.Duration, error) {
		_, err := ib.SettleDue(ctx)
		return 0, err
	})
}

// SettleDue settles every listed user whose earliest timer is due: their
// snoozed items wake and expired ones leave, each change on their stream.
// It returns how many users it settled. The caller holds lock:inbox-timers
// (or is a test).
func (ib *Inbox) SettleDue(ctx context.Context) (int, error) {
	settled := 0
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	for shard := range TimerShards {
		key := TimersKey(shard)
		due, err := hub.Call(ib.rdb, ctx, ib.rdb.B().Zrangebyscore().Key(key).Min("-inf").Max(now).Withscores().
			Limit(0, timersPerShard).Build(), rueidis.RedisResult.AsZScores)
		if err != nil {
			return settled, err
		}
		for _, z := range due {
			user, ok := hub.ParseID(z.Member)
			if !ok {
				continue
			}
			next, err := ib.settleUser(ctx, user)
			if err != nil {
				return settled, err
			}
			settled++
			rescore := ""
			if next >= 0 {
				rescore = strconv.FormatInt(next, 10)
			}
			old := strconv.FormatFloat(z.Score, 'f', -1, 64)
			if _, err := hub.Run(ib.rdb, ctx, zremUnchangedScript, []string{key}, []string{z.Member, old, rescore}, hub.NoReply); err != nil {
				return settled, err
			}
		}
	}
	return settled, nil
}

// maxSettleRounds bounds the scripts one user's settling takes in a pass:
// each wakes or removes at most a chunk (lua/inbox_lib.lua, SETTLE_CHUNK).
const maxSettleRounds = 50

// settleUser settles user's due items, a chunk a script, until none is
// due, and returns the next due time (ms; -1 for none).
func (ib *Inbox) settleUser(ctx context.Context, user int64) (int64, error) {
	for range maxSettleRounds {
		res, err := hub.Run(ib.rdb, ctx, inboxViewScript, inboxKeys(user), ib.inboxArgs(user, hub.NowTimestamp(), "settle"),
			rueidis.RedisResult.AsIntSlice)
		if err != nil {
			return 0, err
		}
		if len(res) != 3 {
			return 0, fmt.Errorf("%w: settle answered %d values", hub.ErrRedisReply, len(res))
		}
		ib.metrics.wakes.Add(int(res[1]))
		ib.metrics.expiries.Add(int(res[2]))
		if next := res[0]; next < 0 || next > time.Now().UnixMilli() {
			return next, nil
		}
	}
	return time.Now().UnixMilli(), nil // more next pass
}

// markTimers is markTimer for many users, in one pipeline.
func (ib *Inbox) markTimers(ctx context.Context, users []int64, dueMs string) error {
	score, err := strconv.ParseFloat(dueMs, 64)
	if err != nil {
		return err
	}
	cmds := make(rueidis.Commands, len(users))
	for i, u := range users {
		cmds[i] = ib.rdb.B().Zadd().Key(TimersKey(timerShard(u))).Lt().ScoreMember().ScoreMember(score, itoa(u)).Build()
	}
	return hub.CallMany(ib.rdb, ctx, cmds)
}
