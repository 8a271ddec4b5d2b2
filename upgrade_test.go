package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

// beforeLifecycle is the last commit before the inbox lifecycle, and
// beforeSmallInboxes the last before an event's body was kept once and a
// new inbox small (its user log a stream): binaries a rolling deploy
// upgrades from.
const (
	beforeLifecycle    = "3ceaf66"
	beforeSmallInboxes = "1dec698"
)

// buildAt builds roomhub as it was at commit rev (from this repository's
// history) and returns the binary's path.
func buildAt(t *testing.T, rev string) string {
	t.Helper()
	if exec.Command("git", "cat-file", "-e", rev+"^{commit}").Run() != nil {
		// A shallow clone lacks the history; make test runs in a full one.
		t.Skipf("commit %s is not in this clone's history (shallow?): the old binary cannot be built", rev)
	}
	src := t.TempDir()
	if out, err := exec.Command("sh", "-c", "git archive "+rev+" | tar -x -C "+src).CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v %s", rev, err, out)
	}
	bin := filepath.Join(t.TempDir(), "roomhub-"+rev)
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build at %s: %v %s", rev, err, out)
	}
	return bin
}

// A rolling deploy from the hub before the inbox lifecycle to this one,
// under publishing: the old and the new instance share one Redis, each
// publish with recipients goes to one of them and its retry (same
// idempotency key) to the other, reads go to both, then the old instance
// stops. Nothing is lost or counted twice: every recipient has each accepted
// event once, and the new counts equal the lists.
func TestBinary_RollingUpgradeOfTheInboxLosesAndDoubleCountsNothing(t *testing.T) {
	t.Parallel()
	rollingUpgrade(t, beforeLifecycle)
}

// The same from the hub before small inboxes: while it lives the new one
// writes what it reads (items holding their bodies, large inboxes); once it
// is gone, what the new one writes next (bodies kept once) joins what the
// old one wrote.
func TestBinary_RollingUpgradeToSmallInboxesLosesAndDoubleCountsNothing(t *testing.T) {
	t.Parallel()
	rollingUpgrade(t, beforeSmallInboxes)
}

func rollingUpgrade(t *testing.T, from string) {
	old, bin := buildAt(t, from), testbin.Build(t)
	rs := testredis.Start(t)
	a, cmdA, logsA := testbin.Start(t, old, "REDIS_URL="+rs.URL(), "MAX_CONNECTIONS_PER_USER=0")
	b, _, logsB := testbin.Start(t, bin, "REDIS_URL="+rs.URL(), "MAX_CONNECTIONS_PER_USER=0", "PRESENCE_USER_TTL_SECS=3")
	testbin.WaitHealth(t, a, 200, 20*time.Second)
	testbin.WaitHealth(t, b, 200, 20*time.Second)
	accepted := publishAcrossVersions(t, a, b)
	if len(accepted) != 20 {
		t.Fatalf("%d distinct events accepted for 20 keys: a retry across versions published twice", len(accepted))
	}
	if err := cmdA.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-cmdA.Exited()
	// The new instance alone: once it has seen the old one gone, what it
	// writes is its own version's, beside what the old one wrote.
	rdb := testredis.Client(t, rs.Addr())
	testbin.Eventually(t, 20*time.Second, "the new instance's next writes are its own version's", func() bool {
		id, err := testbin.TryPublish(nil, b, `{"roomId":401,"eventType":"comment.created","data":{},"recipientIds":[24]}`)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := rdb.Do(t.Context(), rdb.B().Exists().Key("inbox:body:401:"+id).Build()).AsInt64()
		return n == 1
	})
	for i := range 3 {
		id, err := testbin.TryPublish(nil, b, fmt.Sprintf(`{"roomId":401,"eventType":"comment.created","data":{"after":%d},"recipientIds":[21,22,23]}`, i))
		if err != nil {
			t.Fatal(err)
		}
		accepted["401:"+id] = true
	}
	for _, u := range []int{21, 22, 23} {
		if problem := eachOnceAndCounted(t, b, u, accepted); problem != "" {
			t.Fatalf("%s\nold:\n%s\nnew:\n%s", problem, logsA, logsB)
		}
	}
}

// acrossVersions is a client whose answers are not checked against
// api/openapi.yaml (TestMain's check): an old binary answers in its own
// version's shapes.
var acrossVersions = &http.Client{Transport: http.DefaultTransport}

// upgradeDo sends a request as user to the instance at base and returns
// the status and the envelope's result.
func upgradeDo(t *testing.T, base, method, path string, user int, body string) (int, json.RawMessage) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testbin.DevToken(t, base, user))
	req.Header.Set("Content-Type", "application/json")
	resp, err := acrossVersions.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct{ Result json.RawMessage }
	_ = json.NewDecoder(resp.Body).Decode(&env)
	return resp.StatusCode, env.Result
}

// publishAcrossVersions publishes 20 events to users 21, 22 and 23, each
// through one instance and its retry (same key) through the other, with
// reads on both between; it returns the notificationIds accepted.
func publishAcrossVersions(t *testing.T, a, b string) map[string]bool {
	accepted := map[string]bool{}
	for i := 0; i < 40; i++ {
		body := fmt.Sprintf(`{"roomId":401,"eventType":"comment.created","data":{"n":%d},"recipientIds":[21,22,23],"idempotencyKey":"up-%d"}`, i/2, i/2)
		base := []string{a, b}[i%2] // the retry of each key goes to the other version
		id, err := testbin.TryPublish(acrossVersions, base, body)
		if err != nil {
			t.Fatalf("publish %d through %s: %v", i, base, err)
		}
		accepted["401:"+id] = true
		switch i % 8 {
		case 3:
			if code, _ := upgradeDo(t, a, http.MethodPost, "/api/v1/notifications/read-all", 21, ""); code != 200 {
				t.Fatalf("read-all on the old instance: %d", code)
			}
		case 5:
			if code, _ := upgradeDo(t, b, http.MethodPatch, "/api/v1/notifications/401:"+id+"/read", 22, ""); code != 200 {
				t.Fatalf("read on the new instance: %d", code)
			}
		case 7:
			if code, _ := upgradeDo(t, a, http.MethodPatch, "/api/v1/notifications/401:"+id+"/read", 23, ""); code != 200 {
				t.Fatalf("read on the old instance: %d", code)
			}
		}
	}
	return accepted
}

// eachOnceAndCounted is what is wrong with u's inbox on the instance at b
// ("" when nothing): every accepted event listed once, the counts those of
// the list.
func eachOnceAndCounted(t *testing.T, b string, u int, accepted map[string]bool) string {
	var counts struct{ Visible, Unread, Unseen int }
	if code, raw := upgradeDo(t, b, http.MethodGet, "/api/v1/notifications/counts", u, ""); code != 200 || json.Unmarshal(raw, &counts) != nil {
		t.Fatalf("user %d counts: %d %s", u, code, raw)
	}
	var page struct {
		Notifications []struct {
			NotificationID string
			ReadAt         *string
		}
	}
	if code, raw := upgradeDo(t, b, http.MethodGet, "/api/v1/notifications?limit=100", u, ""); code != 200 || json.Unmarshal(raw, &page) != nil {
		t.Fatalf("user %d list: %d %s", u, code, raw)
	}
	seen, unread := map[string]bool{}, 0
	for _, n := range page.Notifications {
		if seen[n.NotificationID] || !accepted[n.NotificationID] {
			t.Fatalf("user %d: %s listed twice, or never accepted", u, n.NotificationID)
		}
		seen[n.NotificationID] = true
		if n.ReadAt == nil {
			unread++
		}
	}
	if len(seen) != len(accepted) || counts.Visible != len(seen) || counts.Unread != unread {
		return fmt.Sprintf("user %d: %d of %d events listed, %d unread; counts %+v", u, len(seen), len(accepted), unread, counts)
	}
	return ""
}
