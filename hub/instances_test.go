package hub

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/internal/testredis"
)

// A stream that ended before its Join wrote anything leaves nothing behind:
// its members have no expiry, so what Join wrote after the release's leave
// is taken back (presence in its room, its place in the connection cap and
// in user:online).
func TestJoin_AfterTheReleaseLeavesNothing(t *testing.T) {
	h := startTestHub(t, nil)
	st, err := h.OpenStream(StreamSpec{User: 5, Rooms: []int64{7}})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	waitFor(t, "the release", func() bool { return h.streams.releasing.Load() == 0 })
	st.Join(context.Background())
	rdb := h.rdb.Client
	for _, key := range []string{PresenceConnsKey(7, 5), UserOnlineKey(5), UserConnsKey(5)} {
		if n, _ := testredis.Do(t, rdb, "ZCARD", key).AsInt64(); n != 0 {
			t.Errorf("%s holds %d members after the stream ended", key, n)
		}
	}
	if in, _ := testredis.Do(t, rdb, "HEXISTS", PresenceKey(7), "5").AsInt64(); in != 0 {
		t.Error("user 5 is present in room 7 after their only stream ended")
	}
}

// A new stream's registration forgets the streams of the user's dead
// instances (user:conns and user:online), and keeps the others'.
func TestRegisterConn_ForgetsTheStreamsOfDeadInstances(t *testing.T) {
	h := startTestHub(t, nil)
	rdb := h.rdb.Client
	testredis.Do(t, rdb, "ZADD", PresenceInstancesKey, strconv.FormatInt(time.Now().UnixMilli()-1000, 10), "gone")
	for _, key := range []string{UserConnsKey(5), UserOnlineKey(5)} {
		testredis.Do(t, rdb, "ZADD", key, "+inf", "gone.a", "+inf", "other.b")
	}
	waitFor(t, "the dead instance known", func() bool {
		_, err := h.renewInstance(context.Background(), h.cfg.PresenceUserTTL)
		return err == nil && h.DeadInstances() == "gone"
	})
	if err := h.registerConn(context.Background(), 5, h.connID(newConn())); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{UserConnsKey(5), UserOnlineKey(5)} {
		m, _ := testredis.Do(t, rdb, "ZRANGE", key, "0", "-1").AsStrSlice()
		if got := strings.Join(m, " "); strings.Contains(got, "gone.") || !strings.Contains(got, "other.b") || len(m) != 2 {
			t.Errorf("%s holds %v: want other.b and the new stream", key, m)
		}
	}
}

// A stream's presence:conns key lives streamConnsTTL (long: the refresh
// renews it only every connsEvery periods), a heartbeat's the key ttl, and
// a heartbeat never shortens a stream's; a refresh renews the stream's only
// when asked to.
func TestPresenceConnsKeys_StreamsLiveLongerThanHeartbeats(t *testing.T) {
	h := startTestHub(t, nil)
	ctx := context.Background()
	rdb := h.rdb.Client
	long, short := int64(h.streamConnsTTL()/time.Second), int64(h.cfg.PresenceHashTTL/time.Second)
	if long <= short {
		t.Fatalf("a stream's key lives %d s, a heartbeat's %d s", long, short)
	}
	ttl := func(user int64) int64 {
		n, err := testredis.Do(t, rdb, "TTL", PresenceConnsKey(7, user)).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	h.touchBatch(ctx, []presenceTouch{{room: 7, user: 5, members: []string{h.connID(newConn())}}})
	if _, err := h.Heartbeat(ctx, 7, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Heartbeat(ctx, 7, 6); err != nil {
		t.Fatal(err)
	}
	if got := ttl(5); got < long-5 {
		t.Errorf("the streaming user's key lives %d s, want %d", got, long)
	}
	if got := ttl(6); got > short || got < short-5 {
		t.Errorf("the heartbeat's key lives %d s, want %d", got, short)
	}
	testredis.Do(t, rdb, "EXPIRE", PresenceConnsKey(7, 5), "10")
	h.refreshSeen(ctx, map[int64][]int64{7: {5}}, 0)
	if got := ttl(5); got > 10 {
		t.Errorf("a refresh not asked to renewed the key to %d s", got)
	}
	h.refreshSeen(ctx, map[int64][]int64{7: {5}}, h.streamConnsTTL())
	if got := ttl(5); got < long-5 {
		t.Errorf("after a renewing refresh the key lives %d s, want %d", got, long)
	}
}

// A stream keeps only the random part of its connection id: the name built
// for Redis is "<instance>.<16 hex digits>", and it parses back to the same
// number only on this instance.
func TestConnID_IsTheInstanceAndSixteenHexDigits(t *testing.T) {
	h := &Hub{}
	h.inst.id = "inst1"
	for _, conn := range []uint64{0, 1, 0xfedcba9876543210, newConn()} {
		id := h.connID(conn)
		if rest, ok := strings.CutPrefix(id, "inst1."); !ok || len(rest) != 16 || strings.Trim(rest, "0123456789abcdef") != "" {
			t.Fatalf("connID(%#x) = %q: want inst1. and 16 hex digits", conn, id)
		}
		if got, ok := h.parseConnID(id); !ok || got != conn {
			t.Errorf("parseConnID(%q) = %#x, %v: want %#x", id, got, ok, conn)
		}
	}
	for _, id := range []string{"inst2.0000000000000001", "inst1.1", "inst1.000000000000000g", "inst10000000000000001", ""} {
		if _, ok := h.parseConnID(id); ok {
			t.Errorf("parseConnID(%q) accepted another instance's or a malformed id", id)
		}
	}
}

// Every touch of a batch counts, past the first call's touchesPerCall too:
// an instance joining its streams again after its lease lapsed sends them
// all (hardening V, 9: touches past the first 200 dropped passed every
// test). On one Redis and a cluster, in two rooms.
func TestTouchBatch_EveryTouchPastTheFirstCall(t *testing.T) {
	h := startTestHub(t, nil)
	ctx := context.Background()
	var items []presenceTouch
	for u := range int64(2*touchesPerCall + 50) {
		items = append(items, presenceTouch{room: 7 + u%2, user: 1000 + u, members: []string{h.connID(newConn())}})
	}
	h.touchBatch(ctx, items)
	for _, room := range []int64{7, 8} {
		p, err := h.Presence(ctx, room)
		if err != nil || p.Count != touchesPerCall+25 {
			t.Fatalf("room %d: %d present (%v), want %d", room, p.Count, err, touchesPerCall+25)
		}
	}
}

// A refresh of a room with thousands of users on one instance renews them
// all, on a cluster too, where a call holds one room (hardening V, 18: one
// call of 4,000 users failed, "too many results to unpack").
func TestRefreshSeen_ARoomOfThousandsOnACluster(t *testing.T) {
	h := startTestHubOn(t, testredis.StartCluster(t).Addrs()[0], nil)
	ctx := context.Background()
	const n = 4500
	users := make([]int64, n)
	var items []presenceTouch
	for i := range users {
		users[i] = int64(1000 + i)
		items = append(items, presenceTouch{room: 7, user: users[i], members: []string{h.connID(newConn())}})
	}
	h.touchBatch(ctx, items)
	old := []string{"HSET", PresenceKey(7)}
	for _, u := range users {
		old = append(old, itoa(u), "1") // seen at the epoch: what a refresh must renew
	}
	testredis.Do(t, h.rdb.Client, old...)
	if missing := h.refreshSeen(ctx, map[int64][]int64{7: users}, h.streamConnsTTL()); len(missing) != 0 {
		t.Fatalf("%d users missing after the refresh", len(missing))
	}
	seen, err := testredis.Do(t, h.rdb.Client, "HGETALL", PresenceKey(7)).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	stale := 0
	for _, at := range seen {
		if at == "1" {
			stale++
		}
	}
	if len(seen) != n || stale != 0 {
		t.Fatalf("%d users present, %d not renewed; want %d, 0", len(seen), stale, n)
	}
}
