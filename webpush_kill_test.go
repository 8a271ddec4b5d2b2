package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"roomhub/hub/webpush"
	"roomhub/internal/testbin"
	"roomhub/internal/testpush"
	"roomhub/internal/testredis"
)

// Web Push through two instances, with no keys set (outside production
// both sign with the pair the first kept in Redis): A is SIGKILLed while the
// push service holds its push; B pushes it again within LOCK_TTL_SECS + 5
// s, and the record ends sent after two attempts. Both pushes are signed
// with the one key and open to the item. The binaries reach the stand-in
// over HTTPS, trusting its certificate through SSL_CERT_FILE.
func TestBinary_WebPushSurvivesSIGKILLWhileTheServiceHoldsIt(t *testing.T) {
	bin := testbin.Build(t)
	rs := testredis.Start(t)
	ps := testpush.Start(t)
	env := []string{"REDIS_URL=" + rs.URL(), "LOCK_TTL_SECS=2", "DELIVERY_CHANNELS=webpush",
		`DELIVERY_RULES={"comment.created":{"webpush":{"onlyIfOffline":true}}}`,
		"WEBPUSH_ALLOW_PRIVATE_ENDPOINTS=true", "SSL_CERT_FILE=" + ps.CertFile(t)}
	a, procA, logsA := testbin.Start(t, bin, env...)
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	b, _, logsB := testbin.Start(t, bin, env...)
	testbin.WaitHealth(t, b, 200, 15*time.Second)

	var keys [2]string
	for i, url := range []string{a, b} {
		resp, err := http.Get(url + "/api/v1/push/vapid-public-key")
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Result struct{ PublicKey string } }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		keys[i] = body.Result.PublicKey
	}
	if keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("the instances' keys: %q", keys)
	}
	ps.SetPublicKey(keys[0])
	sub := ps.Subscription("/push/9", testpush.Hang, http.StatusCreated)
	req, _ := http.NewRequest(http.MethodPost, a+"/api/v1/push/subscriptions", strings.NewReader(sub))
	req.Header.Set("Authorization", "Bearer "+testbin.DevToken(t, a, 9))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("subscribe: %v %v", resp, err)
	}

	id := testbin.Publish(t, nil, a, `{"roomId":7,"eventType":"comment.created","data":{"title":"Still there?"},"recipientIds":[9]}`)
	nid := "7:" + id
	select {
	case <-ps.Arrived(): // one instance's push, held by the service
	case <-time.After(15 * time.Second):
		t.Fatalf("no push arrived; A's log:\n%s\nB's log:\n%s", logsA, logsB)
	}
	// Whichever instance holds it, A is killed: when it is B's, B's own
	// time limit lets it go and it tries again; when it is A's, B takes
	// over once A's lease ends.
	if err := procA.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procA.Exited()
	killed := time.Now()
	var rec struct {
		State    string
		Attempts int
	}
	testbin.Eventually(t, 4*(2*time.Second+5*time.Second+10*time.Second), "the push sent by B", func() bool {
		req, _ := http.NewRequest(http.MethodGet, b+"/api/v1/internal/notifications/"+nid+"/deliveries", nil)
		req.Header.Set("X-Internal-Key", "local_dev_internal_key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var env struct {
			Result struct {
				Deliveries []struct {
					State    string
					Attempts int
				}
			}
		}
		if json.Unmarshal(raw, &env) != nil || len(env.Result.Deliveries) != 1 {
			return false
		}
		rec = env.Result.Deliveries[0]
		return rec.State == "sent"
	})
	t.Logf("sent by B %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	got := ps.Pushes()
	if len(got) != 1 || got[0].Message.NotificationID != nid || got[0].Message.Title != "Still there?" || rec.Attempts != 2 {
		t.Fatalf("pushes taken %+v, attempts %d; want one of %s after 2 attempts", got, rec.Attempts, nid)
	}
}

// The operators' command prints a key pair the hub takes.
func TestBinary_WebPushKeysPrintsAPair(t *testing.T) {
	out, err := exec.Command(testbin.Build(t), "webpush-keys").Output()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		vars[k] = v
	}
	if _, err := webpush.ParseKeys(vars["WEBPUSH_VAPID_PUBLIC_KEY"], vars["WEBPUSH_VAPID_PRIVATE_KEY"]); err != nil || len(vars) != 2 {
		t.Fatalf("webpush-keys printed %q: %v", out, err)
	}
}
