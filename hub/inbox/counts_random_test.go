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
	r := &randomRun{t: t, ops: ops}
	for _, a := range addrs {
		r.nodes = append(r.nodes, testredis.NodeClient(t, a))
	}
	refuseInboxes(t, false, r.nodes...) // hubs[1] connects as the user that dies at times
	r.hubs = []*testhub.Hub{testhub.Start(t, addr, cfg), testhub.Start(t, addr, func(c *testhub.Configs) { cfg(c); c.RedisURL = dyingURL(false, addr) })}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("ROOMHUB_LIFECYCLE_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("random actions from seed %d (ROOMHUB_LIFECYCLE_SEED=%d replays them)", seed, seed)
	r.rng = rand.New(rand.NewPCG(1, seed))
	if n, err := strconv.Atoi(os.Getenv("ROOMHUB_LIFECYCLE_OPS")); err == nil && n > 0 {
		r.ops = n
	}
	users := []int64{50, 51, 52}
	for i := 0; i < r.ops; i++ {
		th := r.hubs[r.rng.IntN(2)]
		u := users[r.rng.IntN(len(users))]
		switch op := r.rng.IntN(10); {
		case op < 4 || len(r.known) == 0:
			if th == r.hubs[1] && r.rng.IntN(10) == 0 {
				r.dieOnce()
				continue
			}
			r.publish(th)
		case op < 8:
			r.act(th, u)
		case op < 9:
			id := r.known[r.rng.IntN(len(r.known))]
			if code, env := th.UserDo(t, http.MethodDelete, "/api/v1/notifications/"+id, u, ""); code != 200 && code != 404 {
				t.Fatalf("delete: %d %+v", code, env)
			}
		default:
			r.bulk(th, u)
		}
	}
	r.dieOnce() // at least one, whatever the seed
	r.check(users)
}

// randomRun is what the random lifecycle's actions share: the two hubs
// (hubs[1] dies now and then), every node of their Redis, the seeded
// source, the notifications published so far, and how many publishes died.
type randomRun struct {
	t     *testing.T
	hubs  []*testhub.Hub
	nodes []rueidis.Client
	rng   *rand.Rand
	ops   int
	known []string
	died  int
}

// The actions' choices.
var (
	randomTags = []string{"a", "b", "c"}
	randomSevs = []string{"low", "normal", "high", "critical"}
)

// witness is a recipient of the publishes that die, whom nothing else
// reaches and no action touches: the sweep must leave one item in the
// witness's inbox for each.
const witness = 53

// dieOnce publishes through hubs[1] while Redis refuses it the inboxes: it
// dies between the room's script and the inbox writes.
func (r *randomRun) dieOnce() {
	t := r.t
	refuseInboxes(t, true, r.nodes...)
	defer refuseInboxes(t, false, r.nodes...)
	body := fmt.Sprintf(`{"roomId":130,"eventType":"comment.created","data":{},"recipientIds":[50,51,52,%d]}`, witness)
	if code, env := r.hubs[1].PublishRaw(t, body); code < 500 {
		t.Fatalf("a publish through the dying instance: %d %+v", code, env)
	}
	r.died++
}

// publish publishes to every user through th with a random severity, tags,
// key, group and expiry.
func (r *randomRun) publish(th *testhub.Hub) {
	t, rng := r.t, r.rng
	extra := fmt.Sprintf(`"severity":%q,"tags":[%q,%q],"idempotencyKey":"k%d"`, randomSevs[rng.IntN(4)], randomTags[rng.IntN(3)], randomTags[rng.IntN(3)], rng.IntN(r.ops))
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
		var res hub.PublishResult
		testhub.Remarshal(t, env.Result, &res)
		r.known = append(r.known, "130:"+res.StreamID)
	case env.Code == "NOTIF4091": // the same key with another body
	case code == 400 && !expires.IsZero() && time.Now().After(expires): // a slow publish: its expiresAt passed first
	default:
		t.Fatalf("publish: %d %+v", code, env)
	}
}

// act changes one known item's state for u through th.
func (r *randomRun) act(th *testhub.Hub, u int64) {
	t, rng := r.t, r.rng
	id := r.known[rng.IntN(len(r.known))]
	action := []string{"read", "seen", "archive", "unarchive", "unsnooze", "snooze"}[rng.IntN(6)]
	body := ""
	if action == "snooze" {
		body = `{"until":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`
	}
	if code, env := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+id+"/"+action, u, body); code != 200 && code != 404 {
		t.Fatalf("%s: %d %+v", action, code, env)
	}
}

// bulk reads all of u's inbox, or acts in bulk over a random filter.
func (r *randomRun) bulk(th *testhub.Hub, u int64) {
	t, rng := r.t, r.rng
	action := inbox.BulkActions[rng.IntN(len(inbox.BulkActions))]
	body := fmt.Sprintf(`{"action":%q,"filter":{"state":%q,"tags":[%q]}}`, action,
		[]string{"visible", "unread", "unseen", "read", "archived", "all"}[rng.IntN(6)], randomTags[rng.IntN(3)])
	if rng.IntN(2) == 0 {
		if code, env := th.UserDo(t, http.MethodPost, "/api/v1/notifications/read-all", u, ""); code != 200 {
			t.Fatalf("read-all: %d %+v", code, env)
		}
		return
	}
	if code, env := th.UserDo(t, http.MethodPost, "/api/v1/notifications/bulk", u, body); code != 200 {
		t.Fatalf("bulk %s: %d %+v", body, code, env)
	}
}

// check: what the dying instance left undone, the sweep finishes (the
// outbox empties, and every planned inbox write is there); each user's
// counts equal their lists, within INBOX_MAX_ENTRIES.
func (r *randomRun) check(users []int64) {
	t, hubs := r.t, r.hubs
	testhub.Eventually(t, 20*time.Second, "the outbox swept", func() bool {
		n, _ := testredis.Do(t, hubs[0].Redis, "HLEN", hub.OutboxKey(130)).AsInt64()
		return n == 0
	})
	if got := hubs[0].ListOf(t, witness, "state=all"); len(got) != r.died {
		t.Fatalf("the witness's inbox holds %d items after the sweep, want one for each of the %d publishes that died", len(got), r.died)
	}
	if n := hubs[0].UnreadOf(t, witness); n != int64(r.died) {
		t.Fatalf("the witness's unread count is %d, want %d", n, r.died)
	}
	for _, u := range users {
		c := checkCountsMatchLists(t, hubs[0], u)
		if all := hubs[1].ListOf(t, u, "state=all"); int64(len(all)) > 40 || slices.ContainsFunc(all, func(n inbox.Notification) bool { return n.NotificationID == "" }) {
			t.Fatalf("user %d: %d items (INBOX_MAX_ENTRIES 40)", u, len(all))
		}
		t.Logf("user %d after %d actions: %+v", u, r.ops, c)
	}
}
