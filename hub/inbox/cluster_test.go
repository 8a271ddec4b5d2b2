package inbox_test

import (
	"context"
	"fmt"
	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// TestCluster_InboxAcrossSlots: a room's keys and its recipients' keys live on
// different masters. Inbox writes, user streams across hubs, reads, the
// outbox sweep and the flusher all work there, each exactly once.
func TestCluster_InboxAcrossSlots(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	sink := testhub.StartSink(t, hub.DefaultConfig().InternalAPIKey)
	cfg := func(c *testhub.Configs) {
		c.RedisURL = "redis+cluster://" + strings.Join(cl.Addrs(), ",")
		c.Inbox.ReadSinkURL, c.Inbox.WriteBehindInterval, c.Inbox.OutboxGrace = sink.URL, 0, 300*time.Millisecond
	}
	var nodes []rueidis.Client
	for _, addr := range cl.Addrs() {
		nodes = append(nodes, testredis.NodeClient(t, addr))
	}
	refuseInboxes(t, false, nodes...) // a connects as the user that may die later
	a := testhub.Start(t, cl.Addrs()[0], func(c *testhub.Configs) { cfg(c); c.RedisURL = dyingURL(true, cl.Addrs()...) })
	b := testhub.Start(t, cl.Addrs()[1], cfg)
	users := []int64{1, 2, 3, 4, 5, 6} // hash tags {1}..{6} land on all three masters
	streams := map[int64]*testhub.SSEClient{}
	for _, u := range users {
		streams[u] = b.UserStream(t, u, "")
		streams[u].Next(t, testhub.Wait) // the count
		streams[u].NextCounts(t)
	}
	res := a.Notify(t, 7, "comment.created", users...)
	for _, u := range users {
		c := testhub.DecodeFrame[testhub.CreatedData](t, streams[u].Next(t, testhub.Wait), inbox.NotificationCreatedType)
		if c.NotificationID != "7:"+res.StreamID || c.Unread != 1 {
			t.Fatalf("user %d: %+v", u, c)
		}
	}
	// A dying publisher: the sweep on another hub finishes its inbox writes.
	refuseInboxes(t, true, nodes...)
	if code, _ := a.PublishRaw(t, `{"roomId":8,"eventType":"like.toggled","data":{},"recipientIds":[1,2,3,4,5,6]}`); code != 500 {
		t.Fatalf("publish through the dying hub answered %d", code)
	}
	for _, u := range users {
		c := testhub.DecodeFrame[testhub.CreatedData](t, streams[u].Next(t, 10*time.Second), inbox.NotificationCreatedType)
		if c.RoomID != 8 || c.Unread != 2 || b.UnreadOf(t, u) != 2 {
			t.Fatalf("user %d after the sweep: %+v", u, c)
		}
	}
	refuseInboxes(t, false, nodes...)
	var want []string
	for _, u := range users {
		want = append(want, a.ReadEach(t, u)...)
		for i := 0; i < 2; i++ {
			if r := testhub.DecodeFrame[testhub.ReadData](t, streams[u].Next(t, testhub.Wait), inbox.NotificationReadType); r.Unread != int64(1-i) {
				t.Fatalf("user %d read event %+v", u, r)
			}
		}
	}
	st, err := b.Inbox.FlushReads(context.Background())
	if err != nil || st.Flushed != len(want) {
		t.Fatalf("flush on the cluster: %+v %v", st, err)
	}
	sort.Strings(want)
	if got := sink.Accepted(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sink got %v, want %v", got, want)
	}
	if n := pendingReads(t, a, users...); n != 0 {
		t.Fatalf("%d reads pending after the flush", n)
	}
}
