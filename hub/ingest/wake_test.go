package ingest

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub/publish"
	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

// The waker says when a partition's stream changes, and only then: a
// stream's entry wakes it, a dead list's does not; a lost connection is
// found and made again, woken (what came meanwhile is read at once).
func TestWaker_SaysWhenAStreamChanges(t *testing.T) {
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	ctx := context.Background()
	w := newWaker(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(w.close)
	if !w.arm(ctx) {
		t.Fatal("a real Redis refused to say when keys change")
	}
	woken := func(what string) {
		t.Helper()
		select {
		case <-w.ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s woke nobody", what)
		}
	}
	woken("arming") // a new connection starts woken
	var mu sync.Mutex
	var named []string // what Redis named, in order
	w.conn.SetOnInvalidations(func(keys []rueidis.RedisMessage) {
		mu.Lock()
		for _, k := range keys {
			s, _ := k.ToString()
			named = append(named, s)
		}
		mu.Unlock()
		w.woke(keys)
	})
	testredis.Do(t, rdb, "XADD", DeadKey(0), "*", "event", "{}")
	testredis.Do(t, rdb, "SET", IdempotencyKey("1-0"), "x")
	testredis.Do(t, rdb, "XADD", PartitionKey(3), "*", "event", "{}")
	woken("an entry")
	mu.Lock()
	if want := []string{PartitionKey(3)}; !slices.Equal(named, want) {
		t.Errorf("Redis named %q, want %q alone", named, want)
	}
	mu.Unlock()
	id := trackingClient(rdb)
	if id == "" {
		t.Fatal("no connection listed as tracking keys")
	}
	testredis.Do(t, rdb, "CLIENT", "KILL", "ID", id)
	testbin.Eventually(t, 30*time.Second, "the lost connection noticed and made again", func() bool {
		select {
		case <-w.lost:
		case <-time.After(10 * time.Millisecond):
			return false
		}
		w.retryAt = time.Time{}
		return w.arm(ctx)
	})
	woken("arming again")
	testredis.Do(t, rdb, "XADD", PartitionKey(0), "*", "event", "{}")
	woken("an entry after the connection was made again")
}

// A consumer whose listening connection is lost reads on through the
// shared client, and listens again once idle.
func TestIdle_ALostConnectionIsMadeAgain(t *testing.T) {
	var rec recorder
	rdb, _ := startIngest(t, rec.publisher(1<<20))
	for round := range 2 {
		testbin.Eventually(t, 30*time.Second, "the consumer listening", func() bool { return trackingClient(rdb) != "" })
		testredis.Do(t, rdb, "CLIENT", "KILL", "ID", trackingClient(rdb))
		body := "after kill " + strconv.Itoa(round)
		xadd(t, rdb, body)
		waitDrained(t, rdb)
		if got := rec.bodies(); !slices.Contains(got, body) {
			t.Errorf("%q not published (published %q)", body, got)
		}
	}
}

// An idle consumer never takes an entry whole: Redis names the stream, and
// the read script returns an entry over the most one may hold as its size
// alone. Redis sends the hub far less than the 4 MiB entry.
func TestIdle_ABigEntryIsNeverTakenWhole(t *testing.T) {
	var rec recorder
	rdb, _ := startIngest(t, rec.publisher(64<<10))
	ctx := context.Background()
	add := func(body string) { xadd(t, rdb, body) }
	add("first")
	waitDrained(t, rdb) // the consumer is idle from here on
	sent := func() int64 {
		info, _ := rdb.Do(ctx, rdb.B().Info().Section("stats").Build()).ToString()
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatal("INFO stats has no total_net_output_bytes")
		return 0
	}
	before := sent()
	add(strings.Repeat("x", 4<<20))
	waitDrained(t, rdb)
	if d := sent() - before; d > 1<<20 {
		t.Errorf("Redis sent %d bytes while the consumer took a 4 MiB entry, want far less", d)
	}
	dead, _ := rdb.Do(ctx, rdb.B().Xlen().Key(DeadKey(0)).Build()).AsInt64()
	if got := rec.bodies(); len(got) != 1 || dead != 1 {
		t.Errorf("published %d entries and %d dead, want the first published and the big one dead", len(got), dead)
	}
}

// A burst that lands while the consumer waits is taken in a few reads, not
// an entry a read: woken, a read takes INGEST_BATCH at once.
func TestWoken_ABurstIsTakenInAFewReads(t *testing.T) {
	var mu sync.Mutex
	var runs int
	var got []string
	rdb, _ := startIngest(t, fakePublisher{maxData: 1 << 20, run: func(_ context.Context, bodies []publish.Body) []publish.Outcome {
		mu.Lock()
		defer mu.Unlock()
		runs++
		out := make([]publish.Outcome, len(bodies))
		for _, b := range bodies {
			got = append(got, string(b.Raw))
		}
		return out
	}})
	ctx := context.Background()
	testbin.Eventually(t, 30*time.Second, "the consumer listening (its connection listed as tracking keys)", func() bool {
		list, _ := rdb.Do(ctx, rdb.B().ClientList().Build()).ToString()
		return strings.Contains(list, "flags=tB")
	})
	const n = 600
	cmds := rueidis.Commands{rdb.B().Multi().Build()}
	for i := range n {
		cmds = append(cmds, rdb.B().Xadd().Key(PartitionKey(0)).Id("*").FieldValue().FieldValue("event", strconv.Itoa(i)).Build())
	}
	cmds = append(cmds, rdb.B().Exec().Build())
	dc, cancel := rdb.Dedicate()
	defer cancel()
	for _, r := range dc.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	waitDrained(t, rdb)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n || got[0] != "0" || got[n-1] != strconv.Itoa(n-1) {
		t.Fatalf("published %d entries (first %q), want %d in order", len(got), got[:min(len(got), 1)], n)
	}
	// INGEST_BATCH (256) a read: 3 reads, 4 if the first wake-up came
	// before the transaction's end.
	if runs > 6 {
		t.Errorf("%d entries in one burst took %d reads, want a few", n, runs)
	}
}

// After Redis lost its scripts (SCRIPT FLUSH), the consumer goes on: the
// held finish and the read are sent again with their source.
func TestWoken_ReadsOnAfterRedisLostItsScripts(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	rdb, _ := startIngest(t, fakePublisher{maxData: 1 << 20, run: func(_ context.Context, bodies []publish.Body) []publish.Outcome {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bodies {
			seen[string(b.Raw)] = true
		}
		return make([]publish.Outcome, len(bodies))
	}})
	ctx := context.Background()
	add := func(body string) {
		if err := rdb.Do(ctx, rdb.B().Xadd().Key(PartitionKey(0)).Id("*").FieldValue().FieldValue("event", body).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		add(strconv.Itoa(i))
	}
	waitDrained(t, rdb)
	testredis.Do(t, rdb, "SCRIPT", "FLUSH")
	for i := 3; i < 6; i++ {
		add(strconv.Itoa(i))
	}
	waitDrained(t, rdb)
	mu.Lock()
	defer mu.Unlock()
	for i := range 6 {
		if !seen[strconv.Itoa(i)] {
			t.Errorf("entry %d never published (published: %v)", i, seen)
		}
	}
}
