package api

import (
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

// The JavaScript snippets a reader pastes parse as printed (node --check,
// as ES modules): README's Node ingest line and docs/delivery.md's React
// Native registration. (What they call needs the reader's Redis or app:
// their Go and browser twins run in other tests.)
func TestDocs_JavaScriptSnippetsParse(t *testing.T) {
	snippet := func(file, after, fence string) string {
		t.Helper()
		_, rest, ok := strings.Cut(readFile(t, filepath.Join("..", file)), after)
		if !ok {
			t.Fatalf("%s has no %q", file, after)
		}
		_, rest, _ = strings.Cut(rest, fence)
		code, _, _ := strings.Cut(rest, "```")
		return code
	}
	for name, code := range map[string]string{
		"ingest.mjs":      snippet("README.md", "**Ingest: publish without HTTP**", "```js\n"),
		"reactnative.mjs": snippet("docs/delivery.md", "React Native (", "```js\n"),
	} {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(code), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("node", "--check", p).CombinedOutput(); err != nil || strings.TrimSpace(code) == "" {
			t.Errorf("%s does not parse: %v\n%s\n%s", name, err, out, code)
		}
	}
}
