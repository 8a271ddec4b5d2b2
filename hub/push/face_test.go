package push

import (
	"net/url"
	"strings"
	"testing"
)

// Where a notification may open: an http(s) URL or a path of the page's
// own origin, never a path a browser reads as another host (hardening IV, 10).
func TestSafeURL(t *testing.T) {
	for u, want := range map[string]bool{
		"/orders/1": true, "/": true, "https://shop.example/o/1": true, "http://shop.example/": true,
		"": false, "//evil.example/x": false, `/\evil.example/x`: false, `\\evil.example`: false,
		"javascript:alert(1)": false, "data:text/html,x": false, "https:///x": false, "https://u:p@h/x": false,
		"/x\ny": false, "orders/1": false, "https://a.example/\\b": false,
	} {
		if SafeURL(u) != want {
			t.Errorf("SafeURL(%q) = %v, want %v", u, !want, want)
		}
	}
}

// FuzzSafeURL: a URL the check lets into a push is an http(s) URL with a
// host, or a path that no browser reads as another host.
func FuzzSafeURL(f *testing.F) {
	for _, s := range []string{"/orders/1", "https://a.example/x", "//evil.example", `/\evil`, "javascript:x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !SafeURL(s) {
			return
		}
		if strings.HasPrefix(s, "/") {
			if strings.HasPrefix(s, "//") || strings.ContainsAny(s, "\\\n\r\t") {
				t.Fatalf("%q passed as a path", s)
			}
			u, err := url.Parse("https://page.example" + s)
			if err != nil || u.Host != "page.example" {
				t.Fatalf("%q leaves the page's origin: %v %v", s, u, err)
			}
			return
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			t.Fatalf("%q passed as an absolute URL: %v %v", s, u, err)
		}
	})
}
