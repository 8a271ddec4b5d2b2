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
