package fcm

import (
	"strings"

	"roomhub/hub"
	"roomhub/internal/env"
)

// Config is the fcm channel's configuration, read once at start-up
// (LoadConfig). Each field names its variable; the zero Config is for a hub
// whose fcm channel is off.
type Config struct {
	Credentials string // FCM_CREDENTIALS, a service account key: its JSON, or a file's path
	ProjectID   string // FCM_PROJECT_ID; default the key's project_id
	BaseURL     string // FCM_BASE_URL, https://fcm.googleapis.com
}

// LoadConfig reads the FCM_ variables through lookup and checks them: with
// the channel on, a key that is a service account's and names a project;
// an https base URL. The first bad value is a *hub.ConfigError naming its
// variable.
func LoadConfig(lookup func(string) (string, bool), on bool) (Config, error) {
	l := env.New(lookup)
	c := Config{
		Credentials: l.Str("FCM_CREDENTIALS", ""),
		ProjectID:   l.Str("FCM_PROJECT_ID", ""),
		BaseURL:     l.Str("FCM_BASE_URL", "https://fcm.googleapis.com"),
	}
	if err := l.Err(); err != nil {
		return Config{}, err
	}
	if on && c.Credentials == "" {
		return Config{}, &hub.ConfigError{Var: "FCM_CREDENTIALS", Value: "", Reason: "the fcm channel needs a service account key (its JSON, or the path of its file)"}
	}
	if !strings.HasPrefix(c.BaseURL, "https://") || len(c.BaseURL) == len("https://") {
		return Config{}, &hub.ConfigError{Var: "FCM_BASE_URL", Value: c.BaseURL, Reason: "must be an https:// URL"}
	}
	if on {
		if _, _, err := c.parse(); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}
