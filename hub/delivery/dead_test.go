package delivery_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"roomhub/hub/delivery"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// plantDead writes a dead delivery record for user and its dead index entry
// at ms, as the hand-off's end leaves them.
func plantDead(t *testing.T, rs *testredis.Server, user int64, nid string, ms int64) {
	t.Helper()
	c := testredis.Client(t, rs.Addr())
	rec := fmt.Sprintf(`{"s":"dead","r":"","due":0,"n":1,"e":"INVALID_ARGUMENT","t":%d}`, ms)
	testredis.Do(t, c, "HSET", delivery.RecordsKey(user), nid+"|push", rec)
	testredis.Do(t, c, "ZADD", delivery.DeadIndexKey(int(user%delivery.Shards)), fmt.Sprint(ms), fmt.Sprintf("%d|%s|push", user, nid))
}

// Many deliveries dying in one millisecond (a digest's items, one user's
// shard or many) page through once each: paging is by (time, member), not
// by time alone, which looped for ever once more than a page shared one.
func TestDeliveryDead_PagesEndHoweverManyShareAMillisecond(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	ms := time.Now().Add(-time.Minute).UnixMilli()
	want := map[string]bool{}
	for i := range 150 { // one user, one shard: a digest of 150 items
		nid := fmt.Sprintf("42:%d-%d", ms, i)
		plantDead(t, rs, 7, nid, ms)
		want["7/"+nid] = true
	}
	for u := int64(100); u < 200; u++ { // every shard, the same millisecond
		nid := fmt.Sprintf("43:%d-0", ms)
		plantDead(t, rs, u, nid, ms)
		want[fmt.Sprintf("%d/%s", u, nid)] = true
	}
	th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.Delivery.Channels = []string{"push"} })
	for _, limit := range []int{1, 7, 100, 1000} {
		got := map[string]bool{}
		for _, r := range th.DeadPages(t, limit, len(want)) {
			s := fmt.Sprintf("%d/%s", r.UserID, r.NotificationID)
			if got[s] {
				t.Fatalf("limit %d: %s listed twice", limit, s)
			}
			got[s] = true
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %d listed, want %d", limit, len(got), len(want))
		}
		for s := range want {
			if !got[s] {
				t.Fatalf("limit %d: %s never listed", limit, s)
			}
		}
	}
	internal := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey}
	for _, bad := range []string{"TmFOCjF8eA", "LUluZgoxfHg", "-1", "%00"} { // "NaN\n1|x", "-Inf\n1|x"
		code, env := th.Do(t, http.MethodGet, "/api/v1/internal/deliveries/dead?after="+bad, internal, "")
		if code != 400 || env.Code != "COMMON400" {
			t.Fatalf("cursor %q: %d %+v, want 400 COMMON400", bad, code, env)
		}
	}
}

// Dead index entries older than DELIVERY_RECORD_DAYS leave the index: their
// records are gone, and the index must not grow for ever.
func TestDeliveryDead_StaleEntriesAreTrimmed(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	old := time.Now().Add(-8 * 24 * time.Hour).UnixMilli()
	for u := int64(1); u <= 40; u++ {
		plantDead(t, rs, u, fmt.Sprintf("42:%d-0", old), old)
	}
	fresh := time.Now().Add(-time.Hour).UnixMilli()
	plantDead(t, rs, 3, fmt.Sprintf("42:%d-0", fresh), fresh)
	c := testredis.Client(t, rs.Addr())
	entries := func() int64 {
		var n int64
		for s := range delivery.Shards {
			v, _ := testredis.Do(t, c, "ZCARD", delivery.DeadIndexKey(s)).AsInt64()
			n += v
		}
		return n
	}
	if n := entries(); n != 41 {
		t.Fatalf("planted %d entries, want 41", n)
	}
	th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) {
		c.Delivery.Channels, c.RecordTTL = []string{"push"}, 7*24*time.Hour
	})
	testhub.Eventually(t, testhub.Wait, "the stale entries trimmed", func() bool { return entries() == 1 })
	if seen := th.DeadPages(t, 10, 1); len(seen) != 1 {
		t.Fatalf("after the trim the list holds %v, want the fresh entry", seen)
	}
}
