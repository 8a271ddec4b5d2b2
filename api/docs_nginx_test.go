package api_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"roomhub/internal/ports"
	"roomhub/internal/testbin"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// nginxBinary is the nginx `make deps` fetches (the Debian package's
// binary, unpacked under .cache/nginx, never installed as a service), or
// the machine's own.
func nginxBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	p, _ := filepath.Abs(filepath.Join("..", ".cache", "nginx", "usr", "sbin", "nginx"))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no nginx: `make deps` unpacks Debian's under .cache/nginx (%v)", err)
	}
	return p
}

// README's nginx location, as printed, in front of a hub: nginx takes it
// (the hub as its upstream "roomhub"), and a room's stream through it
// carries presence and a published event as they happen, not when a
// buffer fills.
func TestDocs_NginxSnippetProxiesStreams(t *testing.T) {
	location := testhub.SnippetAfter(t, "README.md", "nginx:", "nginx")
	if !strings.Contains(location, "location /api/v1/") || !strings.Contains(location, "proxy_pass http://roomhub;") {
		t.Fatalf("README's nginx snippet is not the one this test knows:\n%s", location)
	}
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	dir, addr := t.TempDir(), ports.Addr(t)
	conf := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log stderr;
events {}
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream roomhub { server %[2]s; }
  server {
    listen %[3]s;
%[4]s
  }
}
`, dir, strings.TrimPrefix(th.URL, "http://"), addr, location)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &testbin.Logs{}
	cmd := exec.Command(nginxBinary(t), "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", "stderr")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	base := "http://" + addr
	testhub.Eventually(t, 15*time.Second, "nginx answering", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("nginx exited: %v\n%s\n%s", err, logs.String(), conf)
		default:
		}
		resp, err := http.Get(base + "/api/v1/push/vapid-public-key")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	s := testhub.OpenSSE(t, base+"/api/v1/rooms/42/stream", th.Token(t, 3), "")
	if f := s.NextPresence(t, 10*time.Second); !strings.Contains(f.Data, `"joined":3`) {
		t.Fatalf("presence through nginx: %+v", f)
	}
	th.Publish(t, 42, "comment.created", map[string]any{"text": "through nginx"})
	if f := s.Next(t, 10*time.Second); f.Event != "comment.created" || !strings.Contains(f.Data, "through nginx") {
		t.Fatalf("the event through nginx: %+v", f)
	}
}
