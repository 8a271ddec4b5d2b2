package web_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"roomhub/api"
	"roomhub/internal/ports"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// The React example (web/examples/react) is an app a team copies, run as
// web/README.md prints it: in a copy of web/ (its package and the example),
// the package packed by npm and installed from the tarball with React and
// Vite from the registry, the app built for a live hub and served by Vite's
// preview (its /token from the hub's /dev/token), in Chromium. The bell
// shows the item, a click is routed by the app (no page load) and the item
// is still read (issues 43, 4 and 57, 3).
func TestBrowser_ReactExampleAppInstallsBuildsAndShowsTheBell(t *testing.T) {
	t.Parallel()
	lines := readmeReactCommands(t)
	dir := copyReactExample(t)
	const user = 14
	port := ports.Free(t, false)
	origin := fmt.Sprintf("http://127.0.0.1:%d", port)
	th := testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) { c.AllowedOrigins = []string{origin} })
	env := append(os.Environ(), "VITE_USER_ID="+fmt.Sprint(user), "npm_config_fund=false", "npm_config_audit=false", "npm_config_prefer_offline=true")
	var preview string
	for _, line := range lines {
		line = strings.ReplaceAll(line, "http://localhost:8083", th.URL)
		if strings.HasPrefix(line, "npm run preview") {
			preview = line
			continue
		}
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, b)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "node_modules", "roomhub-client")); err != nil || fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		t.Fatalf("roomhub-client is not installed as a package (a directory of its own, not a link): %v %v", fi, err)
	}
	if preview == "" {
		t.Fatal("web/README.md's commands do not end with npm run preview")
	}
	checkDefaultHubURL(t, dir, env)
	startPreview(t, dir, append(env, "VITE_HUB_URL="+th.URL), fmt.Sprintf("%s -- --host 127.0.0.1 --port %d --strictPort", preview, port))
	d := testbrowser.Start(t, "inbox.mjs", origin+"/", testhub.ArtifactsDir(t))
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

// readmeReactCommands returns the commands web/README.md prints to install,
// build and preview the React example (its sh block that begins with cd
// web/examples/react), without that cd and the comments. It also checks
// that the README shows src/App.jsx as it is and starts the hub with the
// preview's origin allowed.
func readmeReactCommands(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	app, err := os.ReadFile(filepath.Join("examples", "react", "src", "App.jsx"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```jsx\n"+string(app)+"```") {
		t.Fatal("web/README.md's React example is not web/examples/react/src/App.jsx as it is")
	}
	if !strings.Contains(string(readme), "ALLOWED_ORIGINS=http://localhost:5173,http://localhost:4173 go run .") {
		t.Fatal("web/README.md does not start the hub with the example's origins allowed")
	}
	m := regexp.MustCompile("(?s)```sh\ncd web/examples/react\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("web/README.md has no sh block beginning with cd web/examples/react")
	}
	var lines []string
	for _, l := range strings.Split(string(m[1]), "\n") {
		if l, _, _ = strings.Cut(l, "#"); strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}

// copyReactExample copies what npm packs of web/ (package.json, README.md,
// static/) and the example's own files (no node_modules, dist or tarball
// of a run by hand) to a temporary web/, and returns the example's
// directory in it: `npm pack ../..` there packs the copy.
func copyReactExample(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "web")
	skip := map[string]bool{"node_modules": true, "dist": true}
	copyTree := func(from, to string) {
		err := filepath.WalkDir(from, func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if skip[e.Name()] || strings.HasSuffix(e.Name(), ".tgz") || e.Name() == "package-lock.json" {
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			rel, _ := filepath.Rel(from, p)
			if e.IsDir() {
				return os.MkdirAll(filepath.Join(to, rel), 0o755)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(to, rel), b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	copyTree("static", filepath.Join(root, "static"))
	copyTree(filepath.Join("examples", "react"), filepath.Join(root, "examples", "react"))
	for _, f := range []string{"package.json", "README.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, "examples", "react")
}

// ansi matches a terminal's color codes, which Vite prints where CI is set
// even into a pipe.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// startPreview runs line (Vite's preview server) in dir until the test ends
// and waits for it to print its address.
func startPreview(t *testing.T, dir string, env []string, line string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+line)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready, done := make(chan struct{}), make(chan struct{})
	var log strings.Builder
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			text := ansi.ReplaceAllString(sc.Text(), "") // colored where CI is set
			log.WriteString(text + "\n")
			if strings.Contains(text, "Local:") {
				close(ready)
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })
	select {
	case <-ready:
	case <-done:
		t.Fatalf("%s ended:\n%s", line, log.String())
	case <-time.After(time.Minute):
		t.Fatalf("%s printed no address in a minute", line)
	}
}

// checkDefaultHubURL builds the app without VITE_HUB_URL: the bell's hub is
// then README's default (`go run .`), not the app's own origin.
func checkDefaultHubURL(t *testing.T, dir string, env []string) {
	t.Helper()
	var without []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "VITE_HUB_URL=") {
			without = append(without, kv)
		}
	}
	cmd := exec.Command("npm", "run", "build", "--", "--outDir", "dist-default")
	cmd.Dir, cmd.Env = dir, without
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm run build without VITE_HUB_URL: %v\n%s", err, b)
	}
	js, _ := filepath.Glob(filepath.Join(dir, "dist-default", "assets", "*.js"))
	for _, f := range js {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "http://localhost:8083") {
			return
		}
	}
	t.Fatalf("a build without VITE_HUB_URL does not use the hub at http://localhost:8083 (%v)", js)
}
