package apns

import (
	"slices"
	"strings"

	"roomhub/hub"
	"roomhub/internal/env"
)

// Config is the apns channel's configuration, read once at start-up
// (LoadConfig). Each field names its variable; the zero Config is for a hub
// whose apns channel is off.
type Config struct {
	KeyID          string // APNS_KEY_ID, the .p8 key's id (kid)
	TeamID         string // APNS_TEAM_ID (iss)
	PrivateKey     string // APNS_PRIVATE_KEY, the .p8 PEM, or a file's path
	Topic          string // APNS_TOPIC, the app's bundle id
	BaseURL        string // APNS_BASE_URL, https://api.push.apple.com
	SandboxBaseURL string // APNS_SANDBOX_BASE_URL, https://api.sandbox.push.apple.com
}

// LoadConfig reads the APNS_ variables through lookup and checks them: the
// four keys go together whether or not the channel is on, the services'
// URLs are https, and with the channel on the key is a P-256 .p8. The first
// bad value is a *hub.ConfigError naming its variable.
func LoadConfig(lookup func(string) (string, bool), on bool) (Config, error) {
	l := env.New(lookup)
	c := Config{
		KeyID:          l.Str("APNS_KEY_ID", ""),
		TeamID:         l.Str("APNS_TEAM_ID", ""),
		PrivateKey:     l.Str("APNS_PRIVATE_KEY", ""),
		Topic:          l.Str("APNS_TOPIC", ""),
		BaseURL:        l.Str("APNS_BASE_URL", "https://api.push.apple.com"),
		SandboxBaseURL: l.Str("APNS_SANDBOX_BASE_URL", "https://api.sandbox.push.apple.com"),
	}
	if err := l.Err(); err != nil {
		return Config{}, err
	}
	keys := [][2]string{{"APNS_KEY_ID", c.KeyID}, {"APNS_TEAM_ID", c.TeamID}, {"APNS_PRIVATE_KEY", c.PrivateKey}, {"APNS_TOPIC", c.Topic}}
	if i := slices.IndexFunc(keys, func(v [2]string) bool { return v[1] == "" }); i >= 0 &&
		(on || slices.ContainsFunc(keys, func(v [2]string) bool { return v[1] != "" })) {
		return Config{}, &hub.ConfigError{Var: keys[i][0], Value: "", Reason: "the apns channel needs APNS_KEY_ID, APNS_TEAM_ID, APNS_PRIVATE_KEY and APNS_TOPIC, all four"}
	}
	for _, v := range [][2]string{{"APNS_BASE_URL", c.BaseURL}, {"APNS_SANDBOX_BASE_URL", c.SandboxBaseURL}} {
		if !strings.HasPrefix(v[1], "https://") || len(v[1]) == len("https://") {
			return Config{}, &hub.ConfigError{Var: v[0], Value: v[1], Reason: "must be an https:// URL"}
		}
	}
	if on {
		if _, err := c.parseKey(); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}
