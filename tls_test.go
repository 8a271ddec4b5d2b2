package main

import (
	"bufio"
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

	"roomhub/internal/testbin"
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

// With TLS_CERT_FILE and TLS_KEY_FILE the hub speaks HTTPS with HTTP/2: ten
// room streams and the user stream of one page share one connection, and
// each gets its event.
func TestBinary_HTTPSWithHTTP2CarriesManyStreamsOnOneConnection(t *testing.T) {
	bin := testbin.Build(t)
	rs := testredis.Start(t)
	cert, key := selfSigned(t, t.TempDir())
	// Eleven streams of one user: above the default cap of 5.
	env := []string{"REDIS_URL=" + rs.URL(), "TLS_CERT_FILE=" + cert, "TLS_KEY_FILE=" + key, "MAX_CONNECTIONS_PER_USER=20"}
	plain, _, logs := testbin.Start(t, bin, env...)
	url := strings.Replace(plain, "http://", "https://", 1)
	var mu sync.Mutex
	conns := map[string]bool{}
	client := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own certificate
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
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get(url + "/health")
		if err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no healthy HTTPS hub: %v\n%s", err, logs)
		}
		time.Sleep(50 * time.Millisecond)
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
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if line := sc.Text(); line == "event: comment.created" || line == "event: notification.created" {
					got <- seen{p, true}
					return
				}
			}
			got <- seen{p, false}
		}(p)
	}
	for r := 1; r <= 10; r++ {
		body := fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{},"recipientIds":[3]}`, 200+r)
		req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/notifications/publish", strings.NewReader(body))
		req.Header.Set("X-Internal-Key", "local_dev_internal_key")
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("publish: %v %v", err, resp)
		}
		resp.Body.Close()
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
	port := plain[strings.LastIndex(plain, ":")+1:]
	hc := exec.Command(bin, "healthcheck")
	hc.Env = append(os.Environ(), "SERVER_PORT="+port, "TLS_CERT_FILE="+cert)
	if out, err := hc.CombinedOutput(); err != nil {
		t.Fatalf("healthcheck over HTTPS: %v %s", err, out)
	}
}
