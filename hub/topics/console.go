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

// MaxRunningListed bounds the running fan-outs Running looks at.
const MaxRunningListed = 100

// RunningCount counts the fan-outs listed to run.
func (t *Topics) RunningCount(ctx context.Context) (int64, error) {
	return hub.Call(t.rdb, ctx, t.rdb.B().Zcard().Key(RunningKey).Build(), rueidis.RedisResult.AsInt64)
}

// Running returns the running fan-outs of topic ("": of any), oldest
// first, among the first MaxRunningListed listed.
func (t *Topics) Running(ctx context.Context, topic string) ([]Fanout, error) {
	ids, err := hub.Call(t.rdb, ctx, t.rdb.B().Zrange().Key(RunningKey).Min("0").Max(strconv.Itoa(MaxRunningListed-1)).Build(), rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return nil, err
	}
	out := []Fanout{}
	for _, id := range ids {
		f, err := t.Fanout(ctx, id)
		if errors.Is(err, hub.ErrNotFound) || errors.Is(err, hub.ErrInvalid) {
			continue // listed before its record is written, or gone meanwhile
		}
		if err != nil {
			return nil, err
		}
		if f.State == "running" && (topic == "" || f.TopicKey == topic) {
			out = append(out, f)
		}
	}
	return out, nil
}

// UserCount counts the topics user follows.
func (t *Topics) UserCount(ctx context.Context, user int64) (int64, error) {
	return hub.Call(t.rdb, ctx, t.rdb.B().Hlen().Key(UserKey(user)).Build(), rueidis.RedisResult.AsInt64)
}
