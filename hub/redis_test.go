package hub

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"roomhub/internal/testredis"
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
	for _, bad := range []string{"redis+sentinel://s1:26379", "redis+sentinel:///m", "redis+sentinel://s1:1/a/b", "redis+cluster://",
		"garbage", "a:1,b", "redis+cluster://a:1,b", "redis+sentinel://s1/m", "h:0", "h:99999", "h:x"} {
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
		"HTTPS://user:pw@gateway.example/x":             "HTTPS://(redacted)@gateway.example/x", // hardening IV, 10
		"Redis://:pw@h":                                 "Redis://(redacted)@h",
		// a password holding / or @ (hardening V, 13)
		"redis://:pa/ss@h:6379/0":          "redis://(redacted)@h:6379/0",
		"redis://u:p@ss@h:6379":            "redis://(redacted)@h:6379",
		`parse "redis://:a/b@c@h:x": oops`: `parse "redis://(redacted)@h:x": oops`,
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// loadsMidway sends a pipeline in two halves and, between them, loads the
// script on every node through connections of its own: another hub calling
// it for the first time at that moment.
type loadsMidway struct {
	rueidis.Client
	load func()
}

func (l loadsMidway) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	half := len(multi) / 2
	out := l.Client.DoMulti(ctx, multi[:half]...)
	l.load()
	return append(out, l.Client.DoMulti(ctx, multi[half:]...)...)
}

// Calls of one script in one pipeline run in their order, even when Redis
// does not know the script at first and learns it halfway through; a lone
// call it does not know is run too.
func TestScript_ManyCallsKeepTheirOrderWhileTheScriptIsLoaded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sharded bool
		addrs   func(t *testing.T) []string
	}{
		{"standalone", false, func(t *testing.T) []string { return []string{testredis.Start(t).Addr()} }},
		{"cluster", true, func(t *testing.T) []string { return testredis.StartCluster(t).Addrs() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := tc.addrs(t)
			s := NewScript("-- " + t.Name() + "\nreturn redis.call('RPUSH', KEYS[1], ARGV[1])")
			var nodes []rueidis.Client // each node on its own: SCRIPT LOAD goes to one
			for _, a := range addrs {
				nodes = append(nodes, testredis.Client(t, a))
			}
			rdb := loadsMidway{Client: testredis.Client(t, addrs...), load: func() {
				for _, n := range nodes {
					testredis.Do(t, n, "SCRIPT", "LOAD", s.src)
				}
			}}
			var execs []rueidis.LuaExec
			for i := range 10 {
				execs = append(execs, rueidis.LuaExec{Keys: []string{"order:{1}"}, Args: []string{strconv.Itoa(i)}},
					rueidis.LuaExec{Keys: []string{"order:{2}"}, Args: []string{strconv.Itoa(i)}})
			}
			execs = append([]rueidis.LuaExec{{Keys: []string{"lone:{3}"}, Args: []string{"x"}}}, execs...)
			for i, r := range (&Redis{sharded: tc.sharded}).execMany(context.Background(), rdb, s, execs) {
				if err := r.Error(); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
			for _, key := range []string{"order:{1}", "order:{2}"} {
				if got, _ := testredis.Do(t, rdb.Client, "LRANGE", key, "0", "-1").AsStrSlice(); !slices.Equal(got, want) {
					t.Errorf("%s: %v, want %v", key, got, want)
				}
			}
			if got, _ := testredis.Do(t, rdb.Client, "LRANGE", "lone:{3}", "0", "-1").AsStrSlice(); !slices.Equal(got, []string{"x"}) {
				t.Errorf("the lone call: %v", got)
			}
		})
	}
}

// Once Redis is known to have a script, a pipeline of its calls carries no
// source (the commands stats count one EVAL, then none); after Redis lost
// it (SCRIPT FLUSH), the calls are sent again as EVAL and still run in
// their order.
func TestScript_TheSourceGoesOncePerNode(t *testing.T) {
	rdb := testredis.Client(t, testredis.Start(t).Addr())
	r := &Redis{Client: rdb}
	s := NewScript("-- " + t.Name() + "\nreturn redis.call('RPUSH', KEYS[1], ARGV[1])")
	evals := func() string {
		stats, _ := testredis.Do(t, rdb, "INFO", "commandstats").ToString()
		for _, l := range strings.Split(stats, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_eval:calls="); ok {
				n, _, _ := strings.Cut(v, ",")
				return n
			}
		}
		return "0"
	}
	var next int
	pipeline := func() {
		var execs []rueidis.LuaExec
		for range 5 {
			execs = append(execs, rueidis.LuaExec{Keys: []string{"order"}, Args: []string{strconv.Itoa(next)}})
			next++
		}
		for i, res := range r.execMany(context.Background(), rdb, s, execs) {
			if err := res.Error(); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
	}
	pipeline()
	pipeline()
	if n := evals(); n != "1" {
		t.Errorf("%s EVALs for two pipelines, want 1 (the first call of the first)", n)
	}
	testredis.Do(t, rdb, "SCRIPT", "FLUSH")
	pipeline()
	pipeline()
	if n := evals(); n == "1" {
		t.Errorf("no EVAL after SCRIPT FLUSH")
	}
	got, _ := testredis.Do(t, rdb, "LRANGE", "order", "0", "-1").AsStrSlice()
	for i, v := range got {
		if v != strconv.Itoa(i) || len(got) != 20 {
			t.Fatalf("the calls ran as %v, want 0…19 in order", got)
		}
	}
}
