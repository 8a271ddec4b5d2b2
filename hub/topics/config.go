package topics

import "roomhub/internal/env"

// Config is the topics' configuration, read once at start-up beside the
// core's (LoadConfig). Each field names its variable; DefaultConfig is the
// one with nothing set.
type Config struct {
	PerUserMax int // TOPICS_PER_USER_MAX, 10000 topics a person follows at most
}

// DefaultConfig is the configuration with nothing set.
func DefaultConfig() Config { return env.Defaults(LoadConfig) }

// LoadConfig reads the topics' variables through lookup (os.LookupEnv in
// main) and checks them. A bad value is a *hub.ConfigError naming its
// variable.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	l := env.New(lookup)
	c := Config{PerUserMax: l.Int("TOPICS_PER_USER_MAX", 10000, 1, 1000000)}
	return c, l.Err()
}
