package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/internal/testbin"
)

// Topics on the embedded Redis (dev mode, no REDIS_URL): a follow of 300
// (three chunks), a page, a person's list, a publish to the topic fanned
// out to every follower but the excluded, a delete.
func TestBinary_DevModeTopics(t *testing.T) {
	bin := testbin.Build(t)
	base, _, _ := testbin.Start(t, bin, "REDIS_URL=")
	testbin.WaitHealth(t, base, 200, 15*time.Second)
	// Topics on the embedded Redis: follow (two chunks), page, a person's list.
	do := func(method, path, body string, hdr map[string]string) string {
		t.Helper()
		return httpBody(t, method, base+path, body, hdr)
	}
	key := map[string]string{"X-Internal-Key": "local_dev_internal_key", "Content-Type": "application/json"}
	ids := make([]string, 300)
	for i := range ids {
		ids[i] = strconv.Itoa(300 - i)
	}
	if b := do(http.MethodPut, "/api/v1/internal/topics/product:123/followers", `{"userIds":[`+strings.Join(ids, ",")+`]}`, key); !strings.Contains(b, `"added":300,"followers":300`) {
		t.Fatalf("follow in dev mode: %s", b)
	}
	if b := do(http.MethodGet, "/api/v1/internal/topics/product:123/followers?after=298", "", key); !strings.Contains(b, `"userIds":[299,300],"followers":300,"nextAfter":null`) &&
		!strings.Contains(b, `"followers":300,"nextAfter":null,"userIds":[299,300]`) {
		t.Fatalf("a page in dev mode: %s", b)
	}
	if b := do(http.MethodGet, "/api/v1/topics", "", map[string]string{"Authorization": "Bearer " + testbin.DevToken(t, base, 7)}); !strings.Contains(b, `"topicKey":"product:123"`) {
		t.Fatalf("what 7 follows in dev mode: %s", b)
	}
	pub := do(http.MethodPost, "/api/v1/notifications/publish", `{"roomId":1,"eventType":"comment.created","data":{"text":"back in stock"},"topic":"product:123","excludeIds":[8]}`, key)
	var res struct {
		Result struct {
			Fanout struct {
				ID         string
				Recipients int
			}
		}
	}
	if err := json.Unmarshal([]byte(pub), &res); err != nil || res.Result.Fanout.Recipients != 299 {
		t.Fatalf("a publish to the topic in dev mode: %s", pub)
	}
	testbin.Eventually(t, 15*time.Second, "the fan-out to be done", func() bool {
		return strings.Contains(do(http.MethodGet, "/api/v1/internal/fanouts/"+url.PathEscape(res.Result.Fanout.ID), "", key), `"state":"done"`)
	})
	unread := func(user int) string {
		return do(http.MethodGet, "/api/v1/notifications/unread", "", map[string]string{"Authorization": "Bearer " + testbin.DevToken(t, base, user)})
	}
	if b := unread(7); !strings.Contains(b, `"count":1`) {
		t.Fatalf("a follower's unread in dev mode: %s", b)
	}
	if b := unread(8); !strings.Contains(b, `"count":0`) {
		t.Fatalf("the excluded follower's unread in dev mode: %s", b)
	}
	if b := do(http.MethodDelete, "/api/v1/internal/topics/product:123", "", key); !strings.Contains(b, `"removed":300`) {
		t.Fatalf("a delete in dev mode: %s", b)
	}
	testbin.Eventually(t, 15*time.Second, "7's list cleaned", func() bool {
		return !strings.Contains(do(http.MethodGet, "/api/v1/topics", "", map[string]string{"Authorization": "Bearer " + testbin.DevToken(t, base, 7)}), "product:123")
	})
}
