package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"roomhub/internal/testbin"
)

// The console on the embedded Redis (dev mode, `go run .` with
// CONSOLE_PASSWORD): sign in, a page with its CSRF token, the overview
// with this instance, a person, a re-drive.
func TestBinary_DevModeConsole(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	base, _, logs := testbin.Start(t, bin, "REDIS_URL=", "CONSOLE_PASSWORD=a dev console password")
	testbin.WaitHealth(t, base, 200, 15*time.Second)
	send := func(method, path, body string, hdr ...string) (*http.Response, string) {
		t.Helper()
		return testbin.Request(t, method, base+path, body, hdr...)
	}
	resp, _ := send("POST", "/console/login", url.Values{"password": {"a dev console password"}, "next": {"/console/dead"}}.Encode(),
		"Content-Type", "application/x-www-form-urlencoded", "Origin", base)
	if resp.StatusCode != 303 || len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in in dev mode: %d %v\n%s", resp.StatusCode, resp.Header, logs)
	}
	cookie := "roomhub_console=" + resp.Cookies()[0].Value
	_, page := send("GET", "/console/dead", "", "Cookie", cookie)
	csrf := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil {
		t.Fatalf("the dead letters' page in dev mode:\n%s", page)
	}
	testbin.Eventually(t, 15*time.Second, "the overview lists this instance", func() bool {
		_, b := send("GET", "/api/v1/internal/overview", "", "Cookie", cookie)
		return strings.Contains(b, `"instances":[{"id":"v1-`)
	})
	if _, b := send("GET", "/api/v1/internal/users/7", "", "Cookie", cookie); !strings.Contains(b, `"userId":7,"online":false`) {
		t.Fatalf("a person in dev mode: %s", b)
	}
	if resp, b := send("POST", "/api/v1/internal/deliveries/redrive", `{"all":true}`, "Cookie", cookie, "Origin", base,
		"X-CSRF-Token", csrf[1], "Content-Type", "application/json"); resp.StatusCode != 200 || !strings.Contains(b, `"requeued":0`) {
		t.Fatalf("a re-drive in dev mode: %d %s", resp.StatusCode, b)
	}
}
