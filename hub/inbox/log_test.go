package inbox_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// Every key a person's notifications and actions make expires with the
// retention, the log's included, but the write-behind queue (the flusher
// empties it) and the mutes (settings): also one made again the same day,
// after the inbox was emptied. Looking at an empty inbox makes none.
func TestLog_EveryKeyOfAPersonExpires(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	// Looking at an empty inbox makes nothing.
	if c := th.CountsOf(t, 30); c.Version != 1 || th.UnreadOf(t, 30) != 0 || len(th.InboxOf(t, 30)) != 0 {
		t.Fatalf("an empty inbox: %+v", c)
	}
	if keys, _ := testredis.Do(t, th.Redis, "KEYS", "*{30}*").AsStrSlice(); len(keys) > 0 {
		t.Fatalf("looking at an empty inbox made %v", keys)
	}
	id := "95:" + th.Notify(t, 95, "comment.created", 30).StreamID
	if code, _ := th.UserDo(t, http.MethodDelete, "/api/v1/notifications/"+id, 30, ""); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	id = "95:" + th.Notify(t, 95, "comment.created", 30).StreamID
	allExpire(t, th, 30, inbox.ItemsKey(30), inbox.CountsKey(30), inbox.UnreadCountKey(30), inbox.DeletedKey(30))
	if code, _ := th.UserDo(t, http.MethodPatch, "/api/v1/notifications/"+id+"/read", 30, ""); code != 200 {
		t.Fatalf("read: %d", code)
	}
	allExpire(t, th, 30, inbox.ReadKey(30))
	// A large inbox's keys too (a tag makes it large).
	th.NotifyExtra(t, 95, "comment.created", `"tags":["a"]`, 30)
	allExpire(t, th, 30, inbox.OrderKey(30), inbox.LogKey(30))
}

// allExpire checks that every key of user has an expiry, but the
// write-behind queue, and that the keys named are among them.
func allExpire(t *testing.T, th *testhub.Hub, user int64, named ...string) {
	t.Helper()
	keys, err := th.Redis.Do(context.Background(), th.Redis.B().Keys().Pattern("*"+hub.UserTag(user)+"*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		named = slices.DeleteFunc(named, func(n string) bool { return n == k })
		if k == inbox.ReadStatusKey(user) {
			continue
		}
		if ttl, _ := testredis.Do(t, th.Redis, "TTL", k).AsInt64(); ttl <= 0 {
			t.Errorf("%s has no expiry (TTL %d)", k, ttl)
		}
	}
	if len(named) > 0 {
		t.Fatalf("keys %v were not made: the test looks at none of them (%v)", named, keys)
	}
}

// A resume reads each entry of the log once, in seq order: an item gone
// since is notification.counts (the counts of its time, with its id), so
// that no seq is missing and no gap is announced; what removed it follows.
func TestLog_AGoneItemReplaysAsItsCounts(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	s := th.SettledUserStream(t, 31)
	th.Notify(t, 96, "comment.created", 31)
	first := s.Next(t, testhub.Wait).ID
	s.Close()
	gone := "96:" + th.Notify(t, 96, "comment.created", 31).StreamID
	kept := "96:" + th.Notify(t, 96, "comment.created", 31).StreamID
	if code, _ := th.UserDo(t, http.MethodDelete, "/api/v1/notifications/"+gone, 31, ""); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	r := th.UserStream(t, 31, first)
	r.Next(t, testhub.Wait) // the count
	r.NextCounts(t)
	f := r.Next(t, testhub.Wait)
	counts := testhub.DecodeFrame[struct{ Version, Visible, Unread int64 }](t, f, inbox.NotificationCountsType)
	if f.ID == "" || counts.Version == 0 || counts.Visible != 2 || counts.Unread != 2 {
		t.Fatalf("the gone item replayed as %+v (%s), want notification.counts of its time with an id", f, f.Data)
	}
	if c := testhub.DecodeFrame[testhub.CreatedData](t, r.Next(t, testhub.Wait), inbox.NotificationCreatedType); c.NotificationID != kept || c.Unread != 3 {
		t.Fatalf("then %+v, want %s with unread 3", c, kept)
	}
	f = r.Next(t, testhub.Wait)
	if d := testhub.DecodeFrame[struct{ NotificationIDs []string }](t, f, inbox.NotificationDeletedType); len(d.NotificationIDs) != 1 || d.NotificationIDs[0] != gone {
		t.Fatalf("then %+v, want its deletion", f)
	}
}

// A user whose log an older hub kept in a stream (user:log:{u}, its seq in
// user:seq:{u}) goes on from that seq, so that a stream following them sees
// no new epoch; the old keys go. A resume from an id of the old log is a
// gap: this log does not hold it.
func TestLog_GoesOnFromAnOlderHubsSeq(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	old := testredis.Do(t, th.Redis, "XADD", "user:log:{32}", "*", "type", "notification.created", "data", "{}", "seq", "41")
	oldID, _ := old.ToString()
	testredis.Do(t, th.Redis, "SET", "user:seq:{32}", "41")
	s := th.SettledUserStream(t, 32)
	th.Notify(t, 97, "comment.created", 32)
	f := s.Next(t, testhub.Wait)
	if id, err := hub.ParseStreamID(f.ID); err != nil || id.Seq != 42 {
		t.Fatalf("the first event of the new log: %+v, want seq 42 in its id", f)
	}
	for _, k := range []string{"user:log:{32}", "user:seq:{32}"} {
		if n, _ := testredis.Do(t, th.Redis, "EXISTS", k).AsInt64(); n != 0 {
			t.Fatalf("%s is still there", k)
		}
	}
	r := th.UserStream(t, 32, oldID)
	r.Next(t, testhub.Wait)
	r.NextCounts(t)
	if f := r.Next(t, testhub.Wait); f.Event != hub.GapEventType {
		t.Fatalf("a resume from the old log's id: %+v, want system.gap", f)
	}
}

// The log keeps INBOX_MAX_ENTRIES entries, exactly: one entry goes for each
// one that comes, in a small inbox (its entries among its counts) as in a
// large one.
func TestLog_KeepsMaxEntries(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.Inbox.MaxEntries = 5 })
	for _, extra := range []string{"", `"tags":["a"]`} {
		user := int64(33)
		if extra != "" {
			user = 34
		}
		for range 12 {
			th.NotifyExtra(t, 98, "comment.created", extra, user)
		}
		// 12 created, 7 deleted by the retention of 5 items
		if got := logEntries(t, th, user); len(got) != 5 || !slices.Contains(got, "19") {
			t.Fatalf("user %d's log holds %v, want 5 entries, the newest (19) among them", user, got)
		}
	}
}

// logEntries are the seqs user's log holds, in a small inbox's counts or
// in inbox:log.
func logEntries(t *testing.T, th *testhub.Hub, user int64) []string {
	seqs, _ := testredis.Do(t, th.Redis, "HKEYS", inbox.LogKey(user)).AsStrSlice()
	counts, _ := testredis.Do(t, th.Redis, "HKEYS", inbox.CountsKey(user)).AsStrSlice()
	for _, f := range counts {
		if seq, ok := strings.CutPrefix(f, "~"); ok {
			seqs = append(seqs, seq)
		}
	}
	return seqs
}

// A small inbox (its order in its items, its log among its counts) grows
// large past 48 items: its order, counts and log go on, and a stream
// resumes across the change.
func TestLog_ASmallInboxGrowsLargeWithNothingLost(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	var ids, events []string
	s := th.SettledUserStream(t, 35)
	for i := range 60 {
		ids = append(ids, "94:"+th.Notify(t, 94, "comment.created", 35).StreamID)
		events = append(events, s.Next(t, testhub.Wait).ID)
		if i == 0 {
			if n, _ := testredis.Do(t, th.Redis, "EXISTS", inbox.OrderKey(35), inbox.LogKey(35)).AsInt64(); n != 0 {
				t.Fatal("a first notification made an order or a log key: the inbox is not small")
			}
		}
	}
	s.Close()
	if n, _ := testredis.Do(t, th.Redis, "EXISTS", inbox.OrderKey(35)).AsInt64(); n != 1 {
		t.Fatal("60 items and no inbox:order: the inbox did not grow")
	}
	if f, _ := testredis.Do(t, th.Redis, "HKEYS", inbox.CountsKey(35)).AsStrSlice(); slices.ContainsFunc(f, func(k string) bool { return k == "s" || strings.HasPrefix(k, "~") }) {
		t.Fatalf("a large inbox's counts still hold %v", f)
	}
	l := th.ListOf(t, 35, "limit=100")
	if len(l) != 60 || l[0].NotificationID != ids[59] || l[59].NotificationID != ids[0] {
		t.Fatalf("the list after growing: %d items, first %s, last %s", len(l), l[0].NotificationID, l[len(l)-1].NotificationID)
	}
	if c := th.CountsOf(t, 35); c.Visible != 60 || c.Unread != 60 {
		t.Fatalf("counts after growing: %+v", c)
	}
	r := th.UserStream(t, 35, events[9])
	r.Next(t, testhub.Wait)
	r.NextCounts(t)
	for i := 10; i < 60; i++ {
		f := r.Next(t, testhub.Wait)
		if c := testhub.DecodeFrame[testhub.CreatedData](t, f, inbox.NotificationCreatedType); c.NotificationID != ids[i] || f.ID != events[i] || c.Unread != int64(i+1) {
			t.Fatalf("replayed %d: %+v (%s), want %s as %s", i, c, f.ID, ids[i], events[i])
		}
	}
}

// An older hub, which knows no small inbox, adds to one as it adds to any
// (an item holding its body, inbox:order, unread_count): the next script
// that reads the inbox takes the small inbox's items into that order, so
// the list and the counts hold all of them, each once.
func TestLog_AnOlderHubsAddToASmallInboxIsTakenIn(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	first := "93:" + th.Notify(t, 93, "comment.created", 36).StreamID
	second := "93:" + th.Notify(t, 93, "comment.created", 36).StreamID
	res := th.Publish(t, 93, "comment.created", map[string]any{"k": 1}) // its room event; the older hub's inbox write follows
	old := "93:" + res.StreamID
	sid, _ := hub.ParseStreamID(res.StreamID)
	testredis.Do(t, th.Redis, "HSETNX", inbox.ItemsKey(36), old, `{"notificationId":"`+old+`","roomId":93,"eventType":"comment.created","data":{"k":1},"publisherId":null,"timestamp":"2026-12-07T00:00:00.000Z"}`)
	testredis.Do(t, th.Redis, "ZADD", inbox.OrderKey(36), strconv.FormatUint(sid.Ms*1024, 10), old)
	testredis.Do(t, th.Redis, "INCR", inbox.UnreadCountKey(36))
	l := th.ListOf(t, 36, "")
	if len(l) != 3 || l[0].NotificationID != old || l[1].NotificationID != second || l[2].NotificationID != first {
		t.Fatalf("the list after an older hub's add: %+v", l)
	}
	if c := th.CountsOf(t, 36); c.Visible != 3 || c.Unread != 3 {
		t.Fatalf("counts after an older hub's add: %+v", c)
	}
	if f, _ := testredis.Do(t, th.Redis, "HKEYS", inbox.CountsKey(36)).AsStrSlice(); slices.Contains(f, "k") {
		t.Fatalf("the inbox is still small: %v", f)
	}
	last := "93:" + th.Notify(t, 93, "comment.created", 36).StreamID
	if l := th.ListOf(t, 36, ""); len(l) != 4 || l[0].NotificationID != last {
		t.Fatalf("then a new notification: %+v", l)
	}
}

// A large inbox an older hub kept (counts renewed this period, a log
// stream) takes its first entry of this version's log in a fan-out, which
// renews no key this period: the log's key expires all the same.
func TestLog_AnOlderHubsInboxTakesALogThatExpires(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.Start(t, rs.Addr(), nil)
	old := "92:" + th.Publish(t, 92, "comment.created", map[string]any{"k": 1}).StreamID
	period := strconv.FormatInt(time.Now().UnixMilli()/86400000, 10)
	testredis.Do(t, th.Redis, "HSET", inbox.ItemsKey(37), old, `{"notificationId":"`+old+`","roomId":92,"eventType":"comment.created","data":{"k":1},"publisherId":null,"timestamp":"2026-12-07T00:00:00.000Z"}`)
	testredis.Do(t, th.Redis, "ZADD", inbox.OrderKey(37), strconv.FormatInt(time.Now().UnixMilli()*1024, 10), old)
	testredis.Do(t, th.Redis, "HSET", inbox.CountsKey(37), "v", "1", "visible", "1", "unread", "1", "unseen", "1", "kept", period)
	testredis.Do(t, th.Redis, "SET", inbox.UnreadCountKey(37), "1")
	th.Notify(t, 92, "comment.created", 37)
	if ttl, _ := testredis.Do(t, th.Redis, "TTL", inbox.LogKey(37)).AsInt64(); ttl <= 0 {
		t.Fatalf("the log an older hub's inbox took has no expiry (TTL %d)", ttl)
	}
	if l := th.ListOf(t, 37, ""); len(l) != 2 || l[1].NotificationID != old {
		t.Fatalf("the older hub's item and the new one: %+v", l)
	}
}
