package inbox

import (
	"strings"
	"time"

	"roomhub/hub"
	"roomhub/internal/env"
)

// Config is the inbox's configuration, read once at start-up beside the
// core's (LoadConfig). Each field names its variable; DefaultConfig is the
// one with nothing set.
type Config struct {
	Retention           time.Duration // INBOX_RETENTION_DAYS, 30
	MaxEntries          int           // INBOX_MAX_ENTRIES, 1000 newest kept per user
	WriteBehindInterval time.Duration // WRITE_BEHIND_INTERVAL_SECS, 30
	WriteBehindBatch    int           // WRITE_BEHIND_BATCH_SIZE, 200
	ReadSinkURL         string        // READ_SINK_URL; empty means a log sink
	OutboxGrace         time.Duration // no variable: an unfinished outbox entry this old is finished by the sweep; 10 s
}

// DefaultConfig is the configuration with nothing set.
func DefaultConfig() Config { return env.Defaults(LoadConfig) }

// LoadConfig reads the inbox's variables through lookup (os.LookupEnv in
// main) and checks them. The first bad value is a *hub.ConfigError naming
// its variable.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	l := env.New(lookup)
	c := Config{
		Retention:           time.Duration(l.Int("INBOX_RETENTION_DAYS", 30, 1, 36500)) * 24 * time.Hour,
		MaxEntries:          l.Int("INBOX_MAX_ENTRIES", 1000, 1, 100000),
		WriteBehindInterval: l.Secs("WRITE_BEHIND_INTERVAL_SECS", 30, 1),
		WriteBehindBatch:    l.Int("WRITE_BEHIND_BATCH_SIZE", 200, 1, 100000),
		ReadSinkURL:         l.Str("READ_SINK_URL", ""),
		OutboxGrace:         10 * time.Second,
	}
	if err := l.Err(); err != nil {
		return Config{}, err
	}
	if c.ReadSinkURL != "" && !strings.HasPrefix(c.ReadSinkURL, "http://") && !strings.HasPrefix(c.ReadSinkURL, "https://") {
		return Config{}, &hub.ConfigError{Var: "READ_SINK_URL", Value: c.ReadSinkURL, Reason: "must be an http:// or https:// URL"}
	}
	return c, nil
}
