package devredis

import (
	"runtime"
	"testing"
	"time"
)

// A key's TTL runs on the wall clock, and Close stops the goroutine that
// moves it on.
func TestRedis_TTLsRunAndCloseStops(t *testing.T) {
	g0 := runtime.NumGoroutine()
	r, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Set("k", "v"); err != nil {
		t.Fatal(err)
	}
	r.SetTTL("k", 300*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for r.Exists("k") {
		if time.Now().After(deadline) {
			t.Fatal("a key with a 300 ms TTL still exists after 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.Close()
	for runtime.NumGoroutine() > g0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before Start", runtime.NumGoroutine(), g0)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
