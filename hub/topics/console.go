package topics

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// What the operator's console reads of topics: the fan-outs running, and
// how many topics a person follows.

// RunningCount counts the fan-outs listed to run.
func (t *Topics) RunningCount(ctx context.Context) (int64, error) {
	return hub.Call(t.rdb, ctx, t.rdb.B().Zcard().Key(RunningKey).Build(), rueidis.RedisResult.AsInt64)
}

// Running returns the running fan-outs of topic ("": of any), oldest
// first, among the first listedAtOnce listed, their records read in one
// pipeline.
func (t *Topics) Running(ctx context.Context, topic string) ([]Fanout, error) {
	ids, err := hub.Call(t.rdb, ctx, t.rdb.B().Zrange().Key(RunningKey).Min("0").Max(strconv.Itoa(listedAtOnce-1)).Build(), rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return nil, err
	}
	cmds := make(rueidis.Commands, 0, len(ids))
	listed := ids[:0]
	for _, id := range ids {
		if _, err := CheckFanoutID(id); err == nil {
			cmds, listed = append(cmds, t.fanoutRead(id)), append(listed, id)
		}
	}
	out := []Fanout{}
	for i, r := range hub.DoMany(t.rdb, ctx, cmds) {
		v, err := r.ToArray()
		if err != nil {
			return nil, hub.RedisErr(err)
		}
		f, err := readFanout(listed[i], v)
		if errors.Is(err, hub.ErrNotFound) {
			continue // listed before its record is written, or gone meanwhile
		}
		if f.State == StateRunning && (topic == "" || f.TopicKey == topic) {
			out = append(out, f)
		}
	}
	return out, nil
}

// UserCount counts the topics user follows.
func (t *Topics) UserCount(ctx context.Context, user int64) (int64, error) {
	return hub.Call(t.rdb, ctx, t.rdb.B().Hlen().Key(UserKey(user)).Build(), rueidis.RedisResult.AsInt64)
}
