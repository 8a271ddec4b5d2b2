package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"roomhub/internal/testredis"
)

// buildBinary builds roomhub once per test into a temp dir.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "roomhub")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// logBuffer collects a child's output; exec writes it from its own goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startBinary runs the hub binary with env and returns its base URL.
func startBinary(t *testing.T, bin string, env ...string) (string, *exec.Cmd, *logBuffer) {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), append(env, fmt.Sprintf("SERVER_PORT=%d", port))...)
	logs := &logBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return fmt.Sprintf("http://127.0.0.1:%d", port), cmd, logs
}

func healthStatus(url string) (int, string) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url + "/health")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	var env struct {
		Code   string
		Result struct{ Status string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&env)
	return resp.StatusCode, env.Result.Status
}

func waitHealth(t *testing.T, url string, want int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		code, _ := healthStatus(url)
		if code == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health did not answer %d within %v (last %d)", want, d, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBinary_HealthFollowsRedis(t *testing.T) {
	bin := buildBinary(t)
	rs := testredis.Start(t)
	url, cmd, logs := startBinary(t, bin, "REDIS_URL="+rs.URL())
	waitHealth(t, url, 200, 15*time.Second)

	rs.Kill()
	waitHealth(t, url, 503, 10*time.Second)
	if _, status := healthStatus(url); status != "degraded" {
		t.Fatalf("status = %q while Redis is down, want degraded", status)
	}
	rs.Restart()
	waitHealth(t, url, 200, 20*time.Second)

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
	bin := buildBinary(t)
	url, _, logs := startBinary(t, bin, "REDIS_URL=")
	waitHealth(t, url, 200, 15*time.Second)
	if !strings.Contains(logs.String(), "dev mode") {
		t.Fatalf("dev mode not announced:\n%s", logs)
	}
}

func TestBinary_BadConfigStops(t *testing.T) {
	bin := buildBinary(t)
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
