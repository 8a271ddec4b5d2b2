package api

import (
	"strconv"
	"testing"
	"time"
)

// A limiter forgets users whose budget is full again: 10,000 users who each
// opened a stream and stayed quiet do not keep 10,000 buckets. A user whose
// budget is spent is remembered through every sweep.
func TestUserLimiter_ForgetsIdleUsersAndKeepsSpentOnes(t *testing.T) {
	l := newUserLimiter(Budget{PerSec: 1, Burst: 5})
	now := time.Unix(1_700_000_000, 0)
	for range 5 {
		if _, ok := l.take("spent", now); !ok {
			t.Fatal("a fresh budget refused a token")
		}
	}
	for i := range 10_000 {
		// Each user spends a token and has it back a second later.
		now = now.Add(time.Millisecond)
		if _, ok := l.take(strconv.Itoa(i), now); !ok {
			t.Fatalf("user %d refused", i)
		}
	}
	l.mu.Lock()
	held := len(l.m)
	l.mu.Unlock()
	if held > 2*limiterSweepMin {
		t.Fatalf("the limiter holds %d users after 10,000 quiet ones; want at most %d", held, 2*limiterSweepMin)
	}
	// 10 s passed: "spent" has its 5 tokens back and the sweeps may forget it;
	// spend it again and check the next sweeps keep it.
	for range 5 {
		l.take("spent", now)
	}
	for i := range 3 * limiterSweepMin {
		l.take("later"+strconv.Itoa(i), now)
	}
	if _, ok := l.take("spent", now); ok {
		t.Fatal("a spent budget was forgotten by a sweep and refilled")
	}
}
