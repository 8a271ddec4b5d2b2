package hub_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/testbin"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// transitions collects presence updates until want joins and leaves were seen.
type transitions struct{ joined, left map[int64]int }

func (tr *transitions) add(u testhub.PresenceData) {
	for _, j := range u.JoinedUsers {
		tr.joined[j]++
	}
	for _, l := range u.LeftUsers {
		tr.left[l]++
	}
}

func newTransitions() *transitions {
	return &transitions{joined: map[int64]int{}, left: map[int64]int{}}
}

func online(l hub.PresenceList) []int64 {
	var ids []int64
	for _, u := range l.OnlineUsers {
		ids = append(ids, u.UserID)
	}
	return ids
}

func fastPresence(c *testhub.Configs) {
	c.PresenceBroadcast = 0 // one update per transition: easy to follow in a test
}

func TestPresence_TabsJoinAndLeaveOnce(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), fastPresence)
	watcher := th.OpenStream(t, 70, 100, "")
	if u, _ := watcher.PresenceUpdate(t, testhub.Wait); u.Joined == nil || *u.Joined != 100 {
		t.Fatalf("watcher's own join: %+v", u)
	}
	tab1 := th.OpenStream(t, 70, 7, "")
	u, _ := watcher.PresenceUpdate(t, testhub.Wait)
	if u.Joined == nil || *u.Joined != 7 || u.Left != nil || u.Count != 2 || fmt.Sprint(u.OnlineUsers) != "[7 100]" ||
		fmt.Sprint(u.JoinedUsers) != "[7]" || len(u.LeftUsers) != 0 {
		t.Fatalf("join update %+v", u)
	}
	if got := testhub.MetricValue(t, th, "presence_online_users"); got != "2" {
		t.Fatalf("presence_online_users = %s, want 2", got)
	}
	l := th.PresenceList(t, 70)
	if l.Count != 2 || fmt.Sprint(online(l)) != "[7 100]" {
		t.Fatalf("GET presence %+v", l)
	}
	if _, err := time.Parse(time.RFC3339, l.OnlineUsers[0].LastSeen); err != nil {
		t.Fatalf("lastSeen %q: %v", l.OnlineUsers[0].LastSeen, err)
	}

	tab2 := th.OpenStream(t, 70, 7, "")
	tab1.Close()
	// No join for the second tab, no leave for the first: a marker event
	// published now must be the next thing the watcher sees.
	marker := th.Publish(t, 70, "comment.created", map[string]any{"marker": 1})
	f := watcher.NextMatching(t, testhub.Wait, func(testhub.Frame) bool { return true })
	if f.ID != marker.StreamID {
		t.Fatalf("after a second tab and closing the first, got %+v before the marker", f)
	}
	if l := th.PresenceList(t, 70); fmt.Sprint(online(l)) != "[7 100]" {
		t.Fatalf("user 7 must stay present with one tab open: %+v", l)
	}
	tab2.Close()
	u, _ = watcher.PresenceUpdate(t, testhub.Wait)
	if u.Left == nil || *u.Left != 7 || u.Joined != nil || fmt.Sprint(u.OnlineUsers) != "[100]" || u.Count != 1 {
		t.Fatalf("leave update %+v", u)
	}
	marker = th.Publish(t, 70, "comment.created", map[string]any{"marker": 2})
	if f := watcher.NextMatching(t, testhub.Wait, func(testhub.Frame) bool { return true }); f.ID != marker.StreamID {
		t.Fatalf("a second leave was announced: %+v", f)
	}
}

// An open stream costs Redis no write of its own between its join and its
// close: its members carry no expiry (+inf) and are named after the
// instance, whose lease stands for them; the instance refreshes its users'
// last heartbeat. Two TTLs after the join the user is still present.
func TestPresence_OpenStreamsLiveOnTheInstanceLease(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) {
		c.PresenceUserTTL = 900 * time.Millisecond // refresh every 300 ms
		c.KeepAlive = 200 * time.Millisecond       // the clock ticks every 50 ms
	})
	th.OpenStream(t, 72, 9, "")
	th.OpenStream(t, 72, 9, "")
	seen0, err := testredis.Do(t, th.Redis, "HGET", hub.PresenceKey(72), "9").AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	var instance string
	testhub.Eventually(t, 10*time.Second, "the instance's lease taken", func() bool {
		ids, _ := testredis.Do(t, th.Redis, "ZRANGE", hub.PresenceInstancesKey, "0", "-1").AsStrSlice()
		if len(ids) == 1 {
			instance = ids[0]
		}
		return instance != ""
	})
	members := func(key string) map[string]float64 {
		z, err := testredis.Do(t, th.Redis, "ZRANGE", key, "0", "-1", "WITHSCORES").AsZScores()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]float64{}
		for _, e := range z {
			if !strings.HasPrefix(e.Member, instance+".") || !math.IsInf(e.Score, 1) {
				t.Fatalf("%s holds %q scored %v: want the instance's streams, no expiry", key, e.Member, e.Score)
			}
			m[e.Member] = e.Score
		}
		return m
	}
	conns, live := members(hub.PresenceConnsKey(72, 9)), members(hub.UserOnlineKey(9))
	if len(conns) != 2 || fmt.Sprint(conns) != fmt.Sprint(live) {
		t.Fatalf("presence %v and online %v: want the two tabs in both", conns, live)
	}
	testhub.Eventually(t, 20*time.Second, "the last heartbeat refreshed two TTLs after the join", func() bool {
		seen, _ := testredis.Do(t, th.Redis, "HGET", hub.PresenceKey(72), "9").AsInt64()
		return seen-seen0 >= 1800
	})
	if now := members(hub.PresenceConnsKey(72, 9)); fmt.Sprint(now) != fmt.Sprint(conns) {
		t.Fatalf("members %v, were %v", now, conns)
	}
	if l := th.PresenceList(t, 72); fmt.Sprint(online(l)) != "[9]" {
		t.Fatalf("presence %+v", l)
	}
}

// A user taken out while their stream is open (a join Redis refused, a
// sweep that found the instance's lease lapsed) is joined again by the next
// refresh; an instance whose lease lapsed joins all its streams again.
func TestPresence_OpenStreamsJoinAgain(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) {
		c.PresenceUserTTL = 900 * time.Millisecond // refresh every 300 ms
		c.KeepAlive = 200 * time.Millisecond
	})
	th.OpenStream(t, 75, 9, "")
	conns := hub.PresenceConnsKey(75, 9)
	member, _ := testredis.Do(t, th.Redis, "ZRANGE", conns, "0", "-1").AsStrSlice()
	if len(member) != 1 {
		t.Fatalf("members %v", member)
	}
	// After a refresh of the open stream, nothing but the next refresh can
	// bring the user back.
	joined, _ := testredis.Do(t, th.Redis, "HGET", hub.PresenceKey(75), "9").AsInt64()
	testhub.Eventually(t, 10*time.Second, "a refresh", func() bool {
		seen, _ := testredis.Do(t, th.Redis, "HGET", hub.PresenceKey(75), "9").AsInt64()
		return seen != joined
	})
	testredis.Do(t, th.Redis, "HDEL", hub.PresenceKey(75), "9")
	testredis.Do(t, th.Redis, "DEL", conns)
	back := func() bool {
		in, _ := testredis.Do(t, th.Redis, "HEXISTS", hub.PresenceKey(75), "9").AsInt64()
		now, _ := testredis.Do(t, th.Redis, "ZRANGE", conns, "0", "-1").AsStrSlice()
		return in == 1 && fmt.Sprint(now) == fmt.Sprint(member)
	}
	testhub.Eventually(t, 10*time.Second, "user 9 present again", back)

	// The lease lapsed, and a sweep took the stream's member out; a
	// heartbeat keeps the user listed, so only the lapse brings it back.
	code, env := th.Do(t, http.MethodPost, "/api/v1/rooms/75/presence/heartbeat",
		map[string]string{"Authorization": "Bearer " + th.Token(t, 9)}, "")
	if code != 200 {
		t.Fatalf("heartbeat: %d %+v", code, env)
	}
	testredis.Do(t, th.Redis, "DEL", hub.PresenceInstancesKey)
	testredis.Do(t, th.Redis, "ZREM", conns, member[0])
	testhub.Eventually(t, 10*time.Second, "the stream's member back", func() bool {
		in, _ := testredis.Do(t, th.Redis, "ZSCORE", conns, member[0]).ToString()
		return in == "inf"
	})
}

func TestPresence_HeartbeatOnlyUserExpires(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) {
		fastPresence(c)
		// 3 s: the watcher's own stream refreshes every second, so a busy
		// machine's late refresh does not make the watcher leave too.
		c.PresenceUserTTL = 3 * time.Second
		c.PresenceHashTTL = 6 * time.Second
	})
	watcher := th.OpenStream(t, 71, 100, "")
	watcher.PresenceUpdate(t, testhub.Wait) // own join
	code, env := th.Do(t, http.MethodPost, "/api/v1/rooms/71/presence/heartbeat",
		map[string]string{"Authorization": "Bearer " + th.Token(t, 8)}, "")
	var ack hub.HeartbeatAck
	testhub.Remarshal(t, env.Result, &ack)
	if code != 200 || !ack.Acknowledged || ack.NextInSecs < 1 {
		t.Fatalf("heartbeat: %d %+v", code, env)
	}
	if u, _ := watcher.PresenceUpdate(t, testhub.Wait); u.Joined == nil || *u.Joined != 8 {
		t.Fatalf("heartbeat join %+v", u)
	}
	// The watcher's own stream refreshes itself; user 8 sends nothing more.
	u, _ := watcher.PresenceUpdate(t, 20*time.Second)
	if u.Left == nil || *u.Left != 8 || fmt.Sprint(u.OnlineUsers) != "[100]" {
		t.Fatalf("expiry update %+v", u)
	}
	if l := th.PresenceList(t, 71); fmt.Sprint(online(l)) != "[100]" {
		t.Fatalf("after expiry %+v", l)
	}
	if th.Hub.Metrics().Heartbeats.Get() != 1 {
		t.Fatalf("presence_heartbeat_total = %d", th.Hub.Metrics().Heartbeats.Get())
	}
}

func TestPresence_KilledInstanceLeavesNoGhost(t *testing.T) {
	rs := testredis.Start(t)
	// The watcher's hub refreshes every second (a 3 s TTL): a test machine
	// busy with -race may stall a goroutine longer than a 1 s TTL allows.
	ttl := func(c *testhub.Configs) {
		fastPresence(c)
		c.PresenceUserTTL = 3 * time.Second
		c.PresenceHashTTL = 5 * time.Second
	}
	b := testhub.Start(t, rs.Addr(), ttl)
	watcher := b.OpenStream(t, 72, 100, "")
	watcher.PresenceUpdate(t, testhub.Wait)

	bin := testbin.Build(t)
	url, cmd, _ := testbin.Start(t, bin, "REDIS_URL="+rs.URL(), "PRESENCE_USER_TTL_SECS=1", "PRESENCE_HASH_TTL_SECS=5", "PRESENCE_BROADCAST_MS=0")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	for _, user := range []int64{11, 12} {
		testhub.OpenSSE(t, fmt.Sprintf("%s/api/v1/rooms/72/stream", url), b.Token(t, user), "")
	}
	tr := newTransitions()
	for len(tr.joined) < 2 {
		u, _ := watcher.PresenceUpdate(t, testhub.Wait)
		tr.add(u)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for len(tr.left) < 2 {
		u, _ := watcher.PresenceUpdate(t, 15*time.Second)
		tr.add(u)
	}
	if tr.left[11] != 1 || tr.left[12] != 1 {
		t.Fatalf("leaves %v, want one each for 11 and 12", tr.left)
	}
	if l := b.PresenceList(t, 72); fmt.Sprint(online(l)) != "[100]" {
		t.Fatalf("ghosts remain: %+v", l)
	}
}

func TestPresence_ConcurrentOpensAndClosesAcrossInstances(t *testing.T) {
	rs := testredis.Start(t)
	cfg := func(c *testhub.Configs) { fastPresence(c); c.MaxConnectionsPerUser = 0 }
	hubs := []*testhub.Hub{testhub.Start(t, rs.Addr(), cfg), testhub.Start(t, rs.Addr(), cfg)}
	watcher := hubs[0].OpenStream(t, 73, 100, "")
	watcher.PresenceUpdate(t, testhub.Wait)
	tokens := []string{hubs[0].Token(t, 9), hubs[1].Token(t, 9)}
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := testhub.TryOpenSSE(fmt.Sprintf("%s/api/v1/rooms/73/stream", hubs[i%2].URL), tokens[i%2], "")
			if err != nil {
				errs <- err
				return
			}
			time.Sleep(time.Duration(i%5) * 10 * time.Millisecond) // overlap opens and closes
			c.Close()
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every join is followed by exactly one leave, in order, ending absent.
	marker := hubs[1].Publish(t, 73, "comment.created", map[string]any{"marker": true})
	present, joins, leaves := false, 0, 0
	for {
		f := watcher.NextMatching(t, 20*time.Second, func(testhub.Frame) bool { return true })
		if f.ID == marker.StreamID {
			break
		}
		var u testhub.PresenceData
		_ = json.Unmarshal([]byte(f.Data), &u)
		for range u.JoinedUsers {
			if present {
				t.Fatalf("user 9 joined twice without leaving: %s", f.Data)
			}
			present = true
			joins++
		}
		for range u.LeftUsers {
			if !present {
				t.Fatalf("user 9 left without being present: %s", f.Data)
			}
			present = false
			leaves++
		}
	}
	if present {
		u, _ := watcher.PresenceUpdate(t, testhub.Wait) // the last leave may trail the marker
		if len(u.LeftUsers) != 1 {
			t.Fatalf("user 9 ends present: %+v", u)
		}
		leaves++
	}
	if joins == 0 || joins != leaves {
		t.Fatalf("user 9 joined %d times and left %d times: every open was reported?", joins, leaves)
	}
	if l := hubs[0].PresenceList(t, 73); fmt.Sprint(online(l)) != "[100]" {
		t.Fatalf("with every stream closed, presence is %+v", l)
	}
	// A join and a leave on the other instance reach the watcher.
	other := hubs[1].OpenStream(t, 73, 10, "")
	if u, f := watcher.PresenceUpdate(t, testhub.Wait); fmt.Sprint(u.JoinedUsers) != "[10]" {
		t.Fatalf("a join on the other instance: %s", f.Data)
	}
	other.Close()
	if u, f := watcher.PresenceUpdate(t, testhub.Wait); fmt.Sprint(u.LeftUsers) != "[10]" {
		t.Fatalf("a leave on the other instance: %s", f.Data)
	}
}

func TestPresence_CoalescesJoins(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil) // PRESENCE_BROADCAST_MS 1000
	watcher := th.OpenStream(t, 74, 1000, "")
	watcher.PresenceUpdate(t, testhub.Wait)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for u := int64(1); u <= 200; u++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(u int64) {
			defer wg.Done()
			defer func() { <-sem }()
			tok, _ := th.Tokens.Sign(u, time.Hour)
			req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/rooms/74/presence/heartbeat", th.URL), nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			if resp, err := testhub.HTTPClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}(u)
	}
	wg.Wait()
	tr := newTransitions()
	updates := 0
	for len(tr.joined) < 200 {
		u, _ := watcher.PresenceUpdate(t, testhub.Wait)
		tr.add(u)
		updates++
		if len(u.JoinedUsers) > 1 && u.Joined != nil {
			t.Fatalf("joined must be null when several joined: %+v", u)
		}
	}
	for u := int64(1); u <= 200; u++ {
		if tr.joined[u] != 1 {
			t.Fatalf("user %d appears in %d updates' joinedUsers, want exactly 1", u, tr.joined[u])
		}
	}
	if updates > 10 {
		t.Fatalf("%d presence updates for 200 joins: not coalesced", updates)
	}
	t.Logf("200 joins in %d presence.update events", updates)
}

// The default presence (PRESENCE_BROADCAST_MS 1000, coalesced) across two
// instances: streams opened and closed on both reach a watcher on one of
// them, every join and every leave in exactly one update, coalesced.
func TestPresence_DefaultCoalescesAcrossInstances(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	hubs := []*testhub.Hub{testhub.Start(t, rs.Addr(), nil), testhub.Start(t, rs.Addr(), nil)}
	watcher := hubs[0].OpenStream(t, 76, 1000, "")
	watcher.PresenceUpdate(t, testhub.Wait)
	const users = 40
	streams := make([]*testhub.SSEClient, users)
	errs := make([]error, users)
	tokens := make([]string, users)
	for i := range tokens {
		tokens[i] = hubs[i%2].Token(t, int64(i+1))
	}
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			streams[i], errs[i] = testhub.TryOpenSSE(fmt.Sprintf("%s/api/v1/rooms/76/stream", hubs[i%2].URL), tokens[i], "")
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(streams[i].Close)
	}
	collect := func(what string, done func(*transitions) bool) (*transitions, int) {
		t.Helper()
		tr, updates := newTransitions(), 0
		for !done(tr) {
			u, _ := watcher.PresenceUpdate(t, testhub.Wait)
			tr.add(u)
			updates++
		}
		for u := int64(1); u <= users; u++ {
			if tr.joined[u]+tr.left[u] != 1 {
				t.Fatalf("%s: user %d appears %d times in joinedUsers and %d in leftUsers, want once", what, u, tr.joined[u], tr.left[u])
			}
		}
		return tr, updates
	}
	_, updates := collect("joins", func(tr *transitions) bool { return len(tr.joined) == users })
	if updates >= users {
		t.Fatalf("%d presence updates for %d joins: not coalesced", updates, users)
	}
	if l := hubs[1].PresenceList(t, 76); l.Count != users+1 {
		t.Fatalf("presence lists %d users, want %d", l.Count, users+1)
	}
	for _, c := range streams {
		c.Close()
	}
	_, updates = collect("leaves", func(tr *transitions) bool { return len(tr.left) == users })
	if updates >= users {
		t.Fatalf("%d presence updates for %d leaves: not coalesced", updates, users)
	}
}

func TestPresence_ListMaxHidesOnlineUsers(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { fastPresence(c); c.PresenceListMax = 1 })
	watcher := th.OpenStream(t, 75, 1, "")
	if u, _ := watcher.PresenceUpdate(t, testhub.Wait); fmt.Sprint(u.OnlineUsers) != "[1]" {
		t.Fatalf("%+v", u)
	}
	th.OpenStream(t, 75, 2, "")
	u, f := watcher.PresenceUpdate(t, testhub.Wait)
	if u.OnlineUsers != nil || u.Count != 2 || !json.Valid([]byte(f.Data)) {
		t.Fatalf("above PRESENCE_LIST_MAX onlineUsers must be null: %s", f.Data)
	}
}
