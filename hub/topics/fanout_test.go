package topics_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/hub/topics"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// rig is one instance's topics and inbox on a Redis, its core not started
// until start: what a fan-out needs, without HTTP.
type rig struct {
	h   *hub.Hub
	ib  *inbox.Inbox
	tp  *topics.Topics
	rdb rueidis.Client
}

// newRig is an instance on rdb whose leases last ttl (0: the default).
func newRig(t *testing.T, rdb rueidis.Client, ttl time.Duration) *rig {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := hub.DefaultConfig()
	if ttl > 0 {
		cfg.LockTTL = ttl
	}
	h := hub.New(cfg, rdb, log, hub.NewMetrics(nil))
	ib := inbox.New(h, inbox.DefaultConfig(), log)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testhub.Wait)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("the instance did not stop: %v", err) // its runners included
		}
	})
	return &rig{h: h, ib: ib, tp: topics.New(h, ib, topics.DefaultConfig(), log), rdb: rdb}
}

// notice is a published event of room at ms, as a fan-out keeps it.
func notice(t *testing.T, room, ms int64) inbox.Notice {
	t.Helper()
	n, err := inbox.DecodeNotice(fmt.Sprintf(`{"r":%d,"i":"%d-0","t":"comment.created","d":{"n":1},"ts":"2026-12-07T00:00:00.000Z","o":{}}`, room, ms))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// follow makes users from..to follow topic.
func (r *rig) follow(t *testing.T, topic string, from, to int64) {
	t.Helper()
	for lo := from; lo <= to; lo += topics.MaxIDs {
		var ids []int64
		for u := lo; u <= min(to, lo+topics.MaxIDs-1); u++ {
			ids = append(ids, u)
		}
		if _, _, err := r.tp.Follow(context.Background(), topic, ids, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// holders are the users of from..to whose inbox holds notification nid.
func (r *rig) holders(t *testing.T, nid string, from, to int64) map[int64]bool {
	t.Helper()
	cmds := make(rueidis.Commands, 0, to-from+1)
	for u := from; u <= to; u++ {
		cmds = append(cmds, r.rdb.B().Hexists().Key(inbox.ItemsKey(u)).Field(nid).Build())
	}
	out := map[int64]bool{}
	for i, res := range r.rdb.DoMulti(context.Background(), cmds...) {
		has, err := res.AsBool()
		if err != nil {
			t.Fatal(err)
		}
		if has {
			out[from+int64(i)] = true
		}
	}
	return out
}

// unread is user's unread count, which counts each item once.
func (r *rig) unread(t *testing.T, user int64) int64 {
	t.Helper()
	n, err := r.ib.Unread(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitState waits until fan-out id is in state, and returns it.
func (r *rig) waitState(t *testing.T, id, state string) topics.Fanout {
	t.Helper()
	var f topics.Fanout
	testhub.Eventually(t, testhub.Wait, "the fan-out "+state, func() bool {
		var err error
		f, err = r.tp.Fanout(context.Background(), id)
		return err == nil && f.State == state
	})
	return f
}

// The recipients are the followers when the publish was accepted, but the
// skipped: one who follows later gets nothing, one who leaves before their
// turn gets nothing, and every other one gets the item once. The answer
// counts them exactly, the direct recipients with them.
func TestFanout_SnapshotRule(t *testing.T) {
	r := newRig(t, testredis.Client(t, testredis.Start(t).Addr()), 0)
	ctx := context.Background()
	r.follow(t, "product:1", 1, 3000)
	n := notice(t, 9, time.Now().UnixMilli())
	// 10 is excluded; 20 and 5000 are direct recipients (20 follows, 5000 does not)
	got, err := r.tp.Start(ctx, n, "product:1", []int64{10, 20, 5000}, 2)
	if err != nil || got != 3000-2+2 {
		t.Fatalf("recipients %d, %v; want 3000", got, err)
	}
	if again, err := r.tp.Start(ctx, n, "product:1", []int64{10, 20, 5000}, 2); err != nil || again != got {
		t.Fatalf("a repeat answered %d, %v", again, err)
	}
	r.follow(t, "product:1", 3001, 3100) // after the publish
	if _, _, err := r.tp.Unfollow(ctx, "product:1", []int64{2000}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.tp.Unfollow(ctx, "product:1", []int64{2500}); err != nil {
		t.Fatal(err)
	}
	r.follow(t, "product:1", 2500, 2500) // left and came back: a later follow
	r.h.Start()
	f := r.waitState(t, n.ID(), topics.StateDone)
	has := r.holders(t, n.ID(), 1, 3100)
	for u := int64(1); u <= 3100; u++ {
		want := u <= 3000 && u != 10 && u != 20 && u != 2000 && u != 2500
		if has[u] != want {
			t.Fatalf("user %d holds the item: %v, want %v", u, has[u], want)
		}
	}
	if f.Recipients != 3000 || f.Reached != 2+int64(len(has)) || f.FinishedAt == nil {
		t.Fatalf("done: %+v (%d followers reached)", f, len(has))
	}
	if u := r.unread(t, 1); u != 1 {
		t.Fatalf("user 1 has %d unread", u)
	}
}

// A topic nobody follows (but the skipped) answers the direct recipients
// alone, and is done at once.
func TestFanout_NoFollowersIsDoneAtOnce(t *testing.T) {
	r := newRig(t, testredis.Client(t, testredis.Start(t).Addr()), 0)
	ctx := context.Background()
	r.follow(t, "issue:42", 7, 7)
	n := notice(t, 9, time.Now().UnixMilli())
	if got, err := r.tp.Start(ctx, n, "issue:42", []int64{7}, 0); err != nil || got != 0 {
		t.Fatalf("recipients %d, %v", got, err)
	}
	f, err := r.tp.Fanout(ctx, n.ID())
	if err != nil || f.State != topics.StateDone || f.Recipients != 0 || f.FinishedAt == nil {
		t.Fatalf("%+v, %v", f, err)
	}
	if n, err := r.rdb.Do(ctx, r.rdb.B().Zcard().Key(topics.RunningKey).Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("%d fan-outs listed to run, %v", n, err)
	}
}

// A cancel mid-way: the followers reached before it keep the item, nobody
// after gets it, and the fan-out ends canceled with reached exact.
func TestFanout_CancelMidway(t *testing.T) {
	r := newRig(t, testredis.Client(t, testredis.Start(t).Addr()), 0)
	ctx := context.Background()
	r.follow(t, "product:1", 1, 1000)
	steps := make(chan struct{})
	r.tp.Steps(100, func(ctx context.Context, _ string) {
		select {
		case <-steps:
		case <-ctx.Done():
		}
	})
	n := notice(t, 9, time.Now().UnixMilli())
	if _, err := r.tp.Start(ctx, n, "product:1", nil, 0); err != nil {
		t.Fatal(err)
	}
	r.h.Start()
	for range 4 {
		steps <- struct{}{}
	}
	testhub.Eventually(t, testhub.Wait, "four steps recorded", func() bool {
		f, err := r.tp.Fanout(ctx, n.ID())
		return err == nil && f.Reached == 400
	})
	f, err := r.tp.Cancel(ctx, n.ID()) // while the fifth step waits to begin
	if err != nil || f.State != topics.StateCanceled || f.FinishedAt == nil || f.Reached != 400 {
		t.Fatalf("cancel: %+v, %v", f, err)
	}
	close(steps) // the runner may go on: it must not
	testhub.Eventually(t, testhub.Wait, "the runner lets go", func() bool {
		n, err := r.rdb.Do(ctx, r.rdb.B().Exists().Key("fanout:lease:{f:"+n.ID()+"}").Build()).AsInt64()
		return err == nil && n == 0
	})
	has := r.holders(t, n.ID(), 1, 1000)
	f, _ = r.tp.Fanout(ctx, n.ID())
	if len(has) != 400 || f.Reached != 400 || f.State != topics.StateCanceled {
		t.Fatalf("%d hold the item after the cancel; %+v", len(has), f)
	}
	for u := int64(1); u <= int64(len(has)); u++ { // the first ones, in id order
		if !has[u] {
			t.Fatalf("user %d was passed over", u)
		}
	}
	if again, err := r.tp.Cancel(ctx, n.ID()); err != nil || again.State != topics.StateCanceled || again.Reached != f.Reached {
		t.Fatalf("a second cancel: %+v, %v", again, err)
	}
}

// An instance that stops mid-way (its runner stuck, its lease left to
// lapse) is taken over by another from the last recorded step; when the
// first wakes, its step records nothing, and every follower has the item
// once.
func TestFanout_TakenOverWhenItsRunnerStops(t *testing.T) {
	srv := testredis.Start(t)
	a := newRig(t, testredis.Client(t, srv.Addr()), time.Second)
	b := newRig(t, testredis.Client(t, srv.Addr()), time.Second)
	ctx := context.Background()
	a.follow(t, "product:1", 1, 1000)
	stuck, wake := make(chan struct{}), make(chan struct{})
	steps := 0
	a.tp.Steps(100, func(ctx context.Context, _ string) {
		if steps++; steps == 3 { // two steps recorded, then stuck
			close(stuck)
			select {
			case <-wake:
			case <-ctx.Done():
			}
		}
	})
	n := notice(t, 9, time.Now().UnixMilli())
	if _, err := a.tp.Start(ctx, n, "product:1", nil, 0); err != nil {
		t.Fatal(err)
	}
	a.h.Start()
	<-stuck
	b.h.Start()
	f := b.waitState(t, n.ID(), topics.StateDone)
	close(wake) // a goes on from where it was: its step must count nothing
	testhub.Eventually(t, testhub.Wait, "the stuck runner lets go", func() bool {
		return testhub.MetricValueOf(t, a.h.Metrics().Set, "topic_fanouts_running") == "0"
	})
	if f.Reached != 1000 || f.Recipients != 1000 {
		t.Fatalf("done: %+v", f)
	}
	if f, _ := b.tp.Fanout(ctx, n.ID()); f.Reached != 1000 {
		t.Fatalf("after the stuck runner's step: %+v", f)
	}
	for u := int64(1); u <= 1000; u++ {
		if got := b.unread(t, u); got != 1 {
			t.Fatalf("user %d has %d unread", u, got)
		}
	}
}

// On a Redis Cluster, where the topic, the fan-out and each follower's
// inbox live in other slots, every follower gets the item once; a delete
// empties the topic and cleans the people's lists.
func TestFanout_Cluster(t *testing.T) {
	cl := testredis.StartCluster(t)
	r := newRig(t, testredis.Client(t, cl.Addrs()...), 0)
	ctx := context.Background()
	r.follow(t, "product:1", 1, 600)
	r.tp.Steps(128, nil)
	r.h.Start()
	n := notice(t, 9, time.Now().UnixMilli())
	if got, err := r.tp.Start(ctx, n, "product:1", []int64{3, 700}, 1); err != nil || got != 600 {
		t.Fatalf("recipients %d, %v", got, err)
	}
	f := r.waitState(t, n.ID(), topics.StateDone)
	has := r.holders(t, n.ID(), 1, 600)
	if len(has) != 599 || has[3] || f.Reached != 600 {
		t.Fatalf("%d hold the item (3: %v); %+v", len(has), has[3], f)
	}
	// a delete: the topic empty at once, the people's lists cleaned after
	if removed, err := r.tp.Delete(ctx, "product:1"); err != nil || removed != 600 {
		t.Fatalf("delete: %d, %v", removed, err)
	}
	if ids, n, _, err := r.tp.Followers(ctx, "product:1", 0, 10); err != nil || len(ids) != 0 || n != 0 {
		t.Fatalf("after the delete: %v %d %v", ids, n, err)
	}
	testhub.Eventually(t, testhub.Wait, "the people's lists cleaned", func() bool {
		for _, u := range []int64{1, 300, 600} {
			if page, _, err := r.tp.Of(ctx, u, "", 10); err != nil || len(page) != 0 {
				return false
			}
		}
		return true
	})
}

// Redis restarted with AOF mid-way: the fan-out goes on from its recorded
// step, and every follower has the item once.
func TestFanout_RedisRestartWithAOF(t *testing.T) {
	srv := testredis.StartWith(t, "--appendonly", "yes", "--appendfsync", "always")
	r := newRig(t, testredis.Client(t, srv.Addr()), 0)
	ctx := context.Background()
	r.follow(t, "product:1", 1, 1000)
	atThird, goOn := make(chan struct{}), make(chan struct{})
	steps := 0
	r.tp.Steps(100, func(ctx context.Context, _ string) {
		if steps++; steps == 3 {
			close(atThird)
			select {
			case <-goOn:
			case <-ctx.Done():
			}
		}
	})
	n := notice(t, 9, time.Now().UnixMilli())
	if _, err := r.tp.Start(ctx, n, "product:1", nil, 0); err != nil {
		t.Fatal(err)
	}
	r.h.Start()
	<-atThird
	srv.Restart()
	close(goOn)
	f := r.waitState(t, n.ID(), topics.StateDone)
	if f.Reached != 1000 {
		t.Fatalf("done: %+v", f)
	}
	for u := int64(1); u <= 1000; u++ {
		if got := r.unread(t, u); got != 1 {
			t.Fatalf("user %d has %d unread", u, got)
		}
	}
}
