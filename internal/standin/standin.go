// Package standin holds what the tests' stand-in services (a push service,
// FCM, APNs) share: their certificate as a file, each key's scripted
// answers in turn with every arrival noted, and a hold the test releases.
package standin

import (
	"context"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// CertFile writes srv's certificate to a PEM file, for a hub process's
// SSL_CERT_FILE.
func CertFile(t *testing.T, srv *httptest.Server) string {
	f := filepath.Join(t.TempDir(), "stand-in.pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Script is each key's answers in turn (the last one repeats) and when
// each request for it arrived.
type Script[A any] struct {
	mu      sync.Mutex
	answers map[string][]A
	from    map[string]int // the arrival each key's answers begin with
	at      map[string][]time.Time
	arrived chan string
}

// NewScript is an empty script: every key's answer is A's zero value.
func NewScript[A any]() *Script[A] {
	return &Script[A]{answers: map[string][]A{}, from: map[string]int{}, at: map[string][]time.Time{}, arrived: make(chan string, 1024)}
}

// Set sets key's answers, in turn from the next request for it.
func (s *Script[A]) Set(key string, answers ...A) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[key], s.from[key] = answers, len(s.at[key])
}

// Arrive notes a request for key and answers its next answer.
func (s *Script[A]) Arrive(key string) A {
	s.mu.Lock()
	n := len(s.at[key]) - s.from[key]
	s.at[key] = append(s.at[key], time.Now())
	script := s.answers[key]
	s.mu.Unlock()
	select {
	case s.arrived <- key:
	default: // nobody reads them
	}
	var a A
	if len(script) > 0 {
		a = script[min(n, len(script)-1)]
	}
	return a
}

// Tries is how many requests for key arrived.
func (s *Script[A]) Tries(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at[key])
}

// Arrivals is when each request for key arrived.
func (s *Script[A]) Arrivals(key string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at[key]...)
}

// Arrived gives each request's key as it arrives.
func (s *Script[A]) Arrived() <-chan string { return s.arrived }

// Hold is where held requests wait until the test releases them.
type Hold struct {
	ch   chan struct{}
	once sync.Once
}

// NewHold is a hold not yet released.
func NewHold() *Hold { return &Hold{ch: make(chan struct{})} }

// Release lets every request held, and every later one, go on. Calling it
// again does nothing.
func (h *Hold) Release() { h.once.Do(func() { close(h.ch) }) }

// Wait waits for the release; false when ctx ended first (the client gave
// up).
func (h *Hold) Wait(ctx context.Context) bool {
	select {
	case <-h.ch:
		return true
	case <-ctx.Done():
		return false
	}
}
