package env

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLoader(t *testing.T) {
	vars := map[string]string{"N": " 7 ", "S": "x", "L": "a, ,b", "D": "3", "V": "warn", "BLANK": "  "}
	l := New(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if l.Int("N", 1, 0, 10) != 7 || l.Str("S", "d") != "x" || l.Str("BLANK", "d") != "d" ||
		strings.Join(l.List("L", nil), "|") != "a|b" || l.Secs("D", 1, 1) != 3*time.Second ||
		l.Millis("D", 1, 0, 10) != 3*time.Millisecond || l.Level("V") != slog.LevelWarn || l.Err() != nil {
		t.Fatalf("values misread: %v", l.Err())
	}
	l.Int("S", 1, 0, 10)
	l.Int("N", 1, 8, 10) // a second bad value: the first one is reported
	var e *Error
	if !errors.As(l.Err(), &e) || e.Var != "S" || !strings.Contains(e.Error(), `S="x"`) {
		t.Fatalf("err = %v, want S named", l.Err())
	}
}

// Defaults loads with nothing set, and panics on defaults that do not load.
func TestDefaults(t *testing.T) {
	load := func(lookup func(string) (string, bool)) (int, error) {
		l := New(lookup)
		n := l.Int("N", 7, 1, 10)
		return n, l.Err()
	}
	if n := Defaults(load); n != 7 {
		t.Fatalf("Defaults = %d, want 7", n)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("defaults that do not load did not panic")
		}
	}()
	Defaults(func(func(string) (string, bool)) (int, error) { return 0, &Error{Var: "N", Reason: "bad"} })
}
