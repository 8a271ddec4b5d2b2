package hub

import (
	"context"
	"testing"
	"time"

	"roomhub/internal/testredis"
)

func TestLock_RealRedisAndCluster(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs func(t *testing.T) []string
	}{
		{"standalone", func(t *testing.T) []string { return []string{testredis.Start(t).Addr()} }},
		{"cluster", func(t *testing.T) []string { return testredis.StartCluster(t).Addrs() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := testredis.Client(t, tc.addrs(t)...)
			m := NewMetrics(nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, name := range []string{"flusher", "publish:{42}", "sweep:7"} {
				a := NewLock(rdb, name, 5*time.Second, m)
				b := NewLock(rdb, name, 5*time.Second, m)
				if ok, err := a.Acquire(ctx); !ok || err != nil {
					t.Fatalf("%s: first acquire = %v, %v", name, ok, err)
				}
				if ok, err := b.Acquire(ctx); ok || err != nil {
					t.Fatalf("%s: contended acquire = %v, %v; want false", name, ok, err)
				}
				if ok, err := b.Release(ctx); ok || err != nil {
					t.Fatalf("%s: release by non-owner = %v, %v; want false", name, ok, err)
				}
				if ok, err := a.Release(ctx); !ok || err != nil {
					t.Fatalf("%s: release by owner = %v, %v", name, ok, err)
				}
				if ok, err := b.Acquire(ctx); !ok || err != nil {
					t.Fatalf("%s: acquire after release = %v, %v", name, ok, err)
				}
			}
			if got := m.lockAcquired.Get(); got != 6 {
				t.Fatalf("lock_acquire_total{acquired} = %d, want 6", got)
			}
			if got := m.lockBusy.Get(); got != 3 {
				t.Fatalf("lock_acquire_total{busy} = %d, want 3", got)
			}
		})
	}
}

func TestLock_ExpiresWhenHolderDies(t *testing.T) {
	rdb := testredis.Client(t, testredis.Start(t).Addr())
	ctx := context.Background()
	a := NewLock(rdb, "ttl", time.Second, NewMetrics(nil))
	if ok, _ := a.Acquire(ctx); !ok {
		t.Fatal("acquire")
	}
	ttl, err := rdb.Do(ctx, rdb.B().Ttl().Key(LockKey("ttl")).Build()).AsInt64()
	if err != nil || ttl < 1 || ttl > 1 {
		t.Fatalf("lock TTL = %d, %v; want 1s (the holder's ttl)", ttl, err)
	}
	// a dies without releasing: another holder is refused until the TTL
	// runs out, then takes the lock.
	b := NewLock(rdb, "ttl", time.Second, NewMetrics(nil))
	if ok, err := b.Acquire(ctx); ok || err != nil {
		t.Fatalf("a second holder took a held lock: %v %v", ok, err)
	}
	waitFor(t, "the dead holder's lock to expire", func() bool {
		ok, err := b.Acquire(ctx)
		return ok && err == nil
	})
	if ok, _ := a.Release(ctx); ok {
		t.Fatal("the dead holder released a lock it no longer holds")
	}
}
