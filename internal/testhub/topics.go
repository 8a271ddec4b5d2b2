package testhub

import (
	"fmt"
	"testing"
	"time"

	"roomhub/hub/topics"
	"roomhub/internal/testredis"
)

// PlantRunningFanout writes a running fan-out of topic, as a publish and its
// first steps leave it (recipients, reached so far), whose lease another
// runner holds for a minute: no instance of the test moves it, and a test
// sets its progress (SetReached) or cancels it.
func (th *Hub) PlantRunningFanout(t testing.TB, id, topic string, recipients, reached int) {
	t.Helper()
	now := time.Now().UnixMilli()
	c := th.Redis
	testredis.Do(t, c, "SET", topics.FanoutLeaseKey(id), "a runner elsewhere", "PX", "60000")
	testredis.Do(t, c, "HSET", topics.FanoutKey(id), "topic", topic, "state", "running", "recipients", fmt.Sprint(recipients),
		"reached", fmt.Sprint(reached), "startedAt", fmt.Sprint(now), "pos", "0", "snap", "1")
	testredis.Do(t, c, "ZADD", topics.RunningKey, fmt.Sprint(now), id)
}

// SetReached moves a planted fan-out's progress.
func (th *Hub) SetReached(t testing.TB, id string, reached int) {
	t.Helper()
	testredis.Do(t, th.Redis, "HSET", topics.FanoutKey(id), "reached", fmt.Sprint(reached))
}
