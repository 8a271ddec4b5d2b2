package inbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func pendingReads(t testing.TB, th *testhub.Hub, users ...int64) int64 {
	t.Helper()
	var n int64
	for _, u := range users {
		k, _ := testredis.Do(t, th.Redis, "HLEN", inbox.ReadStatusKey(u)).AsInt64()
		n += k
	}
	return n
}

func noBackgroundFlush(sink string) func(*testhub.Configs) {
	return func(c *testhub.Configs) {
		c.Inbox.ReadSinkURL, c.Inbox.WriteBehindInterval, c.Inbox.WriteBehindBatch = sink, 0, 3
	}
}

func TestFlusher_EachReadReachesTheSinkOnceThenRedisIsEmpty(t *testing.T) {
	rs := testredis.Start(t)
	sink := testhub.StartSink(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.Start(t, rs.Addr(), noBackgroundFlush(sink.URL))
	for i := 0; i < 4; i++ {
		th.Notify(t, 100, "comment.created", 40, 41)
	}
	want := append(th.ReadEach(t, 40), th.ReadEach(t, 41)...)
	th.UserDo(t, http.MethodPost, "/api/v1/notifications/read-all", 41, "") // nothing left: no change
	st, err := th.Inbox.FlushReads(context.Background())
	if err != nil || st.Flushed != 8 || st.Failed {
		t.Fatalf("flush: %+v %v", st, err)
	}
	sort.Strings(want)
	if got := sink.Accepted(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sink got %v, want %v", got, want)
	}
	if sink.Reqs.Load() != 4 || sink.BadKey.Load() != 0 { // batches of 3: 3+1 per user
		t.Fatalf("%d requests (%d without the internal key), want 4 with it", sink.Reqs.Load(), sink.BadKey.Load())
	}
	if n := pendingReads(t, th, 40, 41); n != 0 {
		t.Fatalf("%d reads still pending after the flush", n)
	}
	for s := 0; s < 16; s++ {
		if n, _ := testredis.Do(t, th.Redis, "ZCARD", inbox.ReadPendingKey(s)).AsInt64(); n != 0 {
			t.Fatalf("read_pending shard %d still lists %d users", s, n)
		}
	}
	if entries, flushes := testhub.MetricValue(t, th, "write_behind_flush_entries"), testhub.MetricValue(t, th, "write_behind_flush_total"); entries != "8" || flushes != "4" {
		t.Fatalf("metrics: entries %s, flushes %s", entries, flushes)
	}
}

func TestFlusher_SinkDownLosesNothingAndRefusalsBecomeDeadLetters(t *testing.T) {
	rs := testredis.Start(t)
	sink := testhub.StartSink(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.Start(t, rs.Addr(), noBackgroundFlush(sink.URL))
	th.Notify(t, 101, "comment.created", 42)
	th.Notify(t, 101, "comment.created", 42)
	want := th.ReadEach(t, 42)
	sink.Status.Store(500)
	for i := 0; i < 3; i++ {
		if st, err := th.Inbox.FlushReads(context.Background()); err != nil || !st.Failed {
			t.Fatalf("flush into a failing sink: %+v %v", st, err)
		}
	}
	// A read arriving between failed flushes is not lost either.
	th.Notify(t, 101, "comment.created", 42)
	want = append(want, th.ReadEach(t, 42)[0])
	sink.Status.Store(200)
	if st, err := th.Inbox.FlushReads(context.Background()); err != nil || st.Flushed != 3 {
		t.Fatalf("flush after the sink came back: %+v %v", st, err)
	}
	sort.Strings(want)
	if got := sink.Accepted(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sink got %v, want %v", got, want)
	}
	// A permanent refusal: dead letters with the reason, never retried.
	th.Notify(t, 101, "comment.created", 43)
	th.ReadEach(t, 43)
	sink.Status.Store(422)
	if st, err := th.Inbox.FlushReads(context.Background()); err != nil || st.Dead != 1 || st.Failed {
		t.Fatalf("flush into a refusing sink: %+v %v", st, err)
	}
	reqs := sink.Reqs.Load()
	if st, _ := th.Inbox.FlushReads(context.Background()); st.Dead != 0 || sink.Reqs.Load() != reqs {
		t.Fatalf("a dead letter was retried: %+v", st)
	}
	dead, _ := testredis.Do(t, th.Redis, "HGETALL", inbox.ReadDeadKey(43)).AsStrMap()
	if len(dead) != 1 || pendingReads(t, th, 42, 43) != 0 {
		t.Fatalf("dead letters %v", dead)
	}
	for _, v := range dead {
		var d struct{ ReadAt, Reason string }
		if json.Unmarshal([]byte(v), &d) != nil || d.ReadAt == "" || d.Reason != "sink refused the reads: sink answered 422" {
			t.Fatalf("dead letter %s", v)
		}
	}
	if dead, temp := testhub.MetricValue(t, th, "write_behind_dead_letters_total"), testhub.MetricValue(t, th, `write_behind_flush_failures_total{class="temporary"}`); dead != "1" || temp != "3" {
		t.Fatalf("metrics: dead %s, temporary failures %s", dead, temp)
	}
}

// Two instances flush on their own schedule while users read: every read
// reaches the sink exactly once; a read re-marked during a flush is not lost.
func TestFlusher_TwoInstancesFlushEachReadOnce(t *testing.T) {
	rs := testredis.Start(t)
	sink := testhub.StartSink(t, hub.DefaultConfig().InternalAPIKey)
	cfg := func(c *testhub.Configs) {
		c.Inbox.ReadSinkURL, c.Inbox.WriteBehindInterval = sink.URL, 20*time.Millisecond
	}
	a := testhub.Start(t, rs.Addr(), cfg)
	b := testhub.Start(t, rs.Addr(), cfg)
	var want []string
	for u := int64(50); u < 56; u++ {
		for i := 0; i < 5; i++ {
			a.Notify(t, 102, "like.toggled", u)
		}
		th := a
		if u%2 == 0 {
			th = b
		}
		want = append(want, th.ReadEach(t, u)...)
	}
	sort.Strings(want)
	testhub.Eventually(t, 20*time.Second, "every read flushed", func() bool { return len(sink.Accepted(t)) == len(want) })
	if got := sink.Accepted(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sink got %v, want %v", got, want)
	}
	testhub.Eventually(t, 5*time.Second, "nothing pending", func() bool { return pendingReads(t, a, 50, 51, 52, 53, 54, 55) == 0 })
}

// Close (SIGTERM) flushes what is pending.
func TestFlusher_CloseFlushesWhatIsPending(t *testing.T) {
	rs := testredis.Start(t)
	sink := testhub.StartSink(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.Inbox.ReadSinkURL = sink.URL }) // 30 s interval
	th.Notify(t, 103, "comment.created", 44)
	want := th.ReadEach(t, 44)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := th.Hub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sink.Accepted(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sink got %v after Close, want %v", got, want)
	}
}

// A flush that visits a user between the moment the user is listed as
// pending and the moment the read is written finds nothing to send and drops
// the listing; the read written right after must still reach the sink.
func TestFlusher_AReadRacingAFlushIsNotStranded(t *testing.T) {
	rs := testredis.Start(t)
	sink := testhub.StartSink(t, hub.DefaultConfig().InternalAPIKey)
	th := testhub.Start(t, rs.Addr(), noBackgroundFlush(sink.URL))
	const users = 60
	for u := int64(1000); u < 1000+users; u++ {
		th.Notify(t, 104, "comment.created", u)
	}
	stop := make(chan struct{})
	flushed := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				flushed <- nil
				return
			default:
			}
			if _, err := th.Inbox.FlushReads(context.Background()); err != nil {
				flushed <- err
				return
			}
		}
	}()
	var want []string
	for u := int64(1000); u < 1000+users; u++ {
		want = append(want, th.ReadEach(t, u)...)
	}
	close(stop)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if _, err := th.Inbox.FlushReads(context.Background()); err != nil {
		t.Fatal(err)
	}
	sort.Strings(want)
	if got := sink.Accepted(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a last flush the sink has %d of %d reads; stranded in Redis: %d", len(got), len(want), pendingReads(t, th, usersFrom(1000, users)...))
	}
}

func usersFrom(first int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = first + int64(i)
	}
	return out
}
