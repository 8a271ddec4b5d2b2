package api_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"roomhub/api"
	"roomhub/hub/console"
	"roomhub/internal/testbin"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

const consolePassword = "a console password of some length"

// consoleHub starts a hub with the console on, on the Redis at addr.
func consoleHub(t *testing.T, addr string) *testhub.Hub {
	t.Helper()
	return testhub.StartWith(t, addr, nil, func(c *api.Config) { c.ConsolePassword = consolePassword })
}

// consoleReq sends a request to th with the headers given (name, value…),
// following no redirect.
func consoleReq(t *testing.T, th *testhub.Hub, method, path, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	return testbin.Request(t, method, th.URL+path, body, hdr...)
}

// signIn posts the sign-in form from the hub's own origin.
func signIn(t *testing.T, th *testhub.Hub, password, next string) (*http.Response, string) {
	t.Helper()
	form := url.Values{"password": {password}, "next": {next}}.Encode()
	return consoleReq(t, th, http.MethodPost, "/console/login", form, "Content-Type", "application/x-www-form-urlencoded", "Origin", th.URL)
}

// Without CONSOLE_PASSWORD every /console route is 404, and the internal
// routes take the key alone.
func TestConsole_OffWithoutThePassword(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	for _, r := range [][2]string{{"GET", "/console"}, {"GET", "/console/"}, {"GET", "/console/users/1"}, {"GET", "/console/dead"},
		{"GET", "/console/assets/console.js"}, {"POST", "/console/login"}, {"POST", "/console/logout"}} {
		if resp, _ := consoleReq(t, th, r[0], r[1], "password=x", "Origin", th.URL); resp.StatusCode != 404 {
			t.Errorf("%s %s without the console: %d, want 404", r[0], r[1], resp.StatusCode)
		}
	}
}

// Signing in: the form, a wrong password (401, no cookie), the origin
// checked, the right one (the cookie, HttpOnly, SameSite=Strict, 12 hours,
// back to the page asked for, never another site's); signing out ends the
// session on every instance.
func TestConsole_SignInAndOut(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	th, other := consoleHub(t, rs.Addr()), consoleHub(t, rs.Addr())
	resp, body := consoleReq(t, th, "GET", "/console/users/8", "")
	if resp.StatusCode != 200 || !strings.Contains(body, `name="password"`) || !strings.Contains(body, `value="/console/users/8"`) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("a page without a session: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	if resp, body := signIn(t, th, consolePassword+"x", "/console/users/8"); resp.StatusCode != 401 || len(resp.Cookies()) != 0 || !strings.Contains(body, "Wrong password") {
		t.Fatalf("a wrong password: %d %v", resp.StatusCode, resp.Cookies())
	}
	form := url.Values{"password": {consolePassword}}.Encode()
	for _, origin := range []string{"", "https://evil.example", "null"} {
		if resp, _ := consoleReq(t, th, "POST", "/console/login", form, "Content-Type", "application/x-www-form-urlencoded", "Origin", origin); resp.StatusCode != 403 || len(resp.Cookies()) != 0 {
			t.Errorf("sign-in from origin %q: %d, want 403 and no cookie", origin, resp.StatusCode)
		}
	}
	resp, _ = signIn(t, th, consolePassword, "/console/users/8")
	ck := sessionCookie(t, resp)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/console/users/8" || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode ||
		ck.Path != "/" || ck.MaxAge < 43100 || ck.MaxAge > 43200 || ck.Secure {
		t.Fatalf("signed in: %d %s %+v", resp.StatusCode, resp.Header.Get("Location"), ck)
	}
	for i, next := range []string{"//evil.example/", "https://evil.example/", "/console/../api", "/console\\x"} {
		// Two attempts each instance (five an address may make at once).
		if resp, _ := signIn(t, []*testhub.Hub{th, other}[i%2], consolePassword, next); resp.Header.Get("Location") != "/console/" {
			t.Errorf("next %q: back to %q, want /console/", next, resp.Header.Get("Location"))
		}
	}
	cookie := "roomhub_console=" + ck.Value
	resp, body = consoleReq(t, other, "GET", "/console/users/8", "", "Cookie", cookie)
	csrf := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindStringSubmatch(body)
	if resp.StatusCode != 200 || csrf == nil || strings.Contains(body, `name="password"`) {
		t.Fatalf("the page on another instance: %d\n%s", resp.StatusCode, body)
	}
	if resp, _ := consoleReq(t, other, "GET", "/api/v1/internal/overview", "", "Cookie", cookie); resp.StatusCode != 200 {
		t.Fatalf("the overview with the session: %d", resp.StatusCode)
	}
	logout := url.Values{"csrf": {csrf[1]}}.Encode()
	if resp, _ := consoleReq(t, th, "POST", "/console/logout", "csrf=wrong", "Content-Type", "application/x-www-form-urlencoded", "Origin", th.URL, "Cookie", cookie); resp.StatusCode != 403 {
		t.Fatalf("sign-out without the CSRF token: %d, want 403", resp.StatusCode)
	}
	resp, _ = consoleReq(t, th, "POST", "/console/logout", logout, "Content-Type", "application/x-www-form-urlencoded", "Origin", th.URL, "Cookie", cookie)
	if resp.StatusCode != 303 || sessionCookie(t, resp).MaxAge >= 0 {
		t.Fatalf("signed out: %d %+v", resp.StatusCode, resp.Cookies())
	}
	if resp, _ := consoleReq(t, other, "GET", "/api/v1/internal/overview", "", "Cookie", cookie); resp.StatusCode != 401 {
		t.Fatalf("the session after sign-out, on another instance: %d, want 401", resp.StatusCode)
	}
}

func sessionCookie(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == api.ConsoleCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie: %v", api.ConsoleCookie, resp.Header["Set-Cookie"])
	return nil
}

// What a session opens: the internal routes (reads; a change only from the
// hub's origin with the page's CSRF token), never a publish or a user's
// route; a forged or expired cookie, or a user's token, opens nothing.
func TestConsole_WhatASessionOpens(t *testing.T) {
	t.Parallel()
	th := consoleHub(t, testredis.Start(t).Addr())
	sessions := console.New(th.Hub, consolePassword)
	ctx := context.Background()
	ss, value, err := sessions.Issue(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	csrf, _ := sessions.CSRF(ctx, ss)
	cookie := "roomhub_console=" + value
	redrive := `{"all":true}`
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      []string
		want                     int
	}{
		{"a read", "GET", "/api/v1/internal/users/8", "", []string{"Cookie", cookie}, 200},
		{"a change with the token", "POST", "/api/v1/internal/deliveries/redrive", redrive, []string{"Cookie", cookie, "Origin", th.URL, "X-CSRF-Token", csrf}, 200},
		{"a change without the token", "POST", "/api/v1/internal/deliveries/redrive", redrive, []string{"Cookie", cookie, "Origin", th.URL}, 403},
		{"a change with a wrong token", "POST", "/api/v1/internal/deliveries/redrive", redrive, []string{"Cookie", cookie, "Origin", th.URL, "X-CSRF-Token", csrf + "x"}, 403},
		{"a change from another origin", "POST", "/api/v1/internal/deliveries/redrive", redrive, []string{"Cookie", cookie, "Origin", "https://evil.example", "X-CSRF-Token", csrf}, 403},
		{"a change without an origin", "POST", "/api/v1/internal/deliveries/redrive", redrive, []string{"Cookie", cookie, "X-CSRF-Token", csrf}, 403},
		{"a publish", "POST", "/api/v1/notifications/publish", `{"roomId":1,"eventType":"comment.created","data":{}}`, []string{"Cookie", cookie, "Origin", th.URL, "X-CSRF-Token", csrf}, 401},
		{"a user's route", "GET", "/api/v1/notifications/counts", "", []string{"Cookie", cookie}, 401},
		{"a forged cookie", "GET", "/api/v1/internal/overview", "", []string{"Cookie", cookie + "x"}, 401},
		{"an expired cookie", "GET", "/api/v1/internal/overview", "", []string{"Cookie", "roomhub_console=" + expired(t, sessions)}, 401},
		{"a user's token", "GET", "/api/v1/internal/overview", "", []string{"Authorization", "Bearer " + th.Token(t, 8)}, 401},
		{"a wrong key beside the session", "GET", "/api/v1/internal/overview", "", []string{"Cookie", cookie, "X-Internal-Key", "wrong"}, 401},
		{"the console's door, a read", "GET", "/console/api/users/8", "", []string{"Cookie", cookie}, 200},
		{"the console's door, a change", "POST", "/console/api/deliveries/redrive", redrive, []string{"Cookie", cookie, "Origin", th.URL, "X-CSRF-Token", csrf}, 200},
		{"the console's door, a change without the token", "POST", "/console/api/deliveries/redrive", redrive, []string{"Cookie", cookie, "Origin", th.URL}, 403},
		{"the console's door with the key alone", "GET", "/console/api/overview", "", []string{"X-Internal-Key", th.Cfg.InternalAPIKey}, 401},
		{"the console's door to a publish", "POST", "/console/api/../../notifications/publish", `{}`, []string{"Cookie", cookie, "Origin", th.URL, "X-CSRF-Token", csrf}, 404},
		{"the console's door to a publish, escaped", "POST", "/console/api/..%2F..%2Fnotifications/publish", `{}`, []string{"Cookie", cookie, "Origin", th.URL, "X-CSRF-Token", csrf}, 404},
	} {
		if resp, body := consoleReq(t, th, tc.method, tc.path, tc.body, append([]string{"Content-Type", "application/json"}, tc.hdr...)...); resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d\n%s", tc.name, resp.StatusCode, tc.want, body)
		}
	}
	if _, body := consoleReq(t, th, "GET", "/console/", "", "Authorization", "Bearer "+th.Token(t, 8), "Cookie", "access_token="+th.Token(t, 8)); !strings.Contains(body, `name="password"`) {
		t.Fatal("a user's token opened the console")
	}
}

func expired(t *testing.T, s *console.Sessions) string {
	_, v, err := s.Issue(context.Background(), time.Now().Add(-console.SessionTTL-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Sign-in attempts are limited per address: the sixth in a row is 429,
// even with the right password.
func TestConsole_SignInIsRateLimited(t *testing.T) {
	t.Parallel()
	th := consoleHub(t, testredis.Start(t).Addr())
	for i := range 5 {
		if resp, _ := signIn(t, th, "wrong password", ""); resp.StatusCode != 401 {
			t.Fatalf("attempt %d: %d, want 401", i+1, resp.StatusCode)
		}
	}
	resp, body := signIn(t, th, consolePassword, "")
	if resp.StatusCode != 429 || len(resp.Cookies()) != 0 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "Too many attempts") {
		t.Fatalf("the sixth attempt: %d %v", resp.StatusCode, resp.Header)
	}
}

// The console's files are served, its templates and anything else are not.
func TestConsole_Assets(t *testing.T) {
	t.Parallel()
	th := consoleHub(t, testredis.Start(t).Addr())
	if resp, body := consoleReq(t, th, "GET", "/console/assets/console.js", ""); resp.StatusCode != 200 ||
		!strings.Contains(resp.Header.Get("Content-Type"), "javascript") || !strings.Contains(body, "import") {
		t.Fatalf("console.js: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, p := range []string{"/console/assets/index.html", "/console/assets/login.html", "/console/assets/", "/console/assets/../../main.go", "/console/assets/nothing.js", "/console/nothing"} {
		if resp, _ := consoleReq(t, th, "GET", p, ""); resp.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
}
