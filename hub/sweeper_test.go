package hub

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/internal/testredis"
)

// One sweep over more rooms than an SSCAN page (pipelined per page): every
// user left with nothing leaves (a dead instance's stream, a heartbeat that
// expired), a live one stays (seen lately, or a stream of a live instance
// however long ago they were seen), a listed room with no state is
// unlisted; once the leaves are broadcast, the emptied rooms are unlisted
// too.
func TestSweep_ManyRoomsInPipelines(t *testing.T) {
	h := startTestHub(t, func(c *Config) { c.PresenceBroadcast, c.PresenceUserTTL = 0, time.Minute })
	rdb := h.rdb.Client
	const dead = 1200
	now := time.Now().UnixMilli()
	cmds := [][]string{
		{"ZADD", PresenceInstancesKey, strconv.FormatInt(now-1000, 10), "gone", strconv.FormatInt(now+60_000, 10), "alive"},
	}
	for r := int64(1); r <= dead+3; r++ {
		room := strconv.FormatInt(r, 10)
		cmds = append(cmds, []string{"SADD", PresenceRoomsKey, room})
		if r == dead+2 {
			continue // listed, no state
		}
		// Last seen a TTL and a second ago: a dead instance's stream, or a
		// heartbeat that expired then…
		seen, score, m := now-61_000, "+inf", "gone.c"+room
		if r%2 == 0 {
			score, m = strconv.FormatInt(seen+60_000, 10), "hb"
		}
		switch r {
		case dead + 1: // … and live ones: seen lately,
			seen = now - 5000
		case dead + 3: // or a live instance's stream.
			score, m = "+inf", "alive.c"+room
		}
		cmds = append(cmds,
			[]string{"HSET", PresenceKey(r), room, strconv.FormatInt(seen, 10)},
			[]string{"ZADD", PresenceConnsKey(r, r), score, m})
	}
	for _, c := range cmds {
		testredis.Do(t, rdb, c...)
	}
	ctx := context.Background()
	if err := h.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range []int64{1, 600, dead} {
		if n, _ := testredis.Do(t, rdb, "HLEN", PresenceKey(r)).AsInt64(); n != 0 {
			t.Fatalf("room %d still has %d users", r, n)
		}
	}
	for _, r := range []int64{dead + 1, dead + 3} {
		if n, _ := testredis.Do(t, rdb, "HLEN", PresenceKey(r)).AsInt64(); n != 1 {
			t.Fatalf("the live user of room %d was swept (%d left)", r, n)
		}
	}
	if in, _ := testredis.Do(t, rdb, "SISMEMBER", PresenceRoomsKey, strconv.Itoa(dead+2)).AsInt64(); in != 0 {
		t.Fatal("a room without state is still listed")
	}
	waitFor(t, "the emptied rooms unlisted once their leaves are broadcast", func() bool {
		if err := h.sweep(ctx); err != nil {
			t.Fatal(err)
		}
		n, _ := testredis.Do(t, rdb, "SCARD", PresenceRoomsKey).AsInt64()
		return n == 2
	})
	for _, r := range []int{dead + 1, dead + 3} {
		if in, _ := testredis.Do(t, rdb, "SISMEMBER", PresenceRoomsKey, strconv.Itoa(r)).AsInt64(); in != 1 {
			t.Fatalf("room %d, with a live user, was unlisted", r)
		}
	}
}

// Users seen within half the TTL cost the sweep no script: a member of
// theirs was touched then and lives a whole TTL from it.
func TestSweep_LeavesRecentlySeenUsersAlone(t *testing.T) {
	h := startTestHub(t, func(c *Config) { c.PresenceUserTTL = time.Minute })
	rdb := h.rdb.Client
	now := time.Now().UnixMilli()
	testredis.Do(t, rdb, "SADD", PresenceRoomsKey, "7")
	for u := int64(1); u <= 300; u++ {
		testredis.Do(t, rdb, "HSET", PresenceKey(7), strconv.FormatInt(u, 10), strconv.FormatInt(now-20_000, 10))
		testredis.Do(t, rdb, "ZADD", PresenceConnsKey(7, u), strconv.FormatInt(now+40_000, 10), "m")
	}
	testredis.Do(t, rdb, "CONFIG", "RESETSTAT")
	if err := h.sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	stats, _ := testredis.Do(t, rdb, "INFO", "commandstats").ToString()
	for _, c := range []string{"cmdstat_evalsha:", "cmdstat_eval:", "cmdstat_zremrangebyscore:"} {
		if strings.Contains(stats, c) {
			t.Errorf("a sweep of users seen 20 s ago ran %s\n%s", c, stats)
		}
	}
	if n, _ := testredis.Do(t, rdb, "HLEN", PresenceKey(7)).AsInt64(); n != 300 {
		t.Fatalf("room 7 keeps %d of its 300 users", n)
	}
}

// BenchmarkSweep measures one sweep pass over 10,000 rooms with one live
// user each (nothing to remove: the steady state), on a real redis-server,
// and reports redis-server's CPU per pass.
// Run: go test -run '^$' -bench Sweep -benchtime 5x ./hub/
func BenchmarkSweep(b *testing.B) {
	rs := testredis.Start(b)
	rdb := testredis.Client(b, rs.Addr())
	h := New(DefaultConfig(), rdb, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(nil))
	const rooms = 10000
	deadline := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	ctx := context.Background()
	for r := int64(1); r <= rooms; r++ {
		room := strconv.FormatInt(r, 10)
		cmds := rdb.B()
		for _, err := range []error{
			rdb.Do(ctx, cmds.Sadd().Key(PresenceRoomsKey).Member(room).Build()).Error(),
			rdb.Do(ctx, cmds.Hset().Key(PresenceKey(r)).FieldValue().FieldValue(room, deadline).Build()).Error(),
			rdb.Do(ctx, cmds.Zadd().Key(PresenceConnsKey(r, r)).ScoreMember().ScoreMember(float64(time.Now().Add(time.Hour).UnixMilli()), "m").Build()).Error(),
		} {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	cpu := testredis.CPU(b, rdb)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := h.sweep(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric((testredis.CPU(b, rdb)-cpu)*1000/float64(b.N), "redis-cpu-ms/pass")
}
