package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"roomhub/internal/testbin"
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

func TestBinary_HealthFollowsRedis(t *testing.T) {
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

func TestBinary_BadConfigStops(t *testing.T) {
	bin := testbin.Build(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "SSE_KEEPALIVE_SECS=often")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "SSE_KEEPALIVE_SECS") {
		t.Fatalf("want a start-up failure naming SSE_KEEPALIVE_SECS, got %v: %s", err, out)
	}
	cmd = exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "HUB_ENV=production")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "JWT_SECRET") {
		t.Fatalf("production with the dev secret must not start: %v: %s", err, out)
	}
	cmd = exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://user:hunter2secret@localhost:notaport/0")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "REDIS_URL") || strings.Contains(string(out), "hunter2secret") {
		t.Fatalf("a malformed REDIS_URL must stop start-up, named, its password hidden: %v: %s", err, out)
	}
	cmd = exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "HUB_ENV=production", "JWT_SECRET=s", "INTERNAL_API_KEY=k")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "ROOM_AUTH") {
		t.Fatalf("production without ROOM_AUTH must not start: %v: %s", err, out)
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
