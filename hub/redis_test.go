package hub

import (
	"strings"
	"testing"
)

func TestRedisOptions(t *testing.T) {
	for _, c := range []struct {
		url, addrs, master, password string
	}{
		{"redis://127.0.0.1:6379/0", "127.0.0.1:6379", "", ""},
		{"redis+cluster://a:1,b:2", "a:1 b:2", "", ""},
		{"a:1, b:2", "a:1 b:2", "", ""},
		{"redis+sentinel://s1:26379,s2:26379/mymaster", "s1:26379 s2:26379", "mymaster", ""},
		{"redis+sentinel://:secret@s1:26379/mymaster", "s1:26379", "mymaster", "secret"},
	} {
		opt, err := RedisOptions(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if got := strings.Join(opt.InitAddress, " "); got != c.addrs || opt.Sentinel.MasterSet != c.master ||
			opt.Sentinel.Password != c.password || opt.Password != c.password {
			t.Errorf("%s → %v %+v %q", c.url, opt.InitAddress, opt.Sentinel, opt.Password)
		}
	}
	for _, bad := range []string{"redis+sentinel://s1:26379", "redis+sentinel:///m", "redis+sentinel://s1:1/a/b", "redis+cluster://"} {
		if _, err := RedisOptions(bad); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:pw@h:6379/0":                         "redis://(redacted)@h:6379/0",
		`parse "redis://:secret@h:x": invalid port`:     `parse "redis://(redacted)@h:x": invalid port`,
		"redis+sentinel://:pw@s1:26379,s2:26379/master": "redis+sentinel://(redacted)@s1:26379,s2:26379/master",
		"http://backend/x":                              "http://backend/x",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
