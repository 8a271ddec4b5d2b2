// Package testbrowser runs the drivers of web/e2e for Go tests: real headless
// Chromium (Debian's chromium under playwright-core), spoken to one line at a
// time on stdin and stdout.
package testbrowser

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Driver is one driver process and its browser.
type Driver struct {
	stdin io.WriteCloser
	lines chan string
	cmd   *exec.Cmd
	quit  sync.Once
}

// e2eDir is web/e2e, found from this file's place in the repository.
func e2eDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "web", "e2e")
}

// browsers lets one test at a time of a test process drive Chromium: the
// browser tests may call t.Parallel() and so overlap the tests that wait
// (timers, TTLs), while two Chromiums on two cores would starve each other.
// A test's later drivers (its second tab) share its turn.
var browsers = struct {
	turn chan struct{}
	mu   sync.Mutex
	held map[testing.TB]bool
}{turn: make(chan struct{}, 1), held: map[testing.TB]bool{}}

// takeTurn waits for t's turn to drive Chromium, given back when t ends.
func takeTurn(t testing.TB) {
	browsers.mu.Lock()
	held := browsers.held[t]
	browsers.mu.Unlock()
	if held {
		return
	}
	browsers.turn <- struct{}{}
	browsers.mu.Lock()
	browsers.held[t] = true
	browsers.mu.Unlock()
	t.Cleanup(func() {
		browsers.mu.Lock()
		delete(browsers.held, t)
		browsers.mu.Unlock()
		<-browsers.turn
	})
}

// shared is the test process's one Chromium (web/e2e/server.mjs), started
// by the first driver: each driver connects to it and works in contexts of
// its own, so a test pays for a node process, not a browser's start. It
// ends with Stop, or with the test process (its input closes).
var shared server

type server struct {
	once  sync.Once
	ws    string // the endpoint drivers connect to
	err   error
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// endpoint starts the shared Chromium the first time and returns its
// endpoint.
func (s *server) endpoint(dir string) (string, error) {
	s.once.Do(func() {
		cmd := exec.Command("node", filepath.Join(dir, "server.mjs"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stderr = os.Stderr
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if s.err = cmd.Start(); s.err != nil {
			return
		}
		s.cmd, s.stdin = cmd, stdin
		line := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			if sc.Scan() {
				line <- sc.Text()
			}
			close(line)
			_, _ = io.Copy(io.Discard, stdout)
		}()
		select {
		case s.ws = <-line:
			if s.ws == "" {
				s.err = fmt.Errorf("the shared Chromium (web/e2e/server.mjs) exited before it said where it listens")
			}
		case <-time.After(60 * time.Second):
			s.err = fmt.Errorf("the shared Chromium (web/e2e/server.mjs) said nothing for 60 s")
		}
	})
	return s.ws, s.err
}

// Stop closes the shared Chromium, if one was started (killing it after
// 10 s): TestMain calls it once the tests are done.
func Stop() {
	s := &shared
	if s.cmd == nil {
		return
	}
	end(s.cmd, s.stdin)
}

// end closes a node process's input (node exits once its input ends) and
// waits for it, killing it after 10 s; whatever of its process group is
// left then is killed too.
func end(cmd *exec.Cmd, stdin io.Closer) {
	_ = stdin.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	killGroup := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		killGroup()
		<-done
	}
	killGroup() // whatever it left behind
}

// Start runs web/e2e/<script> with args and waits for its READY line, once
// no other test of the process drives Chromium (the test's turn lasts until
// it ends). It needs node, /usr/bin/chromium and web/e2e/node_modules,
// which `make test` installs. t.Cleanup quits it.
func Start(t testing.TB, script string, args ...string) *Driver {
	t.Helper()
	takeTurn(t)
	dir := e2eDir()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		t.Fatalf("playwright-core is not installed: run `make test` (npm ci --prefix web/e2e)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Fatalf("chromium is not installed: run `make test` (apt-get install chromium)")
	}
	ws, err := shared.endpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{filepath.Join(dir, script)}, args...)...)
	cmd.Env = append(os.Environ(), "ROOMHUB_BROWSER_WS="+ws)
	// Its own process group, so that Quit can end whatever it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &Driver{stdin: stdin, lines: make(chan string, 16), cmd: cmd}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
	}()
	t.Cleanup(d.Quit)
	if line := d.Line(t, 60*time.Second); line != "READY" {
		t.Fatalf("browser driver %s: %q", script, line)
	}
	return d
}

// Quit closes the driver's pages and waits for it to exit (killing it
// after 10 s). Whatever of its process group is left then is killed too. It
// may be called more than once.
func (d *Driver) Quit() {
	d.quit.Do(func() {
		_, _ = io.WriteString(d.stdin, "QUIT\n")
		end(d.cmd, d.stdin)
	})
}

// Line returns the driver's next output line, failing after timeout.
func (d *Driver) Line(t testing.TB, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-d.lines:
		if !ok {
			t.Fatal("browser driver exited")
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("browser driver silent for %v", timeout)
	}
	return ""
}

// Write sends one command line without waiting for its answer.
func (d *Driver) Write(format string, args ...any) {
	fmt.Fprintf(d.stdin, format+"\n", args...)
}

// Send writes one command and returns its JSON answer, failing on an error
// answer or after 30 s.
func (d *Driver) Send(t testing.TB, cmd string) map[string]any {
	t.Helper()
	d.Write("%s", cmd)
	var m map[string]any
	if err := json.Unmarshal([]byte(d.Line(t, 30*time.Second)), &m); err != nil || m["error"] != nil {
		t.Fatalf("browser, %q: %v %v", cmd, err, m["error"])
	}
	return m
}
