package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pidList parses comma-separated pids, skipping what is not one.
func pidList(s string) []int {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(p)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// token mints an HS256 access token for user (the hub's dev secret by default).
func token(secret string, user int64) string {
	now := time.Now().Unix()
	return signHS256(secret, fmt.Sprintf(`{"sub":"%d","iat":%d,"exp":%d,"token_type":"access"}`, user, now, now+3600))
}

// signHS256 is a JWT of claims (JSON) signed with secret.
func signHS256(secret, claims string) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body := enc.EncodeToString([]byte(claims))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(head + "." + body))
	return head + "." + body + "." + enc.EncodeToString(mac.Sum(nil))
}

// cpuOf returns a process's user+system CPU seconds from /proc/<pid>/stat.
func cpuOf(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start at ") ".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// rssKB returns a process's resident set from /proc/<pid>/status.
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

// cpuOfAll sums the CPU seconds of pids.
func cpuOfAll(pids []int) float64 {
	s := 0.0
	for _, p := range pids {
		s += cpuOf(p)
	}
	return s
}

// rssOfAll is the processes' resident sets together, in KB.
func rssOfAll(pids []int) int64 {
	var s int64
	for _, p := range pids {
		if p != 0 {
			s += rssKB(p)
		}
	}
	return s
}

// use reports what the processes pids used together (nil when none is
// known): cpu seconds, and rss KB at the end of the window.
func use(pids []int, cpu float64, rss int64, delivered int64, streams int, secs float64) *procUse {
	if len(pids) == 0 || pids[0] == 0 {
		return nil
	}
	u := &procUse{CPUSecs: cpu, RSSKB: rss}
	if delivered > 0 {
		u.CPUSecsPer1kDeliver = cpu / float64(delivered) * 1000
	}
	u.RSSKBPerStream = float64(u.RSSKB) / float64(streams)
	if streams > 0 && secs > 0 {
		u.CPUMicrosPerStreamSec = cpu / float64(streams) / secs * 1e6
	}
	return u
}

func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// sampler keeps up to n values, then a uniform sample (reservoir).
type sampler struct {
	mu   sync.Mutex
	n    int
	seen int64
	v    []float64
	rnd  uint64
}

func newSampler(n int) *sampler { return &sampler{n: n, rnd: uint64(time.Now().UnixNano()) | 1} }

func (s *sampler) add(x float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	if len(s.v) < s.n {
		s.v = append(s.v, x)
		return
	}
	s.rnd ^= s.rnd << 13
	s.rnd ^= s.rnd >> 7
	s.rnd ^= s.rnd << 17
	if j := int64(s.rnd % uint64(s.seen)); j < int64(s.n) {
		s.v[j] = x
	}
}

func (s *sampler) values() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]float64(nil), s.v...)
}
