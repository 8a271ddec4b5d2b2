package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"roomhub/internal/testhub"
	"strings"
	"testing"
)

// README's Go snippets for backends (roomhub/api/client, over HTTP and
// through ingest with a rueidis adapter; the raw rueidis XADD of Ingest),
// and docs/topics.md's, compile as printed: each is put in a function of a program of its own
// with what it takes from the reader's code (ctx, events, serviceToken,
// rdb) and built against this repository's client; only "declared and not
// used" is forgiven (a snippet shows the values a call returns).
func TestReadme_GoClientSnippetsCompile(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(readme), "The same from a Go backend")
	var blocks []string
	for range 2 {
		var b string
		_, after, _ = strings.Cut(after, "```go\n")
		b, after, _ = strings.Cut(after, "```")
		blocks = append(blocks, b)
	}
	top, stmts, ok := strings.Cut(blocks[1], "\nin := ")
	if !ok || !strings.Contains(blocks[0], "client.New(") {
		t.Fatalf("README's Go snippets are not the ones this test knows:\n%s", strings.Join(blocks, "\n---\n"))
	}
	rawIngest := testhub.SnippetAfter(t, "README.md", "**Ingest: publish without HTTP**", "go")
	if !strings.Contains(rawIngest, "Xadd()") {
		t.Fatalf("README's rueidis ingest snippet is not the one this test knows:\n%s", rawIngest)
	}
	topicsGo := testhub.SnippetAfter(t, "docs/topics.md", "The same from Go", "go")
	if !strings.Contains(topicsGo, "hub.Fanout(") {
		t.Fatalf("docs/topics.md's Go snippet is not the one this test knows:\n%s", topicsGo)
	}
	clientDir, _ := filepath.Abs(filepath.Join("client"))
	rootDir, _ := filepath.Abs("..")
	program := `package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"roomhub/api/client"
)

` + top + `

func http(ctx context.Context, events []client.Event, serviceToken string) {
` + blocks[0] + `}

func ingest(ctx context.Context, rdb rueidis.Client) {
in := ` + stmts + `}

func rawIngest(ctx context.Context, rdb rueidis.Client, roomID int64, body []byte) {
` + rawIngest + `}

func topics(ctx context.Context) {
` + topicsGo + `}

func main() {}
`
	dir := t.TempDir()
	rueidisVersion := regexp.MustCompile(`github.com/redis/rueidis (v\S+)`).FindStringSubmatch(readFile(t, filepath.Join(rootDir, "go.mod")))[1]
	for name, body := range map[string]string{
		"main.go": program,
		"go.mod": "module snippets\n\ngo 1.26\n\nrequire (\n\troomhub/api/client v0.0.0\n\tgithub.com/redis/rueidis " + rueidisVersion +
			"\n)\n\nreplace roomhub/api/client => " + clientDir + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	run("mod", "tidy")
	for _, l := range strings.Split(run("build", "-gcflags=-e", "-o", os.DevNull, "."), "\n") { // -e: every error, not the first ten
		if strings.Contains(l, ".go:") && !strings.Contains(l, "declared and not used") {
			t.Errorf("the Go snippets: %s\n%s", l, program)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every JavaScript snippet in README.md, web/README.md and docs/ parses as
// printed (node --check, as an ES module): what they call needs the
// reader's page, Redis or app, and their twins run in other tests (the
// SDK's in Chromium and node's tests, ingest through redis-cli and Go).
func TestDocs_JavaScriptSnippetsParse(t *testing.T) {
	eachSnippet(t, "js|javascript", 9, func(code string) error {
		p := filepath.Join(t.TempDir(), "snippet.mjs")
		if err := os.WriteFile(p, []byte(code), 0o600); err != nil {
			return err
		}
		return run("", "node", "--check", p)
	})
}

// Every shell snippet in README.md, web/README.md and docs/ parses as
// printed (bash -n); the dev-mode walk-through and the redis-cli ingest line
// also run (TestBinary_ReadmeWalkThroughRunsAsPrinted,
// TestIngest_ReadmesRedisCliLineRunsAsPrinted).
func TestDocs_ShellSnippetsParse(t *testing.T) {
	eachSnippet(t, "sh|bash|shell", 10, func(code string) error { return run("", "bash", "-n", "-c", code) })
}

// docs are the files whose examples a reader pastes: README.md,
// web/README.md and docs/*.md.
func docs(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join("..", "README.md"), filepath.Join("..", "web", "README.md")}
	more, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append(files, more...)
}

// eachSnippet checks every snippet fenced as one of langs ("js|javascript")
// in the docs with check (an error: it fails, named), and fails when fewer
// than least are found (the fences changed).
func eachSnippet(t *testing.T, langs string, least int, check func(code string) error) {
	t.Helper()
	fence := regexp.MustCompile("(?s)```(?:" + langs + ")\n(.*?)```")
	n := 0
	for _, f := range docs(t) {
		for i, m := range fence.FindAllStringSubmatch(readFile(t, f), -1) {
			if err := check(m[1]); err != nil {
				t.Errorf("%s's %s snippet %d: %v\n%s", f, langs, i, err, m[1])
			}
			n++
		}
	}
	if n < least {
		t.Fatalf("%d %s snippets found in the docs, want at least %d: the fences changed?", n, langs, least)
	}
}

// run runs name with args and answers its output, err on failure with it.
func run(stdin, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// docs/delivery.md's gateway handler compiles as printed, with what it
// takes from the reader's code (the key, the provider's send, the memory of
// idempotency keys) declared around it.
func TestDocs_GatewaySnippetCompiles(t *testing.T) {
	snippet := testhub.SnippetAfter(t, "docs/delivery.md", "The gateway contract", "go")
	if !strings.Contains(snippet, `http.HandleFunc("/notify"`) {
		t.Fatalf("docs/delivery.md's Go snippet is not the gateway this test knows:\n%s", snippet)
	}
	program := `package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
)

var key = "the hub's INTERNAL_API_KEY"

var errNoDevice = errors.New("no device")

func seen(string) bool { return false }

func remember(string) {}

func send(context.Context, string, int64, []json.RawMessage) error { return nil }

func main() {
` + snippet + `}
`
	dir := t.TempDir()
	for name, body := range map[string]string{"main.go": program, "go.mod": "module gateway\n\ngo 1.26\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "vet", ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docs/delivery.md's gateway: %v\n%s\n%s", err, out, program)
	}
}

// The Python snippets parse as printed (python3's ast; a list item indents
// them).
func TestDocs_PythonSnippetsParse(t *testing.T) {
	eachSnippet(t, "python", 1, func(code string) error {
		return run(code, "python3", "-c", "import ast, sys, textwrap; ast.parse(textwrap.dedent(sys.stdin.read()))")
	})
}

// Every JSON snippet in README.md, web/README.md and docs/ is JSON.
func TestDocs_JSONSnippetsParse(t *testing.T) {
	eachSnippet(t, "json", 3, func(code string) error {
		if !json.Valid([]byte(code)) {
			return errors.New("not JSON")
		}
		return nil
	})
}
