package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/api/client"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// rueidisXAdd is the backend's own Redis client as client.XAdder: the few
// lines README shows.
type rueidisXAdd struct{ rdb rueidis.Client }

func (r rueidisXAdd) XAdd(ctx context.Context, key string, maxLen int64, fields []string) (string, error) {
	cmd := r.rdb.B().Xadd().Key(key).Maxlen().Almost().Threshold(strconv.FormatInt(maxLen, 10)).Id("*").FieldValue()
	for i := 0; i+1 < len(fields); i += 2 {
		cmd = cmd.FieldValue(fields[i], fields[i+1])
	}
	return r.rdb.Do(ctx, cmd.Build()).ToString()
}

// The backend's client (api/client, a module of its own) against a live
// hub: a publish with recipients, a batch with one refusal in its place,
// an event through ingest on the backend's own Redis (its partition
// computed), the deliveries, an empty dead list and a re-drive, a room's
// presence read with a user's token, every refusal a typed *client.Error
// (issue 43, 7).
func TestBackendClient_AgainstALiveHub(t *testing.T) {
	rs := testredis.Start(t)
	th := testhub.StartFull(t, rs.Addr(), func(c *testhub.Configs) {
		testhub.WithIngest(4)(c)
		c.Delivery.Channels, c.Delivery.SinkURL, c.Delivery.Rules = []string{"email"}, "http://127.0.0.1:1/", `{"*":{"email":{"afterSecs":3600}}}`
	}, nil, testhub.Extras{})
	ctx := context.Background()
	hc := client.New(th.URL, th.Cfg.InternalAPIKey, client.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}))

	e := client.Event{RoomID: 42, EventType: "comment.created", Data: map[string]any{"title": "Hi"},
		RecipientIDs: []int64{7}, IdempotencyKey: "c-1", Severity: "high", ExpiresAt: time.Now().Add(time.Hour).Truncate(time.Second)}
	res, err := hc.Publish(ctx, e)
	if err != nil || res.StreamID == "" || res.Duplicate {
		t.Fatalf("publish: %+v %v", res, err)
	}
	again, err := hc.Publish(ctx, e)
	if err != nil || !again.Duplicate || again.StreamID != res.StreamID {
		t.Fatalf("the same publish again: %+v %v", again, err)
	}
	e.Severity = "low"
	if _, err := hc.Publish(ctx, e); !client.IsCode(err, "NOTIF4091") {
		t.Fatalf("the key again with another body: %v, want NOTIF4091", err)
	}
	nid := res.NotificationID(42)
	if ds, err := hc.Deliveries(ctx, nid); err != nil || len(ds) != 1 || ds[0].Channel != "email" || ds[0].State != "scheduled" {
		t.Fatalf("deliveries: %+v %v", ds, err)
	}
	batch, err := hc.PublishBatch(ctx, []client.Event{
		{RoomID: 43, EventType: "comment.created"}, {RoomID: 43, EventType: "no.such.type"}, {RoomID: 44, EventType: "like.toggled"},
	})
	if err != nil || len(batch) != 3 || batch[0].Err != nil || batch[1].Err == nil || batch[1].Err.Code != "NOTIF4001" || batch[2].Err != nil {
		t.Fatalf("batch: %+v %v", batch, err)
	}
	_, err = hc.Publish(ctx, client.Event{RoomID: 0, EventType: "comment.created"})
	if !client.IsCode(err, "COMMON400") {
		t.Fatalf("a bad publish: %v, want a COMMON400 *client.Error", err)
	}
	if _, err := client.New(th.URL, "wrong").Publish(ctx, client.Event{RoomID: 1, EventType: "comment.created"}); !client.IsCode(err, "AUTH4001") {
		t.Fatalf("a wrong key: %v", err)
	}

	rdb := testredis.Client(t, rs.Addr())
	in := client.NewIngest(rueidisXAdd{rdb}, 4)
	id, err := in.Publish(ctx, client.Event{RoomID: 45, EventType: "comment.created", Data: map[string]any{"via": "ingest"}})
	if err != nil || id == "" || client.IngestKey(45, 4) != "ingest:{1}" {
		t.Fatalf("ingest: %q %v", id, err)
	}
	testhub.Eventually(t, 15*time.Second, "the ingest entry published", func() bool { return len(th.HistoryNs(t, 45)) == 1 })
	page, err := hc.DeadDeliveries(ctx, "email", 10, "")
	if err != nil || len(page.Deliveries) != 0 || page.Next != "" {
		t.Fatalf("dead: %+v %v", page, err)
	}
	entries, next, err := hc.DeadIngestEntries(ctx, -1, 10, "")
	if err != nil || len(entries) != 0 || next != "" {
		t.Fatalf("dead ingest entries: %+v %q %v", entries, next, err)
	}
	if r, err := hc.Redrive(ctx, client.Redrive{Channel: "email"}); err != nil || r.Requeued != 0 {
		t.Fatalf("redrive: %+v %v", r, err)
	}
	if _, err := hc.Redrive(ctx, client.Redrive{}); !client.IsCode(err, "COMMON400") {
		t.Fatalf("a redrive naming nothing: %v", err)
	}

	if code, _ := th.UserDo(t, http.MethodPost, "/api/v1/rooms/46/presence/heartbeat", 9, ""); code != http.StatusOK {
		t.Fatalf("heartbeat: %d", code)
	}
	p, err := hc.Presence(ctx, 46, th.Token(t, 1))
	if err != nil || p.Count != 1 || len(p.OnlineUsers) != 1 || p.OnlineUsers[0].UserID != 9 || time.Since(p.OnlineUsers[0].LastSeen) > time.Minute {
		t.Fatalf("presence: %+v %v", p, err)
	}
	if _, err := hc.Presence(ctx, 46, "not-a-token"); !client.IsCode(err, "AUTH4001") {
		t.Fatalf("presence with a bad token: %v", err)
	}
}

// The backend's client follows, pages and unfollows a topic on a live hub
// (a follow past TOPICS_PER_USER_MAX is a COMMON409 *client.Error naming
// the user), publishes to it and follows its fan-out, and deletes it.
func TestBackendClient_Topics(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.Topics.PerUserMax = 1 })
	ctx := context.Background()
	hc := client.New(th.URL, th.Cfg.InternalAPIKey)
	if added, n, err := hc.Follow(ctx, "product:123", []int64{3, 1, 2}); err != nil || added != 3 || n != 3 {
		t.Fatalf("follow: %d %d %v", added, n, err)
	}
	p, err := hc.Followers(ctx, "product:123", 0, 2)
	if err != nil || len(p.UserIDs) != 2 || p.UserIDs[0] != 1 || p.Followers != 3 || p.Next != 2 {
		t.Fatalf("first page: %+v %v", p, err)
	}
	if p, err = hc.Followers(ctx, "product:123", p.Next, 2); err != nil || len(p.UserIDs) != 1 || p.UserIDs[0] != 3 || p.Next != 0 {
		t.Fatalf("second page: %+v %v", p, err)
	}
	if _, _, err := hc.Follow(ctx, "issue:1", []int64{2}); !client.IsCode(err, "COMMON409") || !strings.Contains(err.Error(), "user 2 ") {
		t.Fatalf("past the max: %v", err)
	}
	if removed, n, err := hc.Unfollow(ctx, "product:123", []int64{2, 9}); err != nil || removed != 1 || n != 2 {
		t.Fatalf("unfollow: %d %d %v", removed, n, err)
	}

	// A publish to the topic, its progress, a cancel of a finished one.
	res, err := hc.Publish(ctx, client.Event{RoomID: 5, EventType: "comment.created", Data: map[string]int{"n": 1},
		Topic: "product:123", ExcludeIDs: []int64{3}, RecipientIDs: []int64{7}})
	if err != nil || res.Fanout == nil || res.Fanout.Recipients != 2 {
		t.Fatalf("publish to a topic: %+v %v", res, err)
	}
	var f client.Fanout
	testhub.Eventually(t, testhub.Wait, "the fan-out is done", func() bool {
		f, err = hc.Fanout(ctx, res.Fanout.ID)
		return err == nil && f.State == client.FanoutDone
	})
	if f.Reached != 2 || f.TopicKey != "product:123" || f.NotificationID != res.NotificationID(5) || f.FinishedAt.IsZero() || f.StartedAt.IsZero() {
		t.Fatalf("done: %+v", f)
	}
	if f, err := hc.CancelFanout(ctx, res.Fanout.ID); err != nil || f.State != client.FanoutDone {
		t.Fatalf("a cancel of a finished fan-out: %+v %v", f, err)
	}
	if _, err := hc.Fanout(ctx, "5:1-0"); !client.IsCode(err, "COMMON404") {
		t.Fatalf("an unknown fan-out: %v", err)
	}
	if removed, err := hc.DeleteTopic(ctx, "product:123"); err != nil || removed != 2 {
		t.Fatalf("delete: %d %v", removed, err)
	}
}

// What the console reads, through the Go client: the overview, a person,
// the running fan-outs.
func TestBackendClient_Operations(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	ctx := context.Background()
	hc := client.New(th.URL, th.Cfg.InternalAPIKey)
	s := th.OpenStream(t, 42, 7, "")
	defer s.Close()
	th.NotifyWith(t, 42, "", 7)
	var o client.Overview
	testhub.Eventually(t, testhub.Wait, "the overview counts the stream", func() bool {
		var err error
		o, err = hc.Overview(ctx)
		return err == nil && o.Connections == 1 && len(o.Instances) == 1
	})
	if o.Instances[0].ID != th.Hub.InstanceID() || o.Deliveries == nil {
		t.Fatalf("overview: %+v", o)
	}
	p, err := hc.Person(ctx, 7)
	if err != nil || !p.Online || p.Streams != 1 || !strings.Contains(string(p.Counts), `"unread":1`) || p.Devices == nil {
		t.Fatalf("person: %+v %v", p, err)
	}
	if _, err := hc.Person(ctx, 0); !client.IsCode(err, "COMMON400") {
		t.Fatalf("person 0: %v", err)
	}
	if f, err := hc.RunningFanouts(ctx, "product:1"); err != nil || len(f) != 0 {
		t.Fatalf("running fan-outs: %+v %v", f, err)
	}
}
