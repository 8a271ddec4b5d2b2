package publish

import "roomhub/internal/env"

// Config is the publish path's setting.
type Config struct {
	// MaxDataBytes is the most bytes an event's data may hold
	// (PUBLISH_MAX_BYTES, 65536; 256 to 64 MiB). A whole body may hold
	// BodyHeadway more (MaxBody), a batch eight times it.
	MaxDataBytes int64
}

// LoadConfig reads the publish path's variable through lookup
// (os.LookupEnv in main); a bad value is an *env.Error naming it.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	l := env.New(lookup)
	c := Config{MaxDataBytes: int64(l.Int("PUBLISH_MAX_BYTES", 65536, 256, 64<<20))}
	return c, l.Err()
}

// DefaultConfig is the setting with nothing set.
func DefaultConfig() Config { return env.Defaults(LoadConfig) }
