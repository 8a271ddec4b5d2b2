package hub_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// TestCluster_EventsAndPresenceAcrossSlots runs two hubs on a 3-master Redis
// Cluster: rooms spread over slots on every node, events published through one
// hub reach streams on the other, resume and presence work per room.
func TestCluster_EventsAndPresenceAcrossSlots(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	url := func(c *testhub.Configs) {
		c.RedisURL = "redis+cluster://" + strings.Join(cl.Addrs(), ",")
		fastPresence(c)
	}
	a := testhub.Start(t, cl.Addrs()[0], url)
	b := testhub.Start(t, cl.Addrs()[1], url)
	rooms := []int64{1, 2, 3, 4, 5, 6, 7, 8} // hash tags {1}..{8} land on all three masters
	streams := map[int64]*testhub.SSEClient{}
	for _, r := range rooms {
		streams[r] = b.OpenStream(t, r, r, "")
	}
	ids := map[int64]string{}
	for _, r := range rooms {
		ids[r] = a.Publish(t, r, "comment.created", map[string]any{"room": r}).StreamID
	}
	for _, r := range rooms {
		// The stream's own join came before the event (next skips presence).
		if u, _ := streams[r].PresenceUpdate(t, testhub.Wait); u.Joined == nil || *u.Joined != r {
			t.Fatalf("room %d presence %+v", r, u)
		}
		if f := streams[r].Next(t, testhub.Wait); f.ID != ids[r] {
			t.Fatalf("room %d: got %+v, want %s", r, f, ids[r])
		}
	}
	// Resume through the other hub.
	c := a.OpenStream(t, 3, 2, "0")
	if f := c.Next(t, testhub.Wait); f.ID != ids[3] {
		t.Fatalf("resume on cluster: %+v", f)
	}
	// Idempotency and the connection cap keep to their slots.
	code, env := a.PublishRaw(t, `{"roomId":5,"eventType":"like.toggled","data":{},"idempotencyKey":"k"}`)
	code2, env2 := b.PublishRaw(t, `{"roomId":5,"eventType":"like.toggled","data":{},"idempotencyKey":"k"}`)
	var r1, r2 hub.PublishResult
	testhub.Remarshal(t, env.Result, &r1)
	testhub.Remarshal(t, env2.Result, &r2)
	if code != 200 || code2 != 200 || r1.StreamID != r2.StreamID || !r2.Duplicate {
		t.Fatalf("idempotency on cluster: %+v %+v", env, env2)
	}
	if r1.DeliveredTo != 1 {
		t.Fatalf("deliveredTo = %d for a room only hub B listens to, want 1", r1.DeliveredTo)
	}
	if r := a.Publish(t, 3, "comment.created", map[string]any{}); r.DeliveredTo != 2 {
		t.Fatalf("deliveredTo = %d for a room both hubs listen to, want 2", r.DeliveredTo)
	}
}

// TestCluster_SubscriptionsSurviveKills kills every pub/sub connection on all
// three masters while events are published: the sharded subscriptions come
// back and replay, so the stream gets every event exactly once.
func TestCluster_SubscriptionsSurviveKills(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	url := func(c *testhub.Configs) { c.RedisURL = "redis+cluster://" + strings.Join(cl.Addrs(), ",") }
	a := testhub.Start(t, cl.Addrs()[0], url)
	b := testhub.Start(t, cl.Addrs()[0], url)
	steady := b.OpenStream(t, 9, 1, "")
	p := startPublisher(a, 9, 100000)
	var nodes []rueidis.Client
	for _, addr := range cl.Addrs() {
		nodes = append(nodes, testredis.NodeClient(t, addr))
	}
	for i := 0; i < 3; i++ {
		testhub.Eventually(t, 20*time.Second, "events flowing", func() bool { return p.count() >= (i+1)*150 })
		// Subscriptions killed in the last round may still be coming back.
		testhub.Eventually(t, 20*time.Second, "subscribed connections to kill", func() bool {
			killed := 0
			for _, n := range nodes {
				killed += killSubscribers(t, n)
			}
			return killed > 0
		})
	}
	testhub.Eventually(t, 20*time.Second, "events flowing", func() bool { return p.count() >= 600 })
	accepted := p.Stop()
	checkExactlyOnce(t, "steady", drainUntil(t, steady, accepted[len(accepted)-1]), accepted, false)
}

// killSubscribers kills every connection of node that holds a channel,
// pattern or sharded subscription (CLIENT KILL TYPE pubsub misses the last).
func killSubscribers(t *testing.T, node rueidis.Client) int {
	t.Helper()
	list, err := testredis.Do(t, node, "CLIENT", "LIST").ToString()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		if f["sub"] != "0" || f["psub"] != "0" || f["ssub"] != "0" {
			if f["id"] != "" && testredis.Do(t, node, "CLIENT", "KILL", "ID", f["id"]).Error() == nil {
				n++
			}
		}
	}
	return n
}

// On a cluster, presence lives on the instances' leases as on one Redis:
// the refresh (a call per room, rooms on every master) keeps open streams'
// users seen two TTLs after their join, and the sweep (the registry in a
// slot of its own, Redis' TIME from any node) removes a dead instance's
// stream and announces the leave.
func TestCluster_PresenceOnTheInstanceLease(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	url := func(c *testhub.Configs) {
		c.RedisURL = "redis+cluster://" + strings.Join(cl.Addrs(), ",")
		fastPresence(c)
		c.PresenceUserTTL = 900 * time.Millisecond // refresh every 300 ms
		c.KeepAlive = 200 * time.Millisecond
	}
	a := testhub.Start(t, cl.Addrs()[0], url)
	rooms := []int64{1, 2, 3, 4, 5, 6}
	joinedAt := map[int64]int64{}
	watchers := map[int64]*testhub.SSEClient{}
	for _, r := range rooms {
		watchers[r] = a.OpenStream(t, r, 100+r, "")
		watchers[r].PresenceUpdate(t, testhub.Wait)
		joinedAt[r], _ = testredis.Do(t, a.Redis, "HGET", hub.PresenceKey(r), strconv.FormatInt(100+r, 10)).AsInt64()
	}
	testhub.Eventually(t, 20*time.Second, "every room's user seen two TTLs after the join", func() bool {
		for _, r := range rooms {
			if seen, _ := testredis.Do(t, a.Redis, "HGET", hub.PresenceKey(r), strconv.FormatInt(100+r, 10)).AsInt64(); seen-joinedAt[r] < 1800 {
				return false
			}
		}
		return true
	})

	// A stream of an instance whose lease ended a second ago, last seen then.
	now := time.Now().UnixMilli()
	testredis.Do(t, a.Redis, "ZADD", hub.PresenceInstancesKey, strconv.FormatInt(now-1000, 10), "gone")
	testredis.Do(t, a.Redis, "ZADD", hub.PresenceConnsKey(2, 50), "+inf", "gone.c")
	testredis.Do(t, a.Redis, "HSET", hub.PresenceKey(2), "50", strconv.FormatInt(now-1000, 10))
	if u, f := watchers[2].PresenceUpdate(t, testhub.Wait); fmt.Sprint(u.LeftUsers) != "[50]" {
		t.Fatalf("the dead instance's user: %s", f.Data)
	}
	if l := a.PresenceList(t, 2); fmt.Sprint(online(l)) != "[102]" {
		t.Fatalf("presence of room 2: %+v", l)
	}
}
