package ingest

import (
	"roomhub/internal/env"
)

// Config is ingest's configuration, read once at start-up beside the core's
// (LoadConfig). Each field names its variable; the zero Config consumes
// nothing (no partition).
type Config struct {
	Partitions int // INGEST_PARTITIONS, 16: streams ingest:{0..N-1} consumed; 0 turns ingest off
	Batch      int // INGEST_BATCH, 256: entries read per partition per read
}

// DefaultConfig is the configuration with nothing set.
func DefaultConfig() Config { return env.Defaults(LoadConfig) }

// LoadConfig reads ingest's variables through lookup (os.LookupEnv in
// main). The first bad value is a *hub.ConfigError naming its variable.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	l := env.New(lookup)
	c := Config{
		Partitions: l.Int("INGEST_PARTITIONS", 16, 0, 1024),
		Batch:      l.Int("INGEST_BATCH", 256, 1, 4096),
	}
	if err := l.Err(); err != nil {
		return Config{}, err
	}
	return c, nil
}
