package hub

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoff_JitteredDoublingUpToMax(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: 400 * time.Millisecond}
	for i, step := range []time.Duration{100, 200, 400, 400, 400} {
		step *= time.Millisecond
		if d := b.Next(); d < step/2 || d > step {
			t.Fatalf("wait %d = %v, want within [%v, %v]", i, d, step/2, step)
		}
	}
	b.Reset()
	if d := b.Next(); d > 100*time.Millisecond {
		t.Fatalf("after Reset the wait is %v, want at most Min", d)
	}
	// The waits are drawn, not fixed: 50 draws of one step are not all equal.
	seen := map[time.Duration]bool{}
	for range 50 {
		var z Backoff
		seen[z.Next()] = true
	}
	if len(seen) < 2 {
		t.Fatal("50 waits drawn from a 250 ms step were all equal: no jitter")
	}
}

func TestRetry_UntilSuccessLimitOrContext(t *testing.T) {
	fail := errors.New("redis away")
	calls, fails := 0, 0
	err := Retry(context.Background(), 0, func(context.Context) (bool, error) {
		if calls++; calls < 3 {
			return false, fail
		}
		return false, nil
	}, func(error) { fails++ })
	if err != nil || calls != 3 || fails != 2 {
		t.Fatalf("Retry = %v after %d calls and %d failures seen; want nil, 3, 2", err, calls, fails)
	}

	calls = 0
	err = Retry(context.Background(), time.Nanosecond, func(context.Context) (bool, error) {
		calls++ // a call takes longer than the limit
		return true, fail
	}, nil)
	if !errors.Is(err, fail) || calls != 1 {
		t.Fatalf("past its limit Retry = %v after %d calls; want the attempt's error after 1", err, calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Retry(ctx, 0, func(context.Context) (bool, error) { return false, fail }, func(error) { cancel() })
	}()
	select {
	case err := <-done:
		if !errors.Is(err, fail) {
			t.Fatalf("Retry after cancel = %v, want the last error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Retry did not stop when its context ended")
	}
}
