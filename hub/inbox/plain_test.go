package inbox_test

import (
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// The fan-out's plain script (inbox_add_plain.lua) writes and sends what
// the general one (inbox_add.lua) does for the same notification: two
// people get the same notifications, one by the plain script, the other by
// the general one, which the plain script leaves it to (for a new inbox,
// an older hub's seq of 0 to go on from; then, counts whose renewal is
// due), while one is seen and another archived. Their items, counts, log entries, unread counts and the events
// their streams get are the same, but for the log's times and the renewal.
func TestPlain_WritesWhatTheGeneralAddWrites(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	const plain, general = 41, 42
	sp, sg := th.SettledUserStream(t, plain), th.SettledUserStream(t, general)
	testredis.Do(t, th.Redis, "SET", "user:seq:{42}", "0")
	for round := range 4 {
		if round > 0 {
			testredis.Do(t, th.Redis, "HSET", inbox.CountsKey(general), "k", "0")
		}
		id := "97:" + th.Notify(t, 97, "comment.created", plain, general).StreamID
		fp, fg := sp.Next(t, testhub.Wait), sg.Next(t, testhub.Wait)
		if fp.Event != inbox.NotificationCreatedType || fp.Event != fg.Event || fp.Data != fg.Data || seqOf(fp.ID) != seqOf(fg.ID) {
			t.Fatalf("round %d: the plain script sent %+v, the general one %+v", round, fp, fg)
		}
		// unread and unseen apart, then something archived
		if action := map[int]string{1: "seen", 2: "archive"}[round]; action != "" {
			for _, u := range []int64{plain, general} {
				if code, _ := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+id+"/"+action, u, ""); code != 200 {
					t.Fatalf("%s: %d", action, code)
				}
			}
			sp.Next(t, testhub.Wait)
			sg.Next(t, testhub.Wait)
		}
	}
	if k, _ := testredis.Do(t, th.Redis, "HGET", inbox.CountsKey(general), "k").ToString(); k == "0" {
		t.Fatal("the general script did not take the second person: the test compares nothing")
	}
	for _, key := range []func(int64) string{inbox.ItemsKey, inbox.CountsKey} {
		p, g := hashOf(t, th, key(plain)), hashOf(t, th, key(general))
		if !maps.Equal(p, g) {
			t.Errorf("%s: plain %v, general %v", key(0), p, g)
		}
	}
	if p, g := th.UnreadOf(t, plain), th.UnreadOf(t, general); p != 3 || g != 3 {
		t.Errorf("unread: plain %d, general %d, want 3 (one archived)", p, g)
	}
	allExpire(t, th, plain, inbox.ItemsKey(plain), inbox.CountsKey(plain), inbox.UnreadCountKey(plain))
}

// seqOf is the seq of a user log event's id, "<ms>-<seq>".
func seqOf(id string) string {
	_, seq, _ := strings.Cut(id, "-")
	return seq
}

// hashOf is the hash at key, without the renewal mark ("k") and with each
// log entry's time left out: what the two paths write alike.
func hashOf(t *testing.T, th *testhub.Hub, key string) map[string]string {
	t.Helper()
	m, err := testredis.Do(t, th.Redis, "HGETALL", key).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "k")
	for f, v := range m {
		if strings.HasPrefix(f, "~") {
			_, m[f], _ = strings.Cut(v, "\t")
		}
	}
	return m
}

// The plain script sends notification.created only where a stream listens
// (PUBSUB NUMSUB): of fifty recipients, the one with a stream open gets it;
// a stream opened after the publish replays it from the log. With
// PUBSUB_MODE=patterns, where NUMSUB does not count the hub's listener,
// every recipient's event is sent.
func TestPlain_SendsTheLiveEventWhereAStreamListens(t *testing.T) {
	for _, mode := range []string{"channels", "patterns"} {
		t.Run(mode, func(t *testing.T) {
			rs := testredis.Start(t)
			th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.PubSubMode = mode })
			listening := th.SettledUserStream(t, 1)
			users := make([]int64, 50)
			for i := range users {
				users[i] = int64(i + 1)
			}
			publishes := func() int64 {
				info, _ := testredis.Do(t, th.Redis, "INFO", "commandstats").ToString()
				_, rest, _ := strings.Cut(info, "cmdstat_publish:calls=") // none yet: 0
				calls, _, _ := strings.Cut(rest, ",")
				n, _ := strconv.ParseInt(calls, 10, 64)
				return n
			}
			before := publishes()
			id := "98:" + th.Notify(t, 98, "comment.created", users...).StreamID
			if f := listening.Next(t, testhub.Wait); f.Event != inbox.NotificationCreatedType || !strings.Contains(f.Data, id) {
				t.Fatalf("the listening stream got %+v", f)
			}
			sent := publishes() - before // the room's event, then the users' events sent
			if want := map[string]int64{"channels": 2, "patterns": 51}[mode]; sent != want {
				t.Fatalf("%d publishes for 50 recipients, one listening; want %d", sent, want)
			}
			late := th.UserStream(t, 7, "0") // from the log's start
			if f := late.NextMatching(t, testhub.Wait, func(f testhub.Frame) bool { return f.Event == inbox.NotificationCreatedType }); !strings.Contains(f.Data, id) {
				t.Fatalf("the late stream replayed %+v", f)
			}
		})
	}
}
