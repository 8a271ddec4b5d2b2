package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"roomhub/hub/topics"
	"roomhub/internal/testhub"
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
