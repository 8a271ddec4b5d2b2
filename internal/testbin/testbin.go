// Package testbin builds the roomhub binary and runs it as a separate process
// for tests: what an operator runs, killed as a crash would kill it.
package testbin

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"roomhub/internal/ports"
	"strings"
	"sync"
	"testing"
	"time"
)

// built is the binary of this test process: one go build a process (each
// links the whole hub, seconds of CPU), in a directory Clean removes.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// Build compiles roomhub once for the test process and returns the
// binary's path. The package's TestMain calls Clean after m.Run.
func Build(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "roomhub-testbin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "roomhub")
		if out, err := exec.Command("go", "build", "-o", built.bin, "roomhub").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// Clean removes what Build made, if anything.
func Clean() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

// Logs collects the process's output; exec writes it from its own goroutine.
type Logs struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Proc is a started binary. Its exit is watched from the start, so that a
// test can ask at any time whether it is still running.
type Proc struct {
	*exec.Cmd
	exited chan struct{}
	err    error
}

// Exited is closed when the process has exited (and its output is drained).
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process has not exited.
func (p *Proc) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Err is how the process exited; call it after Exited.
func (p *Proc) Err() error { <-p.exited; return p.err }

// Start runs bin with env on a free port and returns its base URL; it does
// not wait for health. The process is killed by t.Cleanup.
func Start(t testing.TB, bin string, env ...string) (string, *Proc, *Logs) {
	t.Helper()
	port := ports.Free(t, false)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), append(env, fmt.Sprintf("SERVER_PORT=%d", port))...)
	logs := &Logs{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Proc{Cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }() // Wait also drains the output
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	return fmt.Sprintf("http://127.0.0.1:%d", port), p, logs
}

// healthClient asks /health; over https it takes the tests' own certificates.
var healthClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback, the tests' own certificates

// HealthStatus returns /health's HTTP status, 0 when it does not answer. url
// may be https (a certificate the test made).
func HealthStatus(url string) int {
	resp, err := healthClient.Get(url + "/health")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// WaitHealth waits until /health answers want, failing after d.
func WaitHealth(t testing.TB, url string, want int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		code := HealthStatus(url)
		if code == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health did not answer %d within %v (last %d)", want, d, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DevToken asks a dev-mode hub at url for user's token.
func DevToken(t testing.TB, url string, user int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/dev/token?userId=%d", url, user))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct{ Result struct{ Token string } }
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Result.Token == "" {
		t.Fatalf("dev token: %v", err)
	}
	return env.Result.Token
}

// Publish posts body to the publish endpoint at base with the dev internal
// key, through client (nil: http.DefaultClient); it fails t unless the event
// is accepted, and returns its id.
func Publish(t testing.TB, client *http.Client, base, body string) string {
	t.Helper()
	id, err := TryPublish(client, base, body)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return id
}

// TryPublish is Publish for callers that expect refusals (a hub under
// faults): it returns the accepted event's id, or why there is none.
func TryPublish(client *http.Client, base, body string) (string, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/notifications/publish", strings.NewReader(body))
	req.Header.Set("X-Internal-Key", "local_dev_internal_key")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var env struct{ Result struct{ StreamID string } }
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || resp.StatusCode != 200 {
		return "", fmt.Errorf("status %d, %v", resp.StatusCode, err)
	}
	return env.Result.StreamID, nil
}

// Eventually polls f until it holds, failing t after d.
func Eventually(t testing.TB, d time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
