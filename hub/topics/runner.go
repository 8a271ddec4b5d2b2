package topics

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/redis/rueidis"
	"golang.org/x/sync/errgroup"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/lua"
)

var (
	walkScript       = hub.NewScript(lua.TopicWalk)
	fanoutStepScript = hub.NewScript(lua.FanoutStep)
	leaseScript      = hub.NewScript(lua.Lease)
)

// The runner's bounds. Each instance looks at the listed fan-outs every
// pollEvery (at once when it starts one), and runs at most runsAtOnce of
// them, each a step at a time: stepFollowers followers looked at (a few
// topic chunks, well under a millisecond of Redis), then their inbox
// writes (the inbox's bounded calls), then the step recorded. One listed
// fan-out without a record for staleAfter is dropped from the list (its
// start failed; a retry of the publish lists it again).
const (
	pollEvery     = time.Second
	runsAtOnce    = 4
	listedAtOnce  = 100
	stepFollowers = 1000
	staleAfter    = 10 * time.Minute
	stepLanes     = 2
)

// runner runs fan-outs on this instance: each listed fan-out is run by the
// instance holding its lease, which every step renews; one that dies
// leaves its lease to lapse (LOCK_TTL_SECS), and another instance's next
// look takes it over from its last recorded step.
type runner struct {
	owner   string        // this instance's name on leases
	wakeC   chan struct{} // a fan-out was started here
	mu      sync.Mutex
	mine    map[string]bool // fan-outs this instance runs now
	reached *metrics.Counter
	seconds *metrics.Histogram
	step    int // followers a step looks at: stepFollowers
	// beforeStep, when set (tests), runs before each step of fan-out id.
	beforeStep func(ctx context.Context, id string)
}

func newRunner(set *metrics.Set) *runner {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	r := &runner{owner: hex.EncodeToString(b), wakeC: make(chan struct{}, 1), mine: map[string]bool{}, step: stepFollowers,
		reached: set.NewCounter("topic_fanout_recipients_total"), seconds: set.NewHistogram("topic_fanout_seconds")}
	set.NewGauge("topic_fanouts_running", func() float64 {
		r.mu.Lock()
		defer r.mu.Unlock()
		return float64(len(r.mine))
	})
	return r
}

// wake has the runner look at the list now.
func (r *runner) wake() {
	select {
	case r.wakeC <- struct{}{}:
	default:
	}
}

// runFanouts looks at the listed fan-outs every pollEvery, and when woken,
// until ctx ends; the fan-outs it takes run in goroutines of the core.
func (t *Topics) runFanouts(ctx context.Context) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if err := t.takeFanouts(ctx); err != nil && ctx.Err() == nil {
			t.log.Warn("looking for fan-outs to run", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-t.run.wakeC:
		}
	}
}

// takeFanouts takes the lease of each listed fan-out it has room for and
// nobody holds, oldest first, and runs it.
func (t *Topics) takeFanouts(ctx context.Context) error {
	ids, err := hub.Call(t.rdb, ctx, t.rdb.B().Zrange().Key(RunningKey).Min("0").Max(strconv.Itoa(listedAtOnce-1)).Build(),
		rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return err
	}
	for _, id := range ids {
		t.run.mu.Lock()
		skip := t.run.mine[id] || len(t.run.mine) >= runsAtOnce
		t.run.mu.Unlock()
		if skip {
			continue
		}
		ok, err := hub.Run(t.rdb, ctx, leaseScript, []string{FanoutLeaseKey(id)},
			[]string{t.run.owner, strconv.FormatInt(t.coreCfg.LockTTL.Milliseconds(), 10)}, rueidis.RedisResult.AsBool)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		t.run.mu.Lock()
		t.run.mine[id] = true
		t.run.mu.Unlock()
		if !t.core.Go(func(ctx context.Context) { t.runFanout(ctx, id) }) {
			t.dropMine(id)
		}
	}
	return nil
}

func (t *Topics) dropMine(id string) {
	t.run.mu.Lock()
	delete(t.run.mine, id)
	t.run.mu.Unlock()
}

// fanoutRun is a fan-out as its runner reads it from its record.
type fanoutRun struct {
	id, topic string
	snap, pos int64
	started   int64 // ms
	notice    inbox.Notice
	skip      map[int64]bool
}

// runFanout runs fan-out id, whose lease this instance holds, step by
// step from its record's position until it is done, canceled, or its
// lease lost; then it gives the lease back. A failing step is tried again
// with a backoff; ctx's end (the instance closing) leaves the fan-out to
// the next instance.
func (t *Topics) runFanout(ctx context.Context, id string) {
	defer t.dropMine(id)
	defer func() {
		rctx, cancel := hub.Detach(ctx)
		_, _ = hub.Run(t.rdb, rctx, hub.LockReleaseScript, []string{FanoutLeaseKey(id)}, []string{t.run.owner}, hub.NoReply)
		cancel()
	}()
	var f *fanoutRun
	var b hub.Backoff
	for ctx.Err() == nil {
		var err error
		if f == nil {
			f, err = t.loadFanout(ctx, id)
			if err == nil && f == nil {
				return // not to be run
			}
		}
		if err == nil {
			var over bool
			if over, err = t.fanoutStep(ctx, f); err == nil && over {
				return
			}
		}
		if err == nil {
			b.Reset()
			continue
		}
		if ctx.Err() == nil {
			t.log.Warn("a fan-out's step failed; trying again", "fanout", id, "err", err)
		}
		b.Wait(ctx)
	}
}

// loadFanout reads fan-out id's record to run it: nil when it is not to be
// run (finished, or never recorded), and unlisted then.
func (t *Topics) loadFanout(ctx context.Context, id string) (*fanoutRun, error) {
	rec, err := hub.Call(t.rdb, ctx, t.rdb.B().Hgetall().Key(FanoutKey(id)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return nil, err
	}
	if rec["state"] == StateRunning {
		n, err := inbox.DecodeNotice(rec["notice"])
		if err != nil {
			return nil, err
		}
		f := &fanoutRun{id: id, topic: rec["topic"], notice: n, skip: map[int64]bool{}}
		f.snap, _ = strconv.ParseInt(rec["snap"], 10, 64)
		f.pos, _ = strconv.ParseInt(rec["pos"], 10, 64)
		f.started, _ = strconv.ParseInt(rec["startedAt"], 10, 64)
		for _, u := range hub.ParseIDs(rec["skip"]) {
			f.skip[u] = true
		}
		return f, nil
	}
	if len(rec) == 0 { // its start may be under way: unlisted only when stale
		score, err := hub.Call(t.rdb, ctx, t.rdb.B().Zscore().Key(RunningKey).Member(id).Build(), rueidis.RedisResult.AsFloat64)
		if err != nil || time.Since(time.UnixMilli(int64(score))) < staleAfter {
			return nil, nil
		}
	}
	return nil, t.unlist(ctx, id)
}

// fanoutStep runs f's next step: the next followers walked, the
// recipients among them given the item, the step recorded. over: the
// fan-out has ended here (done, canceled, or taken over).
func (t *Topics) fanoutStep(ctx context.Context, f *fanoutRun) (over bool, err error) {
	if t.run.beforeStep != nil {
		t.run.beforeStep(ctx, f.id)
	}
	// canceled since the last step: nobody more gets the item
	state, err := hub.Call(t.rdb, ctx, t.rdb.B().Hget().Key(FanoutKey(f.id)).Field("state").Build(), rueidis.RedisResult.ToString)
	if err != nil && !errors.Is(err, rueidis.Nil) {
		return false, err
	}
	if state != StateRunning {
		err := t.unlist(ctx, f.id)
		return err == nil, err
	}
	res, err := hub.Run(t.rdb, ctx, walkScript, topicKeys(f.topic), []string{
		strconv.FormatInt(f.pos, 10), strconv.FormatInt(f.snap, 10), strconv.Itoa(t.run.step),
	}, rueidis.RedisResult.AsIntSlice)
	if err != nil {
		return false, err
	}
	if len(res) < 2 {
		return false, fmt.Errorf("%w: a fan-out's walk answered %d values", hub.ErrRedisReply, len(res))
	}
	more, last := res[0] == 1, res[1]
	users := make([]int64, 0, len(res)-2)
	for _, u := range res[2:] {
		if !f.skip[u] {
			users = append(users, u)
		}
	}
	if err := t.deliver(ctx, f.notice, users); err != nil {
		return false, err
	}
	state, err = hub.Run(t.rdb, ctx, fanoutStepScript, []string{FanoutKey(f.id), FanoutLeaseKey(f.id)}, []string{
		t.run.owner, strconv.FormatInt(t.coreCfg.LockTTL.Milliseconds(), 10),
		strconv.FormatInt(f.pos, 10), strconv.FormatInt(last, 10), strconv.Itoa(len(users)), boolArg(!more),
		strconv.FormatInt(time.Now().UnixMilli(), 10), t.keepMs(),
	}, rueidis.RedisResult.ToString)
	if err != nil {
		return false, err
	}
	if state != "lost" {
		t.run.reached.Add(len(users))
	}
	switch state {
	case StateRunning:
		f.pos = last
		return false, nil
	case StateDone:
		t.run.seconds.Update(time.Since(time.UnixMilli(f.started)).Seconds())
		fallthrough
	case StateCanceled:
		err := t.unlist(ctx, f.id)
		return err == nil, err
	}
	return true, nil // lost: another instance goes on
}

// deliver gives n to users, stepLanes parts side by side: each part's
// calls wait on the one before (the inbox's pipeline), so that with two
// Redis always has the next call while the hub reads an answer.
func (t *Topics) deliver(ctx context.Context, n inbox.Notice, users []int64) error {
	var g errgroup.Group
	size := (len(users) + stepLanes - 1) / stepLanes
	for lo := 0; lo < len(users); lo += size {
		part := users[lo:min(lo+size, len(users))]
		g.Go(func() error { return t.ib.DeliverTo(ctx, n, part) })
	}
	return g.Wait()
}
