package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"roomhub/api"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// web/README.md's React example is web/examples/react/App.jsx, and runs as
// written: compiled by esbuild's JSX transform against the package
// (roomhub-client/react, React 18 from web/e2e), served from the app's
// origin, in Chromium. A click is routed by the app (no page load) and the
// item is still read (issue 43, 4).
func TestBrowser_ReactExampleRunsAsWritten(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile(filepath.Join("..", "web", "examples", "react", "App.jsx"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "web", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```jsx\n"+string(example)+"```") {
		t.Fatal("web/README.md's React example is not web/examples/react/App.jsx as it is")
	}
	var th *testhub.Hub
	var bundle string
	const user = 14
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			_, _ = io.WriteString(w, th.Token(t, user))
		case "/app.js":
			http.ServeFile(w, r, bundle)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>React app</title><link rel="icon" href="data:,">
<script type="module" src="/app.js"></script></head><body><div id="root"></div></body></html>`)
		}
	}))
	origin := "http://" + app.Listener.Addr().String()
	th = testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) { c.AllowedOrigins = []string{origin} })
	bundle = buildReactExample(t, th.URL)
	app.Start()
	defer app.Close()
	d := testbrowser.Start(t, "inbox.mjs", app.URL+"/", testhub.ArtifactsDir(t))
	if code, env := th.PublishRaw(t, fmt.Sprintf(`{"roomId":42,"eventType":"comment.created","data":{"title":"Order shipped","url":"/orders/1"},"recipientIds":[%d]}`, user)); code != 200 {
		t.Fatalf("publish: %d %+v", code, env)
	}
	d.Send(t, `TEXT roomhub-inbox [part="badge"] | 1`)
	d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	d.Send(t, `TEXT roomhub-inbox [part="item"] .item-title | Order shipped`)
	d.Send(t, `CLICK roomhub-inbox [part="item"] .open`)
	d.Send(t, `TEXT #route | /orders/1`) // the app routed; the element did not load a page
	d.Send(t, `HIDDEN roomhub-inbox [part="badge"]`)
	if c := th.CountsOf(t, user); c.Unread != 0 {
		t.Fatalf("unread %d: a click the app routes still reads the item", c.Unread)
	}
	if errs := d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}

// buildReactExample bundles web/examples/react/App.jsx with esbuild (from
// web/e2e), roomhub-client resolved to this repository's web/ and React to
// web/e2e's, for a hub at hubURL; it returns the bundle's path.
func buildReactExample(t *testing.T, hubURL string) string {
	t.Helper()
	dir := t.TempDir()
	web, _ := filepath.Abs(filepath.Join("..", "web"))
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(web, filepath.Join(dir, "node_modules", "roomhub-client")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "app.js")
	cmd := exec.Command(filepath.Join(web, "e2e", "node_modules", ".bin", "esbuild"), filepath.Join(web, "examples", "react", "App.jsx"),
		"--bundle", "--format=esm", "--jsx=automatic", "--outfile="+out,
		fmt.Sprintf("--define:process.env.HUB_URL=%q", hubURL), `--define:process.env.NODE_ENV="production"`)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules")+string(os.PathListSeparator)+filepath.Join(web, "e2e", "node_modules"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, b)
	}
	return out
}
