package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub/inbox"
	"roomhub/hub/topics"
	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

// killFollowers is how many follow the topic of the kill test: enough
// steps that the kill lands mid-way.
const killFollowers = 60000

// A topic publish's fan-out is run by instance A, SIGKILLed mid-way; B,
// started after the kill, takes it over within LOCK_TTL_SECS + 5 s, and
// Redis (with AOF) restarts under B. Every follower gets the item exactly
// once: one inbox item, an unread count of one, and the fan-out ends done
// with every recipient reached.
func TestBinary_TopicFanoutExactlyOnceThroughSIGKILL(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	rs := testredis.StartWith(t, "--appendonly", "yes", "--appendfsync", "always")
	rdb := testredis.Client(t, rs.Addr())
	env := []string{"REDIS_URL=" + rs.URL(), "LOCK_TTL_SECS=2"}
	a, procA, logsA := testbin.Start(t, bin, env...)
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	for lo := 1; lo <= killFollowers; lo += topics.MaxIDs {
		ids := make([]string, 0, topics.MaxIDs)
		for u := lo; u < lo+topics.MaxIDs; u++ {
			ids = append(ids, fmt.Sprint(u))
		}
		internalCall(t, http.MethodPut, a+"/api/v1/internal/topics/product:123/followers", `{"userIds":[`+strings.Join(ids, ",")+`]}`)
	}
	var res struct{ Fanout struct{ ID string } }
	internalCall(t, http.MethodPost, a+"/api/v1/notifications/publish",
		`{"roomId":1,"eventType":"comment.created","data":{"text":"back in stock"},"topic":"product:123"}`, &res)
	id := res.Fanout.ID
	reached := func() int64 {
		n, _ := rdb.Do(t.Context(), rdb.B().Hget().Key(topics.FanoutKey(id)).Field("reached").Build()).AsInt64()
		return n
	}
	testbin.Eventually(t, 60*time.Second, "A to be mid-way", func() bool { return reached() > 0 })
	if err := procA.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procA.Exited()
	killed, at := time.Now(), reached()
	if at >= killFollowers {
		t.Fatalf("the fan-out was over before the kill: the test proves nothing; A's log:\n%s", logsA)
	}
	t.Logf("A killed with %d of %d reached", at, killFollowers)

	b, _, logsB := testbin.Start(t, bin, env...)
	testbin.WaitHealth(t, b, 200, 15*time.Second)
	// within LOCK_TTL_SECS + 5 s; the wait allows four times that, for a busy machine
	testbin.Eventually(t, 4*(2+5)*time.Second, "B to go on", func() bool { return reached() > at })
	t.Logf("B went on %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	rs.Restart()
	var f topics.Fanout
	testbin.Eventually(t, 120*time.Second, "the fan-out to be done", func() bool {
		f = topics.Fanout{}
		internalCall(t, http.MethodGet, b+"/api/v1/internal/fanouts/"+id, "", &f)
		return f.State == topics.StateDone
	})
	if f.Recipients != killFollowers || f.Reached != killFollowers {
		t.Fatalf("done: %+v", f)
	}
	checkOnce(t, rdb, id, killFollowers)
	if t.Failed() {
		t.Logf("B's log:\n%s", logsB)
	}
}

// checkOnce checks that users 1..n hold notification nid and count one
// unread each.
func checkOnce(t *testing.T, rdb rueidis.Client, nid string, n int64) {
	t.Helper()
	for lo := int64(1); lo <= n; lo += 5000 {
		var cmds rueidis.Commands
		for u := lo; u < lo+5000 && u <= n; u++ {
			cmds = append(cmds, rdb.B().Hexists().Key(inbox.ItemsKey(u)).Field(nid).Build(),
				rdb.B().Get().Key(inbox.UnreadCountKey(u)).Build())
		}
		res := rdb.DoMulti(t.Context(), cmds...)
		for i := 0; i < len(res); i += 2 {
			has, _ := res[i].AsBool()
			unread, _ := res[i+1].AsInt64()
			if !has || unread != 1 {
				t.Fatalf("user %d: holds the item %v, unread %d", lo+int64(i/2), has, unread)
			}
		}
	}
}

// internalCall sends body with the dev internal key; the answer must be
// 200, and its result goes into out (when given).
func internalCall(t *testing.T, method, url, body string, out ...any) {
	t.Helper()
	b := httpBody(t, method, url, body, map[string]string{"X-Internal-Key": "local_dev_internal_key", "Content-Type": "application/json"})
	if len(out) > 0 {
		var env struct{ Result json.RawMessage }
		if err := json.Unmarshal([]byte(b), &env); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(env.Result, out[0]); err != nil {
			t.Fatal(err)
		}
	}
}

// httpBody sends body with the headers hdr; the answer must be 200, and its
// body is returned.
func httpBody(t *testing.T, method, url, body string, hdr map[string]string) string {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
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
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return string(b)
}
