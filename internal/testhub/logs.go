package testhub

import (
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"roomhub/api"
	"roomhub/hub"
	"roomhub/internal/testbin"
	"roomhub/internal/testbrowser"
	"strings"
	"sync"
	"testing"
)

// Every hub the tests start logs at debug level into logScan, which looks at
// each line for what must never be logged: access tokens, the internal key,
// the JWT secret. Main fails the run when one appeared.
var logScan = &secretScanner{}

// jwtRE matches a JWT (header.payload.signature, base64url of a JSON object).
var jwtRE = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// secretScanner is an io.Writer that keeps nothing but the lines that leak.
type secretScanner struct {
	mu    sync.Mutex
	leaks []string
}

func (s *secretScanner) Write(p []byte) (int, error) {
	line := string(p)
	if os.Getenv("ROOMHUB_TEST_LOG") != "" {
		os.Stderr.Write(p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	leak := jwtRE.MatchString(line)
	for _, secret := range []string{api.DevJWTSecret, hub.DevInternalAPIKey, TestSecret} {
		leak = leak || strings.Contains(line, secret)
	}
	if leak && len(s.leaks) < 20 {
		s.leaks = append(s.leaks, line)
	}
	return len(p), nil
}

// TestSecret is the non-default JWT secret some tests use.
const TestSecret = "a-real-secret"

// Logger is the logger of every hub the tests start.
func Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(logScan, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Main runs a package's tests (its TestMain calls it), then gives back the
// binaries and the browser they built or started, and fails the run when a
// hub logged a secret.
func Main(m *testing.M) {
	code := m.Run()
	testbin.Clean()
	testbrowser.Stop()
	logScan.mu.Lock()
	defer logScan.mu.Unlock()
	if len(logScan.leaks) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d log lines leak a token, the internal key or the JWT secret:\n", len(logScan.leaks))
		for _, l := range logScan.leaks {
			fmt.Fprint(os.Stderr, "  ", l)
		}
		code = 1
	}
	os.Exit(code)
}
