package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"roomhub/internal/sse"
	"roomhub/internal/testbin"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testredis"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "roomhub test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// httpsHub is a hub binary serving HTTPS with the test's own certificate.
type httpsHub struct {
	url, plain string
	cert       string
	client     *http.Client
	logs       *testbin.Logs
}

// startHTTPSHub runs bin over HTTPS (users may hold 20 streams) and waits for
// its health.
func startHTTPSHub(t *testing.T, bin string) *httpsHub {
	t.Helper()
	rs := testredis.Start(t)
	cert, key := selfSigned(t, t.TempDir())
	env := []string{"REDIS_URL=" + rs.URL(), "TLS_CERT_FILE=" + cert, "TLS_KEY_FILE=" + key, "MAX_CONNECTIONS_PER_USER=20"}
	plain, _, logs := testbin.Start(t, bin, env...)
	h := &httpsHub{url: strings.Replace(plain, "http://", "https://", 1), plain: plain, cert: cert, logs: logs,
		client: &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}} //nolint:gosec // the test's own certificate
	t.Cleanup(h.client.CloseIdleConnections)
	testbin.WaitHealth(t, h.url, 200, 15*time.Second)
	return h
}

// publish sends a comment.created to room for recipients.
func (h *httpsHub) publish(t *testing.T, room int, recipients string) {
	t.Helper()
	body := fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{},"recipientIds":[%s]}`, room, recipients)
	testbin.Publish(t, h.client, h.url, body)
}

// With TLS_CERT_FILE and TLS_KEY_FILE the hub speaks HTTPS with HTTP/2: ten
// room streams and the user stream of one page share one connection, and
// each gets its event.
func TestBinary_HTTPSWithHTTP2CarriesManyStreamsOnOneConnection(t *testing.T) {
	bin := testbin.Build(t)
	h := startHTTPSHub(t, bin)
	url, client, logs := h.url, h.client, h.logs
	var mu sync.Mutex
	conns := map[string]bool{}
	get := func(path string) *http.Response {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			mu.Lock()
			conns[i.Conn.LocalAddr().String()] = true
			mu.Unlock()
		}}
		req, _ := http.NewRequest(http.MethodGet, url+path, nil)
		resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, logs)
		}
		return resp
	}
	resp := get("/dev/token?userId=3")
	var tok struct{ Result struct{ Token string } }
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()

	paths := []string{"/api/v1/notifications/stream"}
	for r := 1; r <= 10; r++ {
		paths = append(paths, fmt.Sprintf("/api/v1/rooms/%d/stream", 200+r))
	}
	type seen struct {
		path string
		ok   bool
	}
	got := make(chan seen, len(paths))
	for _, p := range paths {
		resp := get(p + "?token=" + tok.Result.Token)
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
			t.Fatalf("%s: %d over %s, want 200 over HTTP/2", p, resp.StatusCode, resp.Proto)
		}
		t.Cleanup(func() { resp.Body.Close() })
		go func(p string) {
			found := false
			_ = sse.Parse(resp.Body, func(f sse.Frame) bool {
				found = f.Event == "comment.created" || f.Event == "notification.created"
				return !found
			})
			got <- seen{p, found}
		}(p)
	}
	for r := 1; r <= 10; r++ {
		h.publish(t, 200+r, "3")
	}
	for range paths {
		select {
		case s := <-got:
			if !s.ok {
				t.Fatalf("%s ended without its event", s.path)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not every stream got its event")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Fatalf("the page used %d connections, want 1 (HTTP/2)", len(conns))
	}
	// The Docker healthcheck speaks HTTPS too.
	port := h.plain[strings.LastIndex(h.plain, ":")+1:]
	hc := exec.Command(bin, "healthcheck")
	hc.Env = append(os.Environ(), "SERVER_PORT="+port, "TLS_CERT_FILE="+h.cert)
	if out, err := hc.CombinedOutput(); err != nil {
		t.Fatalf("healthcheck over HTTPS: %v %s", err, out)
	}
}

// TestBinary_ChromiumOverHTTPSUsesHTTP2: in real Chromium, one page over
// HTTPS opens ten room streams and the user stream (eleven: above the six
// connections HTTP/1.1 allows per origin) and every one receives its event,
// all of them and the page itself over HTTP/2.
func TestBinary_ChromiumOverHTTPSUsesHTTP2(t *testing.T) {
	h := startHTTPSHub(t, testbin.Build(t))
	d := testbrowser.Start(t, "demo.mjs", h.url+"/?user=14&rooms=300", t.TempDir())
	// One line: the driver reads a command per line.
	d.Send(t, "EVAL "+strings.NewReplacer("\n", " ", "\t", "").Replace(`(async () => {
		const { RoomHub } = await import('/static/roomhub.js');
		const hub = new RoomHub({ getToken: async () => (await (await fetch('/dev/token?userId=14')).json()).result.token });
		window.__open = new Set(); window.__got = new Set();
		const watch = (name, s, type) => {
			s.on(type, () => window.__got.add(name));
			const t = setInterval(() => { if (s.status === 'open') { window.__open.add(name); clearInterval(t); } }, 20);
		};
		for (let r = 301; r <= 310; r++) watch('room ' + r, hub.room(r), 'comment.created');
		watch('notifications', hub.notifications(), 'notification.created');
		return true;
	})()`))
	waitIn := func(set string) {
		t.Helper()
		v := d.Send(t, `EVAL new Promise((ok) => { const tick = () => window.`+set+`.size === 11 ? ok([...window.`+set+`]) : setTimeout(tick, 20); tick(); })`)
		if n := len(v["value"].([]any)); n != 11 {
			t.Fatalf("%s: %v", set, v["value"])
		}
	}
	waitIn("__open")
	for r := 301; r <= 310; r++ {
		h.publish(t, r, "14")
	}
	waitIn("__got")
	protocols := d.Send(t, "PROTOCOLS")["value"].(map[string]any)
	paths := []string{"/", "/api/v1/notifications/stream"}
	for r := 301; r <= 310; r++ {
		paths = append(paths, fmt.Sprintf("/api/v1/rooms/%d/stream", r))
	}
	for _, p := range paths {
		if protocols[p] != "h2" {
			t.Fatalf("%s over %v, want h2 (all: %v)", p, protocols[p], protocols)
		}
	}
	if errs := d.Send(t, "ERRORS")["errors"].([]any); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}
