// Package env reads roomhub's configuration variables: typed, with defaults
// and bounds, each bad value reported as an *Error that names its variable.
// The core (hub.LoadConfig), the HTTP side (api.LoadConfig) and each
// feature package (publish, inbox, delivery, ingest, webpush, fcm, apns)
// read theirs with it.
package env

import (
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Error names the variable that stopped start-up.
type Error struct {
	Var, Value, Reason string
}

// Error names the variable, its value and what is wrong with it, with the
// credentials of any URL in them redacted.
func (e *Error) Error() string {
	return Redact(fmt.Sprintf("config: %s=%q: %s", e.Var, e.Value, e.Reason))
}

// userinfoRE matches the credentials of a URL inside any text, whatever
// the case of its scheme (HTTPS://u:pw@h is a URL too), up to the last @ of
// the URL: a password may hold "/" and "@" (redis://u:p/a@ss@h). A path
// holding an @ is hidden too, which costs nothing.
var userinfoRE = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)[^\s"'<>]*@`)

// Redact hides the credentials of every URL in s (a URL itself, or an error
// that quotes one): "redis://u:pw@h" becomes "redis://(redacted)@h".
func Redact(s string) string { return userinfoRE.ReplaceAllString(s, "${1}(redacted)@") }

// URLProblem is what a message may show of raw, a URL, and of err, what
// is wrong with it: raw and err with credentials redacted when raw parses
// as a URL; else raw's scheme alone and a fixed reason (where an
// unparseable URL's password begins and ends cannot be known, and
// url.Parse's own error quotes a piece of it).
func URLProblem(raw string, err error) (shown, reason string) {
	if _, perr := url.Parse(raw); perr == nil {
		return Redact(raw), Redact(err.Error())
	}
	shown = "(hidden)"
	if scheme, _, ok := strings.Cut(raw, "://"); ok && len(scheme) <= 32 {
		shown = scheme + "://(hidden)"
	}
	return shown, "not a URL: " + shown + " wants scheme://[user:password@]host:port[/…] (a password's / and @ percent-encoded: %2F, %40)"
}

// Loader parses variables through a lookup (os.LookupEnv in main) and keeps
// the first error. An empty or blank value counts as unset.
type Loader struct {
	lookup func(string) (string, bool)
	err    error
}

// New returns a loader on lookup.
func New(lookup func(string) (string, bool)) *Loader { return &Loader{lookup: lookup} }

// Err is the first bad value's error, nil when every value was good.
func (l *Loader) Err() error { return l.err }

// Fail records that name's value is bad, unless an earlier one was.
func (l *Loader) Fail(name, value, reason string) {
	if l.err == nil {
		l.err = &Error{name, value, reason}
	}
}

func (l *Loader) get(name string) (string, bool) {
	v, ok := l.lookup(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// Str reads a string.
func (l *Loader) Str(name, def string) string {
	if v, ok := l.get(name); ok {
		return v
	}
	return def
}

// Bool reads name: true or false (also 1 or 0); def when unset.
func (l *Loader) Bool(name string, def bool) bool {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "true", "1":
		return true
	case "false", "0":
		return false
	}
	l.Fail(name, v, "must be true or false")
	return def
}

// Int reads a whole number between lo and hi.
func (l *Loader) Int(name string, def, lo, hi int) int {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		l.Fail(name, v, "not a whole number")
		return def
	}
	if n < lo || n > hi {
		l.Fail(name, v, fmt.Sprintf("must be between %d and %d", lo, hi))
		return def
	}
	return n
}

// Secs reads a number of seconds, at least lo (and at most ten years).
func (l *Loader) Secs(name string, def, lo int) time.Duration {
	return time.Duration(l.Int(name, def, lo, 10*365*86400)) * time.Second
}

// Millis reads a number of milliseconds between lo and hi.
func (l *Loader) Millis(name string, def, lo, hi int) time.Duration {
	return time.Duration(l.Int(name, def, lo, hi)) * time.Millisecond
}

// List reads a comma list; blank entries are dropped.
func (l *Loader) List(name string, def []string) []string {
	v, ok := l.get(name)
	if !ok {
		return append([]string(nil), def...)
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Level reads a log level: debug, info, warn or error.
func (l *Loader) Level(name string) slog.Level {
	v, ok := l.get(name)
	if !ok {
		return slog.LevelInfo
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(v)); err != nil {
		l.Fail(name, v, "must be debug, info, warn or error")
	}
	return lv
}

// Map is a lookup over kv, as os.LookupEnv is over the environment: for
// tests and tools that configure without the environment.
func Map(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

// Nothing is a lookup that finds no variable set.
func Nothing(string) (string, bool) { return "", false }

// Defaults is what load reads with nothing set: a package's DefaultConfig.
// Defaults that do not load are a bug, so it panics.
func Defaults[C any](load func(lookup func(string) (string, bool)) (C, error)) C {
	c, err := load(Nothing)
	if err != nil {
		panic(err)
	}
	return c
}
