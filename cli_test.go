package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/internal/testbin"
	"roomhub/internal/version"
)

// run runs the binary with args: its stdout, stderr and exit code.
func run(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("roomhub %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// Help, asked for in any place, is the usage on stdout with exit 0 (a
// command's --help runs nothing); anything else unknown is the usage on
// stderr with exit 2: no hub is started by a mistyped word (issue 43, 8;
// issue 57, 4).
func TestBinary_HelpAndUnknownWords(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}, {"healthcheck", "--help"}, {"webpush-keys", "-h"}} {
		if out, _, code := run(t, bin, args...); code != 0 || !strings.HasPrefix(out, "usage: roomhub") {
			t.Errorf("roomhub %v: exit %d, stdout %q", args, code, out)
		}
	}
	for _, arg := range []string{"serve", "bogus"} {
		if out, errOut, code := run(t, bin, arg); code != 2 || out != "" || !strings.HasPrefix(errOut, "usage: roomhub") {
			t.Errorf("roomhub %s: exit %d, stdout %q, stderr %q", arg, code, out, errOut)
		}
	}
}

// One version, shown by --version, /health and roomhub_build_info; a
// release build sets it as README prints.
func TestBinary_VersionEverywhere(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	if out, _, code := run(t, bin, "--version"); code != 0 || !strings.HasPrefix(out, "roomhub "+version.Version+" (") {
		t.Fatalf("--version: exit %d, %q", code, out)
	}
	url, _, _ := testbin.Start(t, bin, "REDIS_URL=")
	testbin.WaitHealth(t, url, 200, 15*time.Second)
	if b := httpBody(t, "GET", url+"/health", "", nil); !strings.Contains(b, `"version":"`+version.Version+`"`) {
		t.Fatalf("/health: %s", b)
	}
	if b := httpBody(t, "GET", url+"/metrics", "", nil); !strings.Contains(b, `roomhub_build_info{version="`+version.Version+`",`) {
		t.Fatal("/metrics has no roomhub_build_info of this version")
	}
	// README's release build, as printed: the version it sets is the one shown
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`go build -ldflags \"(-X roomhub/internal/version.Version=([0-9.]+))\" .`").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no release build line this test knows")
	}
	release := filepath.Join(t.TempDir(), "roomhub")
	if out, err := exec.Command("go", "build", "-ldflags", string(m[1]), "-o", release, ".").CombinedOutput(); err != nil {
		t.Fatalf("README's release build: %v\n%s", err, out)
	}
	if out, _, code := run(t, release, "--version"); code != 0 || !strings.HasPrefix(out, "roomhub "+string(m[2])+" (") {
		t.Fatalf("the release build's --version: %q", out)
	}
}

// A port already taken stops start-up at once, naming SERVER_PORT, and
// "roomhub listening" is never logged for it (issue 57, 6).
func TestBinary_TakenPortStops(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "SERVER_PORT="+port, "REDIS_URL=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "SERVER_PORT") ||
		strings.Contains(string(out), "roomhub listening") {
		t.Fatalf("a taken port: %v\n%s", err, out)
	}
}
