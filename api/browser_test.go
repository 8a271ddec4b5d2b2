package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/testredis"
)

// browserDriver runs web/e2e/eventsource.mjs: a real headless Chromium.
type browserDriver struct {
	stdin io.WriteCloser
	lines chan string
}

// startBrowserDriver needs node, /usr/bin/chromium and web/e2e/node_modules,
// which `make test` installs.
func startBrowserDriver(t *testing.T, url string, room int64, token string) *browserDriver {
	t.Helper()
	script, _ := filepath.Abs("../web/e2e/eventsource.mjs")
	if _, err := os.Stat("../web/e2e/node_modules/playwright-core"); err != nil {
		t.Fatalf("playwright-core is not installed: run `make test` (npm ci --prefix web/e2e)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Fatalf("chromium is not installed: run `make test` (apt-get install chromium)")
	}
	cmd := exec.Command("node", script, url, fmt.Sprint(room), token)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &browserDriver{stdin: stdin, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
	}()
	t.Cleanup(func() {
		_, _ = io.WriteString(stdin, "QUIT\n")
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	if line := d.line(t, 60*time.Second); line != "READY" {
		t.Fatalf("browser driver: %q", line)
	}
	return d
}

func (d *browserDriver) line(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-d.lines:
		if !ok {
			t.Fatal("browser driver exited")
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("browser driver silent for %v", timeout)
		return ""
	}
}

type browserEvents struct {
	Got   []struct{ ID, Data string }
	Opens int
	Error string
}

func (d *browserDriver) waitEvents(t *testing.T, n int) browserEvents {
	t.Helper()
	fmt.Fprintf(d.stdin, "COUNT %d\n", n)
	var ev browserEvents
	if err := json.Unmarshal([]byte(d.line(t, 30*time.Second)), &ev); err != nil || ev.Error != "" {
		t.Fatalf("browser: %v %s", err, ev.Error)
	}
	return ev
}

// TestBrowser_EventSourceResumesAfterDrop: a plain browser EventSource, with
// no client code, gets every event it missed while the server had dropped it,
// because every event (live or replayed) carries its id.
func TestBrowser_EventSourceResumesAfterDrop(t *testing.T) {
	th := startHub(t, testredis.Start(t).Addr(), func(c *hub.Config) { c.Retry = 300 * time.Millisecond })
	d := startBrowserDriver(t, th.URL, 42, th.token(t, 1))
	var want []string
	for i := 0; i < 3; i++ {
		want = append(want, th.publish(t, 42, "comment.created", map[string]any{"n": i}).StreamID)
	}
	d.waitEvents(t, 3)
	th.dropConnections()              // the server drops every connection
	httpClient.CloseIdleConnections() // ours too: do not publish on a dead one
	for i := 3; i < 8; i++ {
		want = append(want, th.publish(t, 42, "comment.created", map[string]any{"n": i}).StreamID)
	}
	ev := d.waitEvents(t, len(want))
	if ev.Opens < 2 {
		t.Fatalf("EventSource opened %d times: it was never dropped", ev.Opens)
	}
	if len(ev.Got) != len(want) {
		t.Fatalf("browser got %d events, want %d: %+v", len(ev.Got), len(want), ev.Got)
	}
	for i, g := range ev.Got {
		if g.ID != want[i] {
			t.Fatalf("event %d: id %s, want %s (got %+v)", i, g.ID, want[i], ev.Got)
		}
	}
}
