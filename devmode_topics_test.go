package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/internal/testbin"
)

// Topics on the embedded Redis (dev mode, no REDIS_URL): a follow of 300
// (three chunks), a page, a person's list.
func TestBinary_DevModeTopics(t *testing.T) {
	bin := testbin.Build(t)
	url, _, _ := testbin.Start(t, bin, "REDIS_URL=")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	// Topics on the embedded Redis: follow (two chunks), page, a person's list.
	do := func(method, path, body string, hdr map[string]string) string {
		t.Helper()
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return string(b)
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
	if b := do(http.MethodGet, "/api/v1/topics", "", map[string]string{"Authorization": "Bearer " + testbin.DevToken(t, url, 7)}); !strings.Contains(b, `"topicKey":"product:123"`) {
		t.Fatalf("what 7 follows in dev mode: %s", b)
	}
}
