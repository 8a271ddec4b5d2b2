package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"roomhub/api"
	"roomhub/hub"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// CSRF: a change authenticated by the access_token cookie must come from
// the hub's own origin or an allowed one. A cross-site form or fetch
// carries the cookie too.
func TestHardening_CookieWritesNeedAnAllowedOrigin(t *testing.T) {
	th := testhub.StartWith(t, testredis.Start(t).Addr(), nil, func(c *api.Config) { c.AllowedOrigins = []string{"https://app.test"} })
	tok := th.Token(t, 71)
	send := func(method, path, origin, site, body string, bearer bool) int {
		t.Helper()
		req, _ := http.NewRequest(method, th.URL+path, strings.NewReader(body))
		if bearer {
			req.Header.Set("Authorization", "Bearer "+tok)
		} else {
			req.AddCookie(&http.Cookie{Name: "access_token", Value: tok})
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		resp, err := testhub.HTTPClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	self := th.URL // the hub's own origin
	for _, tc := range []struct {
		method, path, origin, site string
		bearer                     bool
		want                       int
	}{
		{"POST", "/api/v1/notifications/read-all", "https://evil.test", "cross-site", false, 403},
		{"POST", "/api/v1/notifications/read-all", "", "", false, 403}, // no Origin, no Sec-Fetch-Site
		{"POST", "/api/v1/notifications/read-all", "", "cross-site", false, 403},
		{"POST", "/api/v1/rooms/5/presence/heartbeat", "https://evil.test", "", false, 403},
		{"POST", "/api/v1/notifications/read-all", "https://app.test", "", false, 200}, // allowed
		{"POST", "/api/v1/notifications/read-all", self, "", false, 200},               // same origin
		{"POST", "/api/v1/notifications/read-all", "", "same-origin", false, 200},
		{"POST", "/api/v1/notifications/read-all", "https://evil.test", "", true, 200}, // a bearer token is no ambient authority
		{"GET", "/api/v1/notifications/unread", "https://evil.test", "", false, 200},   // reads are CORS's business
	} {
		if got := send(tc.method, tc.path, tc.origin, tc.site, "", tc.bearer); got != tc.want {
			t.Errorf("%s %s Origin %q Sec-Fetch-Site %q bearer %v: %d, want %d", tc.method, tc.path, tc.origin, tc.site, tc.bearer, got, tc.want)
		}
	}
}

// A stream the cookie authenticates is refused (403, before it counts
// toward the cap or presence) when another site or a top-level navigation
// opens it: five cross-site navigations used to evict the user's real
// stream and mark them present. An EventSource (Sec-Fetch-Mode: cors) of
// the same site, or a bearer token, still opens one.
func TestHardening_CrossSiteNavigationsCannotOpenCookieStreams(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { c.MaxConnectionsPerUser = 2 })
	const u = 72
	tok := th.Token(t, u)
	real := th.OpenStream(t, 5, u, "")
	open := func(path string, hdr map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, th.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: "access_token", Value: tok})
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // an opened stream ends here
		resp, err := (&http.Client{}).Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/api/v1/rooms/6/stream", "/api/v1/notifications/stream", "/api/v1/stream?rooms=6"} {
		for _, hdr := range []map[string]string{
			{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
			{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"},
			{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"},
			{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"},                                // typed into the address bar
			{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}, // an <img> on a sibling subdomain
			{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"},
			{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "script"},
		} {
			if code := open(path, hdr); code != 403 {
				t.Fatalf("%s with the cookie and %v: %d, want 403", path, hdr, code)
			}
		}
	}
	code, env := th.Get(t, "/api/v1/rooms/6/presence", th.Token(t, 1))
	var l hub.PresenceList
	testhub.Remarshal(t, env.Result, &l)
	if code != 200 || l.Count != 0 {
		t.Fatalf("room 6 after refused opens: %d, %d online, want nobody", code, l.Count)
	}
	res := th.Publish(t, 5, "comment.created", map[string]any{})
	if f := real.Next(t, testhub.Wait); f.ID != res.StreamID {
		t.Fatalf("the user's real stream after the refused opens: %+v, want the event (not evicted)", f)
	}
	// The site's own EventSource, and a bearer token, still open streams.
	if code := open("/api/v1/rooms/7/stream", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}); code != 200 {
		t.Fatalf("a same-origin EventSource with the cookie: %d, want 200", code)
	}
	if code := open("/api/v1/rooms/8/stream", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}); code != 200 {
		t.Fatalf("an allowed sibling site's EventSource with the cookie: %d, want 200", code)
	}
}
