package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/hub/topics"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// followRange makes users from..to follow topic, 10,000 a call.
func followRange(t *testing.T, do func(method, path, body string, wantCode int) topicCounts, topic string, from, to int64) {
	t.Helper()
	for lo := from; lo <= to; lo += 10000 {
		var ids []string
		for u := lo; u <= min(to, lo+9999); u++ {
			ids = append(ids, fmt.Sprint(u))
		}
		do(http.MethodPut, "/api/v1/internal/topics/"+topic+"/followers", `{"userIds":[`+strings.Join(ids, ",")+`]}`, 200)
	}
}

// fanoutOf reads a fan-out's progress through the API.
func fanoutOf(t *testing.T, th *testhub.Hub, key map[string]string, id string) topics.Fanout {
	t.Helper()
	code, env := th.Do(t, http.MethodGet, "/api/v1/internal/fanouts/"+id, key, "")
	var f topics.Fanout
	if testhub.Remarshal(t, env.Result, &f); code != 200 {
		t.Fatalf("fan-out %s: %d %+v", id, code, env)
	}
	return f
}

// A publish to a topic answers its exact recipients at once (followers but
// the excluded, with the direct recipients, each once), reaches each of
// them exactly once in the background, and its progress ends done.
func TestFanout_ReachesEachRecipientOnce(t *testing.T) {
	th, key, do := topicsHub(t, 0)
	followRange(t, do, "product:123", 1, 2500)
	code, env := th.PublishRaw(t, `{"roomId":7,"eventType":"product.back_in_stock","data":{"productId":123},
		"topic":"product:123","excludeIds":[5,5,9999],"recipientIds":[7,3000]}`)
	var res struct {
		StreamID string
		Fanout   struct {
			ID         string
			Recipients int64
		}
	}
	if testhub.Remarshal(t, env.Result, &res); code != 200 || res.Fanout.ID == "" {
		t.Fatalf("publish: %d %+v", code, env)
	}
	if want := int64(2500 - 1 + 1); res.Fanout.Recipients != want { // 5 excluded; 3000 added (7 follows)
		t.Fatalf("recipients %d, want %d", res.Fanout.Recipients, want)
	}
	testhub.Eventually(t, testhub.Wait, "the fan-out is done", func() bool {
		return fanoutOf(t, th, key, res.Fanout.ID).State == topics.StateDone
	})
	f := fanoutOf(t, th, key, res.Fanout.ID)
	if f.Reached != f.Recipients || f.TopicKey != "product:123" || f.FinishedAt == nil || f.NotificationID != res.Fanout.ID {
		t.Fatalf("done: %+v", f)
	}
	for _, u := range []int64{1, 7, 1234, 2500, 3000} {
		if n := th.UnreadOf(t, u); n != 1 {
			t.Fatalf("user %d has %d unread, want 1", u, n)
		}
	}
	if n := th.UnreadOf(t, 5); n != 0 {
		t.Fatalf("the excluded user has %d unread", n)
	}
}

// publishTopic posts a publish body; its answer must be wantCode, and is
// returned.
func publishTopic(t *testing.T, th *testhub.Hub, body string, wantCode int) hub.PublishResult {
	t.Helper()
	code, env := th.PublishRaw(t, body)
	var res hub.PublishResult
	if testhub.Remarshal(t, env.Result, &res); code != wantCode {
		t.Fatalf("publish %.80s: %d %+v, want %d", body, code, env, wantCode)
	}
	return res
}

// A retry with the same idempotencyKey answers the same fan-out and starts
// nothing (each follower keeps one item), the same key with another topic
// or other excluded is a conflict, and a topic nobody follows answers 0.
func TestFanout_RetriesAnswerTheSameAndStartNothing(t *testing.T) {
	th, key, do := topicsHub(t, 0)
	followRange(t, do, "product:123", 1, 300)
	const body = `{"roomId":7,"eventType":"product.back_in_stock","data":{"productId":123},"topic":"product:123","idempotencyKey":"p123-back"}`
	first := publishTopic(t, th, body, 200)
	if first.Fanout == nil || first.Fanout.Recipients != 300 || first.Duplicate {
		t.Fatalf("first: %+v", first)
	}
	testhub.Eventually(t, testhub.Wait, "the fan-out is done", func() bool {
		return fanoutOf(t, th, key, first.Fanout.ID).State == topics.StateDone
	})
	followRange(t, do, "product:123", 301, 310) // a retry must not reach them either
	again := publishTopic(t, th, body, 200)
	if !again.Duplicate || again.Fanout == nil || *again.Fanout != *first.Fanout || again.StreamID != first.StreamID {
		t.Fatalf("retry: %+v, first %+v", again, first)
	}
	for _, other := range []string{
		strings.Replace(body, `"topic":"product:123"`, `"topic":"product:124"`, 1),
		strings.Replace(body, `"topic":"product:123"`, `"topic":"product:123","excludeIds":[1]`, 1),
	} {
		if code, env := th.PublishRaw(t, other); code != 409 || env.Code != "NOTIF4091" {
			t.Fatalf("the key with another topic: %d %+v", code, env)
		}
	}
	if th.UnreadOf(t, 1) != 1 || th.UnreadOf(t, 305) != 0 {
		t.Fatalf("unread: user 1 %d, user 305 %d", th.UnreadOf(t, 1), th.UnreadOf(t, 305))
	}
	none := publishTopic(t, th, `{"roomId":7,"eventType":"product.back_in_stock","data":{},"topic":"nobody"}`, 200)
	if none.Fanout == nil || none.Fanout.Recipients != 0 || fanoutOf(t, th, key, none.Fanout.ID).State != topics.StateDone {
		t.Fatalf("a topic nobody follows: %+v", none)
	}
}

// Every bad topic field is a clear 400 with nothing published; an unknown
// fan-out is 404; a batch carries topic publishes like single ones.
func TestFanout_BadInputAndBatch(t *testing.T) {
	th, key, do := topicsHub(t, 0)
	followRange(t, do, "issue:42", 1, 5)
	hundredOne := make([]string, 101)
	for i := range hundredOne {
		hundredOne[i] = fmt.Sprint(i + 1)
	}
	for _, extra := range []string{
		`"topic":""`, `"topic":"a b"`, `"topic":"{t:x}"`, `"topic":"` + strings.Repeat("a", 129) + `"`, `"topic":42`, `"topic":null,"excludeIds":[1]`,
		`"excludeIds":[1]`, `"topic":"issue:42","excludeIds":[0]`, `"topic":"issue:42","excludeIds":[-1]`,
		`"topic":"issue:42","excludeIds":["1"]`, `"topic":"issue:42","excludeIds":[` + strings.Join(hundredOne, ",") + `]`,
		`"topic":"issue:42","excludeIds":1`, `"severity":"high"`,
	} {
		body := `{"roomId":7,"eventType":"comment.created","data":{},` + extra + `}`
		if code, env := th.PublishRaw(t, body); code != 400 || env.Code != "COMMON400" || env.Message == "" {
			t.Fatalf("%s: %d %+v", extra, code, env)
		}
	}
	if n := len(th.HistoryNs(t, 7)); n != 0 {
		t.Fatalf("%d events published by refused bodies", n)
	}
	for _, id := range []string{"nope", "7:1-0", "7:01-0", strings.Repeat("9", 300)} {
		if code, env := th.Do(t, http.MethodGet, "/api/v1/internal/fanouts/"+id, key, ""); code != 404 || env.Code != "COMMON404" {
			t.Fatalf("fan-out %q: %d %+v", id, code, env)
		}
		if code, _ := th.Do(t, http.MethodDelete, "/api/v1/internal/fanouts/"+id, key, ""); code != 404 {
			t.Fatalf("cancel %q: %d", id, code)
		}
	}
	if code, _ := th.Do(t, http.MethodGet, "/api/v1/internal/fanouts/7:1-0", nil, ""); code != 401 {
		t.Fatalf("without the internal key: %d", code)
	}
	code, results := th.Batch(t, `{"roomId":7,"eventType":"comment.created","data":{},"topic":"issue:42","excludeIds":[2]}`,
		`{"roomId":8,"eventType":"comment.created","data":{},"topic":"issue:42","recipientIds":[9]}`,
		`{"roomId":8,"eventType":"comment.created","data":{},"topic":"a b"}`)
	if code != 200 || len(results) != 3 || !results[0].IsSuccess || !results[1].IsSuccess || results[2].Code != "COMMON400" ||
		results[0].Result.Fanout.Recipients != 4 || results[1].Result.Fanout.Recipients != 6 {
		t.Fatalf("batch: %d %+v", code, results)
	}
	testhub.Eventually(t, testhub.Wait, "both fan-outs are done", func() bool {
		return fanoutOf(t, th, key, results[0].Result.Fanout.ID).State == topics.StateDone &&
			fanoutOf(t, th, key, results[1].Result.Fanout.ID).State == topics.StateDone
	})
	if th.UnreadOf(t, 1) != 2 || th.UnreadOf(t, 2) != 1 || th.UnreadOf(t, 9) != 1 {
		t.Fatalf("unread: %d %d %d", th.UnreadOf(t, 1), th.UnreadOf(t, 2), th.UnreadOf(t, 9))
	}
}

// A hub that dies between a topic publish's event and its fan-out's start
// (here: refused the fan-out keys, so that it fails there): a retry on
// another instance starts it, and without a retry the outbox sweep does,
// each once.
func TestFanout_InterruptedTopicPublishIsStarted(t *testing.T) {
	rs := testredis.Start(t)
	admin := testredis.Client(t, rs.Addr())
	// "dying" may touch any key but fanout*: its publishes stop at the fan-out's start
	if err := testredis.Do(t, admin, "ACL", "SETUSER", "dying", "on", ">pw", "+@all", "&*", "resetkeys",
		"~[^f]*", "~f[^a]*", "~fa[^n]*", "~fan[^o]*", "~fano[^u]*", "~fanou[^t]*").Error(); err != nil {
		t.Fatal(err)
	}
	dying := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.RedisURL = "redis://dying:pw@" + rs.Addr() })
	other := testhub.Start(t, rs.Addr(), func(c *testhub.Configs) { c.Inbox.OutboxGrace = 300 * time.Millisecond })
	key := map[string]string{"X-Internal-Key": other.Cfg.InternalAPIKey, "Content-Type": "application/json"}
	if code, env := other.Do(t, http.MethodPut, "/api/v1/internal/topics/issue:1/followers", key, `{"userIds":[1,2,3]}`); code != 200 {
		t.Fatalf("follow: %d %+v", code, env)
	}
	body := `{"roomId":72,"eventType":"comment.created","data":{},"idempotencyKey":"k1","topic":"issue:1","recipientIds":[9]}`
	if code, _ := dying.PublishRaw(t, body); code != 500 {
		t.Fatalf("publish through the dying hub answered %d, want 500", code)
	}
	retry := publishTopic(t, other, body, 200)
	if !retry.Duplicate || retry.Fanout == nil || retry.Fanout.Recipients != 4 {
		t.Fatalf("retry: %+v", retry)
	}
	// Without a retry, the sweep starts it.
	if code, _ := dying.PublishRaw(t, `{"roomId":73,"eventType":"comment.created","data":{},"topic":"issue:1","excludeIds":[3]}`); code != 500 {
		t.Fatal("the second publish through the dying hub did not fail")
	}
	testhub.Eventually(t, testhub.Wait, "both fan-outs to reach their followers", func() bool {
		return other.UnreadOf(t, 1) == 2 && other.UnreadOf(t, 2) == 2 && other.UnreadOf(t, 3) == 1
	})
	if n := other.UnreadOf(t, 9); n != 1 {
		t.Fatalf("the direct recipient has %d unread", n)
	}
	testhub.Eventually(t, testhub.Wait, "the outbox is empty", func() bool {
		n, _ := testredis.Do(t, admin, "EXISTS", hub.OutboxKey(72), hub.OutboxKey(73)).AsInt64()
		return n == 0
	})
}

// Every per-recipient rule applies to a topic's followers as to
// recipientIds: a type muted in the inbox (no item), a type muted on a
// channel (its delivery canceled), a group (a second publish joins it),
// severity, a delivery to the gateway, and the live notification.created
// with the unread count on an open stream.
func TestFanout_EveryPerRecipientRuleApplies(t *testing.T) {
	g := testhub.StartGateway(t, nil)
	th := testhub.Start(t, testredis.Start(t).Addr(), testhub.DeliveryConfig(g, `{"comment.created":{"push":{}}}`))
	key := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}
	if code, env := th.Do(t, http.MethodPut, "/api/v1/internal/topics/issue:9/followers", key, `{"userIds":[1,2,3]}`); code != 200 {
		t.Fatalf("follow: %d %+v", code, env)
	}
	if code, env := th.UserDo(t, http.MethodPut, "/api/v1/notifications/settings", 1, `{"mutedEventTypes":["comment.created"]}`); code != 200 {
		t.Fatalf("mute: %d %+v", code, env)
	}
	if code, env := th.UserDo(t, http.MethodPut, "/api/v1/notifications/settings", 2,
		`{"mutedEventTypes":[],"channels":{"push":{"mutedEventTypes":["comment.created"]}}}`); code != 200 {
		t.Fatalf("mute on a channel: %d %+v", code, env)
	}
	s := th.SettledUserStream(t, 2)
	var nids []string
	for i := range 2 {
		res := publishTopic(t, th, fmt.Sprintf(`{"roomId":4,"eventType":"comment.created","data":{"i":%d},"topic":"issue:9","groupKey":"thread:9","severity":"high"}`, i), 200)
		if res.Fanout == nil || res.Fanout.Recipients != 3 {
			t.Fatalf("publish %d: %+v", i, res)
		}
		testhub.Eventually(t, testhub.Wait, "the fan-out is done", func() bool {
			return fanoutOf(t, th, key, res.Fanout.ID).State == topics.StateDone
		})
		nids = append(nids, "4:"+res.StreamID)
	}
	if n := th.UnreadOf(t, 1); n != 0 || len(th.InboxOf(t, 1)) != 0 {
		t.Fatalf("the muted follower has %d unread", n)
	}
	r := th.WaitDelivery(t, nids[0], 2, "push", "canceled")
	if testhub.Str(r.Reason) != "muted" {
		t.Fatalf("the delivery of a type muted on its channel: %+v", r)
	}
	th.WaitDelivery(t, nids[0], 3, "push", "sent")
	for _, u := range []int64{2, 3} {
		items := th.InboxOf(t, u)
		if len(items) != 1 || items[0].Group == nil || items[0].Group.Count != 2 || items[0].Severity != "high" {
			t.Fatalf("user %d's inbox: %+v", u, items)
		}
	}
	f := s.NextMatching(t, testhub.Wait, func(f testhub.Frame) bool { return f.Event == "notification.created" })
	var created testhub.CreatedData
	if err := json.Unmarshal([]byte(f.Data), &created); err != nil || created.NotificationID != nids[0] || created.Unread != 1 {
		t.Fatalf("the live event: %s (%v)", f.Data, err)
	}
}
