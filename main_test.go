package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"roomhub/internal/sse"
	"roomhub/internal/testbin"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

func healthStatus(url string) (int, string) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url + "/health")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	var env struct {
		Result struct{ Status string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&env)
	return resp.StatusCode, env.Result.Status
}

// TestMain removes the binary the tests built (testbin.Build: once a
// process) and closes the shared Chromium.
func TestMain(m *testing.M) {
	// Every JSON answer the binary gives these tests (through http.Get and
	// http.DefaultClient) is checked against api/openapi.yaml.
	http.DefaultClient.Transport = testhub.SpecChecked(nil)
	code := m.Run()
	testbin.Clean()
	testbrowser.Stop()
	os.Exit(code)
}

func TestBinary_HealthFollowsRedis(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	rs := testredis.Start(t)
	url, cmd, logs := testbin.Start(t, bin, "REDIS_URL="+rs.URL())
	testbin.WaitHealth(t, url, 200, 15*time.Second)

	rs.Kill()
	testbin.WaitHealth(t, url, 503, 10*time.Second)
	if _, status := healthStatus(url); status != "degraded" {
		t.Fatalf("status = %q while Redis is down, want degraded", status)
	}
	rs.Restart()
	testbin.WaitHealth(t, url, 200, 20*time.Second)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cmd.Exited():
	case <-time.After(20 * time.Second):
		t.Fatalf("hub did not exit within 20s of SIGTERM\n%s", logs)
	}
	if !strings.Contains(logs.String(), `"stopped"`) {
		t.Fatalf("no clean stop in logs:\n%s", logs)
	}
}

func TestBinary_DevModeWithoutRedis(t *testing.T) {
	bin := testbin.Build(t)
	url, _, logs := testbin.Start(t, bin, "REDIS_URL=")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	if !strings.Contains(logs.String(), "dev mode") {
		t.Fatalf("dev mode not announced:\n%s", logs)
	}
}

// The newcomer's first sight: in dev mode (no REDIS_URL), two users' page
// streams in one room, as the demo's two tabs hold them, each see the
// other join, and leave; PRESENCE_BROADCAST_MS is the default (1000), so
// the later updates wait out the broadcast gate, which expires by its TTL.
func TestBinary_DevModePresenceBetweenTwoTabs(t *testing.T) {
	bin := testbin.Build(t)
	url, _, logs := testbin.Start(t, bin, "REDIS_URL=")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	type update struct{ JoinedUsers, LeftUsers []int64 }
	open := func(user int) (<-chan update, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
			fmt.Sprintf("%s/api/v1/stream?rooms=78&notifications=true&token=%s", url, testbin.DevToken(t, url, user)), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("user %d's page stream: %v %v", user, err, resp)
		}
		updates := make(chan update, 100)
		go func() {
			defer close(updates)
			defer resp.Body.Close()
			_ = sse.Parse(resp.Body, func(f sse.Frame) bool {
				var u update
				if f.Event == "presence.update" && json.Unmarshal([]byte(f.Data), &u) == nil {
					updates <- u
				}
				return true
			})
		}()
		return updates, cancel
	}
	// waitFor reads updates until one reports what want says.
	waitFor := func(updates <-chan update, what string, want func(update) bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case u, ok := <-updates:
				if !ok {
					t.Fatalf("the stream ended before %s\n%s", what, logs)
				}
				if want(u) {
					return
				}
			case <-deadline:
				t.Fatalf("no presence.update with %s within 10 s\n%s", what, logs)
			}
		}
	}
	has := func(ids []int64, id int64) bool { return slices.Contains(ids, id) }
	tab31, close31 := open(31)
	defer close31()
	waitFor(tab31, "31's own join", func(u update) bool { return has(u.JoinedUsers, 31) })
	tab32, close32 := open(32)
	waitFor(tab31, "32's join, seen by 31", func(u update) bool { return has(u.JoinedUsers, 32) })
	waitFor(tab32, "32's join, seen by 32", func(u update) bool { return has(u.JoinedUsers, 32) })
	close32()
	waitFor(tab31, "32's leave, seen by 31", func(u update) bool { return has(u.LeftUsers, 32) })
}

// A VAPID key pair for the configuration tests (RFC 8291 Appendix A's user
// agent pair: any P-256 pair will do).
const (
	webPushPublic  = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	webPushPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
)

// A bad variable stops start-up with a message naming it, before Redis is
// waited for.
func TestBinary_BadConfigStops(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	// run starts the binary with env added, each start under a bound of its
	// own: on a busy machine twenty starts must not add up to one.
	run := func(env ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = append(os.Environ(), env...)
		return cmd.CombinedOutput()
	}
	out, err := run("SSE_KEEPALIVE_SECS=often")
	if err == nil || !strings.Contains(string(out), "SSE_KEEPALIVE_SECS") {
		t.Fatalf("want a start-up failure naming SSE_KEEPALIVE_SECS, got %v: %s", err, out)
	}
	out, err = run("HUB_ENV=production")
	if err == nil || !strings.Contains(string(out), "JWT_SECRET") {
		t.Fatalf("production with the dev secret must not start: %v: %s", err, out)
	}
	for _, bad := range []string{"redis://user:hunter2secret@localhost:notaport/0", "garbage"} { // a host without a port too
		out, err = run("REDIS_URL=" + bad)
		if err == nil || !strings.Contains(string(out), "REDIS_URL") || strings.Contains(string(out), "hunter2secret") {
			t.Fatalf("a malformed REDIS_URL must stop start-up, named, its password hidden: %v: %s", err, out)
		}
	}
	for v, env := range map[string][]string{
		"DELIVERY_RULES":    {"DELIVERY_CHANNELS=push", "DELIVERY_SINK_URL=http://127.0.0.1:1/", `DELIVERY_RULES={"comment.created":{"fax":{}}}`},
		"DELIVERY_SINK_URL": {"DELIVERY_CHANNELS=push"},
		"DELIVERY_CAPS":     {"DELIVERY_CHANNELS=push", "DELIVERY_SINK_URL=http://127.0.0.1:1/", "DELIVERY_CAPS=10"},
		"WEBPUSH_SUBJECT":   {"DELIVERY_CHANNELS=webpush", "WEBPUSH_VAPID_PUBLIC_KEY=" + webPushPublic, "WEBPUSH_VAPID_PRIVATE_KEY=" + webPushPrivate},
		"FCM_CREDENTIALS":   {"DELIVERY_CHANNELS=fcm", `FCM_CREDENTIALS={"type":"authorized_user","private_key":"hunter2secret"}`},
		"APNS_PRIVATE_KEY": {"DELIVERY_CHANNELS=apns", "APNS_KEY_ID=K", "APNS_TEAM_ID=T", "APNS_TOPIC=com.example.app",
			"APNS_PRIVATE_KEY=-----BEGIN PRIVATE KEY-----\nhunter2secret\n-----END PRIVATE KEY-----\n"},
		"WEBPUSH_VAPID_PUBLIC_KEY": {"DELIVERY_CHANNELS=webpush", "WEBPUSH_SUBJECT=mailto:ops@example.com",
			"WEBPUSH_VAPID_PUBLIC_KEY=BEsAkevF0dtcA3qxKqT8CKmJWE9-FG-r-XGuQgNMVSdZ59mMmjQ2GGFF_zsQa7-T0oUenb_HNAbAPFzDsDs2LKg", "WEBPUSH_VAPID_PRIVATE_KEY=" + webPushPrivate},
	} {
		out, err = run(append([]string{"REDIS_URL=redis://127.0.0.1:1"}, env...)...)
		if err == nil || !strings.Contains(string(out), v) || strings.Contains(string(out), "hunter2secret") {
			t.Fatalf("a bad %s must stop start-up, named (a key hidden), before Redis is waited for: %v: %s", v, err, out)
		}
	}
	// A key in another form (base64, quoted as docker --env-file keeps it,
	// \n-escaped, or taken for a path) and a REDIS_URL whose password holds
	// / or @: named, nothing of the secret printed (hardening V, 13).
	key := "-----BEGIN PRIVATE KEY-----\nhunter2secret\n-----END PRIVATE KEY-----\n"
	apns := []string{"DELIVERY_CHANNELS=apns", "APNS_KEY_ID=K", "APNS_TEAM_ID=T", "APNS_TOPIC=com.example.app"}
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"APNS_PRIVATE_KEY", append(apns, "APNS_PRIVATE_KEY="+base64.StdEncoding.EncodeToString([]byte(key)))},
		{"APNS_PRIVATE_KEY", append(apns, `APNS_PRIVATE_KEY="`+strings.ReplaceAll(key, "\n", `\n`)+`"`)},
		{"APNS_PRIVATE_KEY", append(apns, "APNS_PRIVATE_KEY=hunter2secret")},
		{"FCM_CREDENTIALS", []string{"DELIVERY_CHANNELS=fcm", "FCM_CREDENTIALS=" + base64.StdEncoding.EncodeToString([]byte(`{"type":"service_account","private_key":"hunter2secret"}`))}},
		{"FCM_CREDENTIALS", []string{"DELIVERY_CHANNELS=fcm", "FCM_CREDENTIALS=hunter2secret/not/a/file"}},
		{"REDIS_URL", []string{"REDIS_URL=redis://:hunter2/secret@localhost:notaport/0"}},
		{"REDIS_URL", []string{"REDIS_URL=redis://:hunter2@secret@localhost:notaport/0"}},
		{"REDIS_URL", []string{"REDIS_URL=redis://:hunter2 secret@local host/0"}},
	} {
		out, err = run(append([]string{"REDIS_URL=redis://127.0.0.1:1"}, c.env...)...)
		if err == nil || !strings.Contains(string(out), c.name) || strings.Contains(string(out), "hunter2") || strings.Contains(string(out), "secret@") {
			t.Fatalf("%.60s…: want start-up stopped naming %s, nothing of the secret printed: %v: %s", c.env[len(c.env)-1], c.name, err, out)
		}
	}
	out, err = run("HUB_ENV=production", "JWT_SECRET="+strings.Repeat("s", 32), "INTERNAL_API_KEY="+strings.Repeat("k", 32))
	if err == nil || !strings.Contains(string(out), "ROOM_AUTH") {
		t.Fatalf("production without ROOM_AUTH must not start: %v: %s", err, out)
	}
	// Every secret set, but no REDIS_URL: never the embedded Redis in production.
	out, err = run("HUB_ENV=production", "JWT_SECRET="+strings.Repeat("s", 32), "INTERNAL_API_KEY="+strings.Repeat("k", 32), "ROOM_AUTH=claim")
	if err == nil || !strings.Contains(string(out), "REDIS_URL") || strings.Contains(string(out), "dev mode:") {
		t.Fatalf("production without REDIS_URL must not start: %v: %s", err, out)
	}
}

// TestBinary_SIGTERMEndsOpenStreams: streams end cleanly (the client sees the
// end of the response, not a reset) and the process exits in bounded time.
// The query token never reaches the logs, even at debug level.
func TestBinary_SIGTERMEndsOpenStreamsAndKeepsTokensOutOfLogs(t *testing.T) {
	bin := testbin.Build(t)
	rs := testredis.Start(t)
	url, cmd, logs := testbin.Start(t, bin, "REDIS_URL="+rs.URL(), "LOG_LEVEL=debug")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	token := testbin.DevToken(t, url, 3)
	resp, err := http.Get(url + "/api/v1/rooms/5/stream?token=" + token)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	first := make([]byte, 64)
	if n, err := resp.Body.Read(first); err != nil || !strings.Contains(string(first[:n]), "retry:") {
		t.Fatalf("first bytes %q, %v", first[:n], err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); ended <- err }()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("stream did not end cleanly: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("open stream not ended within 10s of SIGTERM")
	}
	select {
	case <-cmd.Exited():
	case <-time.After(20 * time.Second):
		t.Fatalf("hub did not exit within 20s of SIGTERM\n%s", logs)
	}
	if !strings.Contains(logs.String(), "/api/v1/rooms/5/stream") {
		t.Fatalf("the stream request was not logged at debug level:\n%s", logs)
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), "token=") {
		t.Fatalf("the query token reached the logs:\n%s", logs)
	}
}

// On SIGTERM open streams end spread over a few seconds, each with a retry:
// of its own, so that browsers do not all reconnect elsewhere at once.
func TestBinary_SIGTERMSpreadsStreamEndsWithJitteredRetry(t *testing.T) {
	bin := testbin.Build(t)
	rs := testredis.Start(t)
	url, cmd, logs := testbin.Start(t, bin, "REDIS_URL="+rs.URL(), "MAX_CONNECTIONS_PER_USER=0")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	const n = 12
	lasts := make(chan string, n)
	for i := 0; i < n; i++ {
		resp, err := http.Get(fmt.Sprintf("%s/api/v1/rooms/%d/stream?token=%s", url, 50+i, testbin.DevToken(t, url, 4)))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream %d: %v %v", i, err, resp)
		}
		t.Cleanup(func() { resp.Body.Close() })
		go func() {
			b, _ := io.ReadAll(resp.Body)
			frames := strings.Split(strings.TrimSpace(string(b)), "\n\n")
			lasts <- frames[len(frames)-1]
		}()
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	retries := map[string]bool{}
	for i := 0; i < n; i++ {
		select {
		case last := <-lasts:
			ms, ok := strings.CutPrefix(last, "retry: ")
			v, err := strconv.Atoi(ms)
			if !ok || err != nil || v < 3000 || v > 6000 {
				t.Fatalf("a stream ended with %q, want retry: 3000..6000", last)
			}
			retries[ms] = true
		case <-time.After(15 * time.Second):
			t.Fatalf("streams not ended within 15 s of SIGTERM\n%s", logs)
		}
	}
	if len(retries) < 2 {
		t.Fatalf("%d streams got the same retry: %v", n, retries)
	}
}

// A hub started before its Redis serves degraded answers, then becomes
// healthy by itself when Redis appears.
func TestBinary_StartsWithoutRedisAndHealsWhenItAppears(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	rs := testredis.Start(t)
	rs.Kill() // its port is known, nothing answers there
	url, cmd, logs := testbin.Start(t, bin, "REDIS_URL="+rs.URL())
	testbin.WaitHealth(t, url, 503, 15*time.Second)
	if _, status := healthStatus(url); status != "degraded" {
		t.Fatalf("status %q before Redis, want degraded\n%s", status, logs)
	}
	resp, err := http.DefaultClient.Do(mustPublish(t, url))
	if err != nil {
		t.Fatal(err)
	}
	var env struct{ Code string }
	_ = json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	if resp.StatusCode != 503 || env.Code != "REDIS5001" {
		t.Fatalf("publish before Redis: %d %s, want 503 REDIS5001", resp.StatusCode, env.Code)
	}
	if !cmd.Running() {
		t.Fatalf("the hub exited while Redis was absent: %v\n%s", cmd.Err(), logs)
	}
	rs.Restart()
	testbin.WaitHealth(t, url, 200, 30*time.Second)
	resp, err = http.DefaultClient.Do(mustPublish(t, url))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("publish once Redis is up: %v %v\n%s", err, resp, logs)
	}
	resp.Body.Close()
}

func mustPublish(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/api/v1/notifications/publish",
		strings.NewReader(`{"roomId":1,"eventType":"comment.created","data":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Internal-Key", "local_dev_internal_key")
	return req
}

// TestBinary_DevModeDemoTwoTabsSeeAndNotifyEachOther: what a newcomer does
// first — `go run .`, then the demo page in two tabs as two users of one
// room, in real Chromium, on the embedded Redis: each lists the other
// online; a publish from one tab's form that notifies everyone online rings
// both bells (<roomhub-inbox>), the other opens it, finds the item by its
// title and reads it; the leave shows when one closes.
func TestBinary_DevModeDemoTwoTabsSeeAndNotifyEachOther(t *testing.T) {
	bin := testbin.Build(t)
	url, _, logs := testbin.Start(t, bin, "REDIS_URL=")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	ann := testbrowser.Start(t, "demo.mjs", url+"/?user=31&rooms=78", t.TempDir())
	bob := testbrowser.Start(t, "demo.mjs", url+"/?user=32&rooms=78", t.TempDir())
	ann.Send(t, "TEXT #online 32 in 78")
	bob.Send(t, "TEXT #online 31 in 78")

	ann.Send(t, "EVAL document.getElementById('pub-title').value = 'Ann says hi'")
	ann.Send(t, "CLICK #pub-notify")
	ann.Send(t, "CLICK #publish button")
	for _, tab := range []*testbrowser.Driver{ann, bob} {
		tab.Send(t, `TEXT roomhub-inbox [part="badge"] | 1`)
	}
	bob.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	bob.Send(t, `TEXT roomhub-inbox [part="item"] .item-title | Ann says hi`)
	bob.Send(t, `CLICK roomhub-inbox [part="item"] [aria-label="Mark as read"]`)
	bob.Send(t, "WAIT document.querySelector('roomhub-inbox').shadowRoot.querySelector('[part=\"badge\"]').hidden")
	ann.Send(t, `TEXT roomhub-inbox [part="badge"] | 1`) // ann's own is still unread

	bob.Quit()
	ann.Send(t, "GONE #online 32 in 78")
	if errs := ann.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v\n%s", errs, logs)
	}
}

// In dev mode a fan-out to 2,000 recipients answers 200 with every inbox
// written, and bulk actions run over a filter: the embedded Redis' TTLs move
// on ten times a second instead of walking every key on every command,
// which made such a fan-out slower with each recipient until a pipeline of
// it took over 3 s (503 from 600 recipients on).
func TestBinary_DevModeBigFanOut(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	url, _, logs := testbin.Start(t, bin, "REDIS_URL=")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	ids := make([]string, 2000)
	for i := range ids {
		ids[i] = strconv.Itoa(5000 + i)
	}
	testbin.Publish(t, nil, url, `{"roomId":9,"eventType":"comment.created","data":{},"recipientIds":[`+strings.Join(ids, ",")+`]}`)
	for _, u := range []int{5000, 5999, 6999} {
		req, _ := http.NewRequest(http.MethodGet, url+"/api/v1/notifications/unread", nil)
		req.Header.Set("Authorization", "Bearer "+testbin.DevToken(t, url, u))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var env struct{ Result struct{ Count int } }
		_ = json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if env.Result.Count != 1 {
			t.Fatalf("recipient %d has %d unread after the publish answered, want 1\n%s", u, env.Result.Count, logs)
		}
	}
}

// README's "Try it" walk-through runs as printed, on a dev-mode hub (the
// built binary for `go run . &`, on a free port for 8083; the two streams
// that run until stopped are stopped after a few seconds): every call
// answers success, the room's stream shows the event, and user 7's own
// stream the notification (issue 43, the examples).
func TestBinary_ReadmeWalkThroughRunsAsPrinted(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(readme), "## Try it (dev mode)")
	_, block, _ := strings.Cut(after, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	if !strings.Contains(block, "go run . &") || !strings.Contains(block, "curl -N") {
		t.Fatalf("README's walk-through is not the one this test knows:\n%s", block)
	}
	bin := testbin.Build(t)
	url, _, logs := testbin.Start(t, bin, "REDIS_URL=")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	host := strings.TrimPrefix(url, "http://")
	script := strings.NewReplacer(
		"go run . &", "", // the hub runs already
		"localhost:8083", host,
		`curl -N "`, `timeout 4 curl -sN "`, // a stream runs until stopped
	).Replace(block)
	// The room's stream runs "in another terminal": here beside the rest,
	// watched until it is open, as the person would before publishing.
	lines := strings.Split(script, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "timeout 4 curl -sN") && !strings.HasSuffix(l, "&") {
			lines[i] = l + " > room.out &\nuntil grep -q retry: room.out; do sleep 0.05; done"
		}
	}
	script = "set -e\ncd " + t.TempDir() + "\n" + strings.Join(lines, "\n") + "\nwait\ncat room.out\n"
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the walk-through: %v\n%s\nthe hub's log:\n%s", err, out, logs)
	}
	if n := strings.Count(string(out), `"isSuccess":true`); n < 5 || strings.Contains(string(out), `"isSuccess":false`) {
		t.Fatalf("the walk-through's answers (%d successes):\n%s", n, out)
	}
	for _, want := range []string{"event: comment.created", `"text":"hi"`, `"text":"for you"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walk-through's output lacks %q:\n%s", want, out)
		}
	}
}
