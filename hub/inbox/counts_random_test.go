package inbox_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"

	"github.com/redis/rueidis"
)

// Counts equal the lists after a random run of every action (publishes
// with retries, groups and expiry too), on two instances of which one dies
// now and then between a room publish and its inbox writes (the outbox
// sweep finishes them). make soak runs it longer (ROOMHUB_LIFECYCLE_OPS).
func TestLifecycle_CountsEqualListsUnderRandomActions(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	randomLifecycle(t, []string{rs.Addr()}, 300)
}

// The same on a 3-master Redis Cluster: the users' keys are on every master.
func TestLifecycle_CountsEqualListsOnACluster(t *testing.T) {
	t.Parallel()
	randomLifecycle(t, testredis.StartCluster(t).Addrs(), 150)
}

// randomLifecycle runs ops random actions on the Redis of addrs (one, or a
// cluster's every node).
func randomLifecycle(t *testing.T, addrs []string, ops int) {
	addr := addrs[0]
	cfg := func(c *testhub.Configs) { c.Inbox.MaxEntries, c.Inbox.OutboxGrace = 40, 300*time.Millisecond }
	var nodes []rueidis.Client
	for _, a := range addrs {
		nodes = append(nodes, testredis.NodeClient(t, a))
	}
	refuseInboxes(t, false, nodes...) // hubs[1] connects as the user that dies at times
	hubs := []*testhub.Hub{testhub.Start(t, addr, cfg), testhub.Start(t, addr, func(c *testhub.Configs) { cfg(c); c.RedisURL = dyingURL(false, addr) })}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ROOMHUB_LIFECYCLE_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("random actions from seed %d (ROOMHUB_LIFECYCLE_SEED=%d replays them)", seed, seed)
	rng := rand.New(rand.NewPCG(1, seed))
	if n, err := strconv.Atoi(os.Getenv("ROOMHUB_LIFECYCLE_OPS")); err == nil && n > 0 {
		ops = n
	}
	users := []int64{50, 51, 52}
	tags := []string{"a", "b", "c"}
	sevs := []string{"low", "normal", "high", "critical"}
	// A publish that dies between the room's script and the inbox writes
	// also goes to witness, whom nothing else reaches and no action touches:
	// the sweep must leave one item in the witness's inbox for each.
	const witness = 53
	died := 0
	dieOnce := func() {
		refuseInboxes(t, true, nodes...)
		defer refuseInboxes(t, false, nodes...)
		body := fmt.Sprintf(`{"roomId":130,"eventType":"comment.created","data":{},"recipientIds":[50,51,52,%d]}`, witness)
		if code, env := hubs[1].PublishRaw(t, body); code < 500 {
			t.Fatalf("a publish through the dying instance: %d %+v", code, env)
		}
		died++
	}
	var known []string
	for i := 0; i < ops; i++ {
		th := hubs[rng.IntN(2)]
		u := users[rng.IntN(len(users))]
		switch op := rng.IntN(10); {
		case op < 4 || len(known) == 0:
			if th == hubs[1] && rng.IntN(10) == 0 {
				dieOnce()
				continue
			}
			extra := fmt.Sprintf(`"severity":%q,"tags":[%q,%q],"idempotencyKey":"k%d"`, sevs[rng.IntN(4)], tags[rng.IntN(3)], tags[rng.IntN(3)], rng.IntN(ops))
			if rng.IntN(2) == 0 {
				extra += fmt.Sprintf(`,"groupKey":"g%d"`, rng.IntN(3))
			}
			var expires time.Time
			if rng.IntN(8) == 0 {
				expires = time.Now().Add(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
				extra += `,"expiresAt":"` + expires.UTC().Format(time.RFC3339Nano) + `"`
			}
			code, env := th.PublishRaw(t, fmt.Sprintf(`{"roomId":130,"eventType":"comment.created","data":{},"recipientIds":[50,51,52],%s}`, extra))
			switch {
			case code == 200:
				var r hub.PublishResult
				testhub.Remarshal(t, env.Result, &r)
				known = append(known, "130:"+r.StreamID)
			case env.Code == "NOTIF4091": // the same key with another body
			case code == 400 && !expires.IsZero() && time.Now().After(expires): // a slow publish: its expiresAt passed first
			default:
				t.Fatalf("publish: %d %+v", code, env)
			}
		case op < 8:
			id := known[rng.IntN(len(known))]
			action := []string{"read", "seen", "archive", "unarchive", "unsnooze", "snooze"}[rng.IntN(6)]
			body := ""
			if action == "snooze" {
				body = `{"until":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`
			}
			if code, env := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+id+"/"+action, u, body); code != 200 && code != 404 {
				t.Fatalf("%s: %d %+v", action, code, env)
			}
		case op < 9:
			id := known[rng.IntN(len(known))]
			if code, env := th.UserDo(t, http.MethodDelete, "/api/v1/notifications/"+id, u, ""); code != 200 && code != 404 {
				t.Fatalf("delete: %d %+v", code, env)
			}
		default:
			action := inbox.BulkActions[rng.IntN(len(inbox.BulkActions))]
			body := fmt.Sprintf(`{"action":%q,"filter":{"state":%q,"tags":[%q]}}`, action,
				[]string{"visible", "unread", "unseen", "read", "archived", "all"}[rng.IntN(6)], tags[rng.IntN(3)])
			if rng.IntN(2) == 0 {
				if code, env := th.UserDo(t, http.MethodPost, "/api/v1/notifications/read-all", u, ""); code != 200 {
					t.Fatalf("read-all: %d %+v", code, env)
				}
				continue
			}
			if code, env := th.UserDo(t, http.MethodPost, "/api/v1/notifications/bulk", u, body); code != 200 {
				t.Fatalf("bulk %s: %d %+v", body, code, env)
			}
		}
	}
	dieOnce() // at least one, whatever the seed
	// What the dying instance left undone, the sweep finishes: the outbox
	// empties, and every planned inbox write is there.
	testhub.Eventually(t, 20*time.Second, "the outbox swept", func() bool {
		n, _ := testredis.Do(t, hubs[0].Redis, "HLEN", hub.OutboxKey(130)).AsInt64()
		return n == 0
	})
	if got := hubs[0].ListOf(t, witness, "state=all"); len(got) != died {
		t.Fatalf("the witness's inbox holds %d items after the sweep, want one for each of the %d publishes that died", len(got), died)
	}
	if n := hubs[0].UnreadOf(t, witness); n != int64(died) {
		t.Fatalf("the witness's unread count is %d, want %d", n, died)
	}
	for _, u := range users {
		c := checkCountsMatchLists(t, hubs[0], u)
		if all := hubs[1].ListOf(t, u, "state=all"); int64(len(all)) > 40 || slices.ContainsFunc(all, func(n inbox.Notification) bool { return n.NotificationID == "" }) {
			t.Fatalf("user %d: %d items (INBOX_MAX_ENTRIES 40)", u, len(all))
		}
		t.Logf("user %d after %d actions: %+v", u, ops, c)
	}
}
