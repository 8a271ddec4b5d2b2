package api

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// README's Go snippets for backends (roomhub/api/client, over HTTP and
// through ingest with a rueidis adapter; the raw rueidis XADD of Ingest)
// compile as printed: each is put
// in a function of a program of its own with what it takes from the
// reader's code (ctx, events, rdb) and built against this repository's
// client; only "declared and not used" is forgiven (a snippet shows the
// values a call returns).
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
	_, ingestPart, _ := strings.Cut(string(readme), "**Ingest: publish without HTTP**")
	_, rawIngest, _ := strings.Cut(ingestPart, "```go\n")
	rawIngest, _, _ = strings.Cut(rawIngest, "```")
	if !strings.Contains(rawIngest, "Xadd()") {
		t.Fatalf("README's rueidis ingest snippet is not the one this test knows:\n%s", rawIngest)
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

func http(ctx context.Context, events []client.Event) {
` + blocks[0] + `}

func ingest(ctx context.Context, rdb rueidis.Client) {
in := ` + stmts + `}

func rawIngest(ctx context.Context, rdb rueidis.Client, roomID int64, body []byte) {
` + rawIngest + `}

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
	for _, l := range strings.Split(run("build", "-o", os.DevNull, "."), "\n") {
		if strings.Contains(l, ".go:") && !strings.Contains(l, "declared and not used") {
			t.Errorf("README's Go snippets: %s\n%s", l, program)
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
	files := []string{filepath.Join("..", "README.md"), filepath.Join("..", "web", "README.md")}
	docs, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	fence := regexp.MustCompile("(?s)```(?:js|javascript)\n(.*?)```")
	n := 0
	for _, f := range append(files, docs...) {
		for i, m := range fence.FindAllStringSubmatch(readFile(t, f), -1) {
			p := filepath.Join(t.TempDir(), "snippet.mjs")
			if err := os.WriteFile(p, []byte(m[1]), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("node", "--check", p).CombinedOutput(); err != nil {
				t.Errorf("%s's JavaScript snippet %d does not parse: %v\n%s\n%s", f, i, err, out, m[1])
			}
			n++
		}
	}
	if n < 9 {
		t.Fatalf("%d JavaScript snippets found in the docs, want at least 9: the fences changed?", n)
	}
}

// Every shell snippet in README.md, web/README.md and docs/ parses as
// printed (bash -n); the dev-mode walk-through and the redis-cli ingest line
// also run (TestBinary_ReadmeWalkThroughRunsAsPrinted,
// TestIngest_ReadmesRedisCliLineRunsAsPrinted).
func TestDocs_ShellSnippetsParse(t *testing.T) {
	files := []string{filepath.Join("..", "README.md"), filepath.Join("..", "web", "README.md")}
	docs, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	fence := regexp.MustCompile("(?s)```(?:sh|bash|shell)\\n(.*?)```")
	n := 0
	for _, f := range append(files, docs...) {
		for i, m := range fence.FindAllStringSubmatch(readFile(t, f), -1) {
			if out, err := exec.Command("bash", "-n", "-c", m[1]).CombinedOutput(); err != nil {
				t.Errorf("%s's shell snippet %d does not parse: %v\n%s\n%s", f, i, err, out, m[1])
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("%d shell snippets found in the docs, want at least 10: the fences changed?", n)
	}
}

// docs/delivery.md's gateway handler compiles as printed, with what it
// takes from the reader's code (the key, the provider's send, the memory of
// idempotency keys) declared around it.
func TestDocs_GatewaySnippetCompiles(t *testing.T) {
	_, rest, _ := strings.Cut(readFile(t, filepath.Join("..", "docs", "delivery.md")), "```go\n")
	snippet, _, _ := strings.Cut(rest, "```")
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

// README's Python ingest line parses as printed (python3's ast).
func TestDocs_PythonSnippetsParse(t *testing.T) {
	fence := regexp.MustCompile("(?s)```python\\n(.*?)```")
	blocks := fence.FindAllStringSubmatch(readFile(t, filepath.Join("..", "README.md")), -1)
	if len(blocks) == 0 {
		t.Fatal("no Python snippet in README.md: the fences changed?")
	}
	for _, b := range blocks {
		cmd := exec.Command("python3", "-c", "import ast, sys, textwrap; ast.parse(textwrap.dedent(sys.stdin.read()))") // a list item indents it
		cmd.Stdin = strings.NewReader(b[1])
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README's Python snippet does not parse: %v\n%s\n%s", err, out, b[1])
		}
	}
}

// Every JSON snippet in README.md, web/README.md and docs/ is JSON.
func TestDocs_JSONSnippetsParse(t *testing.T) {
	files := []string{filepath.Join("..", "README.md"), filepath.Join("..", "web", "README.md")}
	docs, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	fence := regexp.MustCompile("(?s)```json\\n(.*?)```")
	n := 0
	for _, f := range append(files, docs...) {
		for i, m := range fence.FindAllStringSubmatch(readFile(t, f), -1) {
			if !json.Valid([]byte(m[1])) {
				t.Errorf("%s's JSON snippet %d is not JSON:\n%s", f, i, m[1])
			}
			n++
		}
	}
	if n < 3 {
		t.Fatalf("%d JSON snippets found in the docs, want at least 3: the fences changed?", n)
	}
}
