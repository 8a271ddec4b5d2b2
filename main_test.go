package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
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
	done := make(chan error, 1)
	go func() { _, err := cmd.Process.Wait(); done <- err }()
	select {
	case <-done:
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
}
