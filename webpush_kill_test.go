package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"roomhub/hub/push/webpush"
	"roomhub/internal/testbin"
	"roomhub/internal/testpush"
	"roomhub/internal/testredis"
)

// Web Push through two instances, with no keys set (outside production
// both sign with the pair the first kept in Redis): A is SIGKILLed while the
// push service holds its push, and after the service took it but before A
// heard the end of its answer. B pushes it again within LOCK_TTL_SECS + 5
// s, and the record ends sent after two attempts. B starts only once A
// holds the push: with both running, B could claim it first, and a push B
// holds past its own time limit after a 2xx ends sent at once. Every push is signed with the one key and
// opens to the item; the second cut-off one reaches the device twice (at
// least once, as for a gateway; the worker's tag makes the second replace
// the first). The binaries reach the stand-in over HTTPS, trusting its
// certificate through SSL_CERT_FILE.
func TestBinary_WebPushSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	keys, err := webpush.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		first int // the service's first answer
		taken int // pushes the service took in the end
	}{
		{"while the service holds it", testpush.Hang, 1},
		{"after the service took it", testpush.HangAfter2xx, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := testredis.Start(t)
			ps := testpush.Start(t)
			env := []string{"REDIS_URL=" + rs.URL(), "LOCK_TTL_SECS=2", "DELIVERY_CHANNELS=webpush",
				"WEBPUSH_VAPID_PUBLIC_KEY=" + keys.Public, "WEBPUSH_VAPID_PRIVATE_KEY=" + keys.Private(), "WEBPUSH_SUBJECT=mailto:ops@example.com",
				`DELIVERY_RULES={"comment.created":{"webpush":{"onlyIfOffline":true}}}`,
				"WEBPUSH_ALLOW_PRIVATE_ENDPOINTS=true", "WEBPUSH_ALLOWED_HOSTS=*", "SSL_CERT_FILE=" + ps.CertFile(t)}
			a, procA, logsA := testbin.Start(t, bin, env...)
			testbin.WaitHealth(t, a, 200, 15*time.Second)
			key := vapidKey(t, a)
			ps.SetPublicKey(key)
			subscribeAt(t, a, 9, ps.Subscription("/push/9", tc.first, http.StatusCreated))

			id := testbin.Publish(t, nil, a, `{"roomId":7,"eventType":"comment.created","data":{"title":"Still there?"},"recipientIds":[9]}`)
			nid := "7:" + id
			select {
			case <-ps.Arrived(): // A's push (A is alone), held by the service
			case <-time.After(15 * time.Second):
				t.Fatalf("no push arrived; A's log:\n%s", logsA)
			}
			// B starts while A holds the push: it must wait for A's lease.
			b, _, logsB := testbin.Start(t, bin, env...)
			testbin.WaitHealth(t, b, 200, 15*time.Second)
			if kb := vapidKey(t, b); kb != key {
				t.Fatalf("B signs with %q, A with %q", kb, key)
			}
			if n := len(ps.Pushes()); n > 1 {
				t.Fatalf("B pushed while A held the push: %d pushes; B's log:\n%s", n, logsB)
			}
			if err := procA.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-procA.Exited()
			killed := time.Now()
			var rec deliveryRec
			testbin.Eventually(t, 4*(2*time.Second+5*time.Second+10*time.Second), "the push sent by B", func() bool {
				if recs := deliveriesAt(b, nid); len(recs) == 1 {
					rec = recs[0]
				}
				return rec.State == "sent"
			})
			t.Logf("sent by B %v after the kill", time.Since(killed).Round(100*time.Millisecond))
			got := ps.Pushes()
			for _, p := range got {
				if p.Message.NotificationID != nid || p.Message.Title != "Still there?" {
					t.Fatalf("a push of %+v, want %s", p.Message, nid)
				}
			}
			if len(got) != tc.taken || rec.Attempts != 2 {
				t.Fatalf("pushes taken %d, attempts %d; want %d taken after 2 attempts", len(got), rec.Attempts, tc.taken)
			}
		})
	}
}

// In the dev mode (go run . without REDIS_URL or DELIVERY_*), a closed tab
// rings: webpush is on with DESIGN's rule, the key pair kept in the
// embedded Redis, the service worker served; a subscribed user with no
// stream open gets exactly one push of the item.
func TestBinary_DevModeRingsAClosedTab(t *testing.T) {
	ps := testpush.Start(t)
	a, _, logs := testbin.Start(t, testbin.Build(t), "WEBPUSH_ALLOW_PRIVATE_ENDPOINTS=true", "WEBPUSH_ALLOWED_HOSTS=*", "SSL_CERT_FILE="+ps.CertFile(t))
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	if !strings.Contains(logs.String(), "WEBPUSH_ALLOW_PRIVATE_ENDPOINTS=true") {
		t.Errorf("no warning for WEBPUSH_ALLOW_PRIVATE_ENDPOINTS=true:\n%s", logs)
	}
	resp, err := http.Get(a + "/static/roomhub-sw.js")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the service worker: %v %v\n%s", resp, err, logs)
	}
	resp.Body.Close()
	ps.SetPublicKey(vapidKey(t, a))
	subscribeAt(t, a, 5, ps.Subscription("/push/5"))
	id := testbin.Publish(t, nil, a, `{"roomId":3,"eventType":"like.toggled","data":{"title":"A like"},"recipientIds":[5]}`)
	testbin.Eventually(t, 15*time.Second, "the push", func() bool { return len(ps.Pushes()) > 0 })
	if got := ps.Pushes(); len(got) != 1 || got[0].Message.NotificationID != "3:"+id || got[0].Message.Title != "A like" {
		t.Fatalf("pushes %+v", got)
	}
}

// The operators' command prints a key pair the hub takes.
func TestBinary_WebPushKeysPrintsAPair(t *testing.T) {
	t.Parallel()
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

// vapidKey is the VAPID public key the hub at url signs with.
func vapidKey(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/api/v1/push/vapid-public-key")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Result struct{ PublicKey string } }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Result.PublicKey == "" {
		t.Fatalf("%s's VAPID key: %v", url, err)
	}
	return body.Result.PublicKey
}

// subscribeAt subscribes user's browser sub (the JSON a browser sends) at
// the hub at url.
func subscribeAt(t *testing.T, url string, user int, sub string) {
	t.Helper()
	postAs(t, url, "/api/v1/push/subscriptions", user, sub)
}

// postAs posts body to path at the hub at url as user, and fails the test
// unless it answers 200.
func postAs(t *testing.T, url, path string, user int, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testbin.DevToken(t, url, user))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST %s: %v %v", path, resp, err)
	}
	resp.Body.Close()
}

// The device routes' scripts run on the dev mode's embedded Redis too
// (miniredis's Lua): a phone registered, listed, turned off, registered
// again with its consent kept, and a browser's subscription listed beside
// it, turned off through its id.
func TestBinary_DevModeDevices(t *testing.T) {
	t.Parallel()
	ps := testpush.Start(t)
	a, _, logs := testbin.Start(t, testbin.Build(t), "WEBPUSH_ALLOW_PRIVATE_ENDPOINTS=true", "WEBPUSH_ALLOWED_HOSTS=*", "SSL_CERT_FILE="+ps.CertFile(t))
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	ps.SetPublicKey(vapidKey(t, a))
	token := testbin.DevToken(t, a, 7)
	call := func(method, path, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, a+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env struct {
			IsSuccess bool
			Result    map[string]any
		}
		if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || !env.IsSuccess {
			t.Fatalf("%s %s: %d %v %+v\n%s", method, path, resp.StatusCode, err, env, logs)
		}
		return env.Result
	}
	enabled := func() map[string]bool {
		out := map[string]bool{}
		for _, d := range call("GET", "/api/v1/push/devices", "")["devices"].([]any) {
			m := d.(map[string]any)
			out[m["platform"].(string)+"/"+m["id"].(string)] = m["enabled"].(bool)
		}
		return out
	}
	call("POST", "/api/v1/push/devices", `{"platform":"fcm","token":"abc:def","label":"Pixel"}`)
	subscribeAt(t, a, 7, ps.Subscription("/push/7"))
	devs := enabled()
	if len(devs) != 2 {
		t.Fatalf("devices: %v", devs)
	}
	for key := range devs {
		_, id, _ := strings.Cut(key, "/")
		call("PATCH", "/api/v1/push/devices/"+id, `{"enabled":false}`)
	}
	call("POST", "/api/v1/push/devices", `{"platform":"fcm","token":"abc:def"}`)
	subscribeAt(t, a, 7, ps.Subscription("/push/7"))
	for key, on := range enabled() {
		if on {
			t.Errorf("%s is on again after registering again", key)
		}
	}
}
