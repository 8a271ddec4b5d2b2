package hub_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func TestHardening_ForgedPubSubMessagesDoNotStopDelivery(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	c := th.OpenStream(t, 120, 1, "")
	first := th.Publish(t, 120, "comment.created", map[string]any{"n": 1})
	if f := c.Next(t, testhub.Wait); f.ID != first.StreamID {
		t.Fatalf("got %+v", f)
	}
	rdb := testredis.Client(t, rs.Addr())
	// On the backends' channel id and seq are ignored: delivered raw.
	testredis.Do(t, rdb, "PUBLISH", "room:120", `{"id":"99999999999999-0","seq":2,"eventType":"comment.created","data":{"forged":1}}`)
	if f := c.Next(t, testhub.Wait); f.ID != "" || !strings.Contains(f.Data, "forged") {
		t.Fatalf("forged raw message delivered as %+v", f)
	}
	// On the hub's own channel an id far in the future is refused.
	testredis.Do(t, rdb, "PUBLISH", "room:{120}", `{"id":"99999999999999-0","seq":2,"eventType":"comment.created","data":{}}`)
	next := th.Publish(t, 120, "comment.created", map[string]any{"n": 2})
	if f := c.Next(t, testhub.Wait); f.ID != next.StreamID {
		t.Fatalf("after forged messages got %+v, want %s", f, next.StreamID)
	}
	if n := th.Hub.Metrics().InvalidMessages.Get(); n != 1 {
		t.Fatalf("invalid messages = %d, want 1", n)
	}
}

func TestHardening_PositionsRedisCannotRangeFromAre400(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	max := "18446744073709551615-18446744073709551615"
	if code, env := th.Get(t, "/api/v1/rooms/1/events?since="+max, th.Token(t, 1)); code != 400 || env.Code != "COMMON400" {
		t.Fatalf("since=max: %d %+v", code, env)
	}
	for _, path := range []string{"/api/v1/rooms/1/stream", "/api/v1/notifications/stream"} {
		code, env := th.Do(t, http.MethodGet, path, map[string]string{"Authorization": "Bearer " + th.Token(t, 1), "Last-Event-ID": max}, "")
		if code != 400 || env.Code != "COMMON400" {
			t.Fatalf("%s Last-Event-ID max: %d %+v", path, code, env)
		}
	}
}

func TestHardening_HistoryExpiresAfterTheLastPublish(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.HistoryRetention = time.Hour })
	rdb := testredis.Client(t, rs.Addr())
	th.Publish(t, 121, "comment.created", map[string]any{})
	// A room that only ever saw a heartbeat: its presence.update is history
	// too, kept as long as its presence (PRESENCE_HASH_TTL_SECS), not an hour.
	if code, _ := th.UserDo(t, http.MethodPost, "/api/v1/rooms/122/presence/heartbeat", 1, ""); code != 200 {
		t.Fatal("heartbeat")
	}
	presenceTTL := int64(th.Cfg.PresenceHashTTL / time.Second)
	for room, want := range map[int64][2]int64{121: {3500, 3600}, 122: {1, presenceTTL}} {
		for _, key := range []string{hub.EventsKey(room), hub.RoomSeqKey(room)} {
			testhub.Eventually(t, testhub.Wait, key+" has its TTL", func() bool {
				ttl, _ := testredis.Do(t, rdb, "TTL", key).AsInt64()
				return ttl >= want[0] && ttl <= want[1]
			})
		}
	}
	// A backend event in the heartbeat's room gives it the retention, and
	// presence does not shorten it.
	th.Publish(t, 122, "comment.created", map[string]any{})
	if code, _ := th.UserDo(t, http.MethodPost, "/api/v1/rooms/122/presence/heartbeat", 2, ""); code != 200 {
		t.Fatal("heartbeat")
	}
	testhub.Eventually(t, testhub.Wait, "the presence.update of user 2", func() bool {
		n, _ := testredis.Do(t, rdb, "XLEN", hub.EventsKey(122)).AsInt64()
		return n == 3
	})
	if ttl, _ := testredis.Do(t, rdb, "TTL", hub.EventsKey(122)).AsInt64(); ttl < 3500 {
		t.Fatalf("a presence.update after a real event cut the room's history TTL to %d s", ttl)
	}
}

// Presence alone creates no long-lived history: streams to 1,000 fresh rooms
// leave no room key behind once they closed and PRESENCE_HASH_TTL_SECS passed.
func TestHardening_PresenceAloneLeavesNoRoomKeys(t *testing.T) {
	t.Parallel() // it mostly waits: see internal/testhub/hub.go
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) {
		c.PresenceUserTTL, c.PresenceHashTTL, c.MaxConnectionsPerUser, c.PresenceBroadcast = time.Second, 2*time.Second, 0, 0
	})
	rdb := testredis.Client(t, rs.Addr())
	const rooms, perStream = 1000, 25
	for first := 1; first <= rooms; first += perStream {
		var ids []string
		for r := first; r < first+perStream; r++ {
			ids = append(ids, strconv.Itoa(500000+r))
		}
		c := th.PageStream(t, int64(first%7+1), "rooms="+strings.Join(ids, ","), "")
		c.NextMatching(t, testhub.Wait, func(f testhub.Frame) bool { return f.Event == hub.PresenceEventType })
		c.Close()
	}
	count := func() int {
		keys, _ := testredis.Do(t, rdb, "KEYS", "room:*").AsStrSlice()
		return len(keys)
	}
	if n := count(); n == 0 {
		t.Fatal("no room key was created: the test proves nothing")
	}
	testhub.Eventually(t, 30*time.Second, "every presence-only room's keys expired", func() bool { return count() == 0 })
}
