package hub

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// RedisOptions turns REDIS_URL into client options. It accepts redis:// and
// rediss:// URLs (with user, password and database), redis+cluster://h1:p1,h2:p2,
// or a plain comma list of host:port addresses; rueidis recognises a cluster by
// itself from any one node.
func RedisOptions(url string) (rueidis.ClientOption, error) {
	var opt rueidis.ClientOption
	switch {
	case strings.HasPrefix(url, "redis+cluster://"):
		rest := strings.TrimPrefix(url, "redis+cluster://")
		creds := ""
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			creds, rest = rest[:i], rest[i+1:]
		}
		addrs := splitAddrs(strings.TrimSuffix(rest, "/"))
		if len(addrs) == 0 {
			return opt, fmt.Errorf("redis+cluster:// needs at least one host:port")
		}
		first, err := rueidis.ParseURL("redis://" + creds + "@" + addrs[0])
		if creds == "" {
			first, err = rueidis.ParseURL("redis://" + addrs[0])
		}
		if err != nil {
			return opt, err
		}
		opt = first
		opt.InitAddress = addrs
	case strings.Contains(url, "://"):
		var err error
		if opt, err = rueidis.ParseURL(url); err != nil {
			return opt, err
		}
	default:
		opt.InitAddress = splitAddrs(url)
		if len(opt.InitAddress) == 0 {
			return opt, fmt.Errorf("no address")
		}
	}
	// The hub never reads through the client-side cache, so it does not pay for
	// CLIENT TRACKING.
	opt.DisableCache = true
	opt.ConnWriteTimeout = 5 * time.Second
	opt.Dialer.Timeout = 3 * time.Second
	return opt, nil
}

// EmbeddedRedisOptions are the client options for the in-process miniredis of
// dev mode: miniredis rejects CLIENT TRACKING, and on RESP3 a connection that
// has subscribed would block other commands.
func EmbeddedRedisOptions(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress:       []string{addr},
		DisableCache:      true,
		AlwaysRESP2:       true,
		ForceSingleClient: true,
	}
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
