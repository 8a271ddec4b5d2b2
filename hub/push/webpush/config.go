package webpush

import (
	"strings"

	"roomhub/hub"
	"roomhub/internal/env"
)

// Config is the webpush channel's configuration, read once at start-up
// (LoadConfig). Each field names its variable; the zero Config has no keys,
// which only the embedded dev mode accepts (it makes a pair in its Redis).
type Config struct {
	PublicKey    string   // WEBPUSH_VAPID_PUBLIC_KEY, base64url P-256 point
	PrivateKey   string   // WEBPUSH_VAPID_PRIVATE_KEY, base64url P-256 scalar
	Subject      string   // WEBPUSH_SUBJECT, mailto: or https:, the push services' contact
	AllowPrivate bool     // WEBPUSH_ALLOW_PRIVATE_ENDPOINTS, false: tests and dev only
	AllowedHosts []string // WEBPUSH_ALLOWED_HOSTS, comma list of domain suffixes ("*": any); DefaultHosts
}

// DefaultHosts are the public push services' domains, the hosts of
// Chrome's and Edge's (FCM), Firefox's (Mozilla), Safari's (Apple) and
// Windows' Web Push endpoints: WEBPUSH_ALLOWED_HOSTS' default.
var DefaultHosts = []string{"fcm.googleapis.com", "push.services.mozilla.com", "push.apple.com", "notify.windows.com"}

// KeysSet reports whether the VAPID keys come from the environment (else,
// in the embedded dev mode alone, the hub makes a pair and keeps it in its
// Redis).
func (c Config) KeysSet() bool { return c.PublicKey != "" }

// LoadConfig reads the WEBPUSH_ variables through lookup and checks them:
// all three keys set or none, none only in the embedded dev mode of core
// when the channel is on, a subject that is mailto: or https:, and a key
// pair that is one. The first bad value is a *hub.ConfigError naming its
// variable.
func LoadConfig(lookup func(string) (string, bool), on bool, core hub.Config) (Config, error) {
	l := env.New(lookup)
	c := Config{
		PublicKey:    l.Str("WEBPUSH_VAPID_PUBLIC_KEY", ""),
		PrivateKey:   l.Str("WEBPUSH_VAPID_PRIVATE_KEY", ""),
		Subject:      l.Str("WEBPUSH_SUBJECT", ""),
		AllowPrivate: l.Bool("WEBPUSH_ALLOW_PRIVATE_ENDPOINTS", false),
		AllowedHosts: l.List("WEBPUSH_ALLOWED_HOSTS", DefaultHosts),
	}
	if err := l.Err(); err != nil {
		return Config{}, err
	}
	vars := [][2]string{{"WEBPUSH_VAPID_PUBLIC_KEY", c.PublicKey}, {"WEBPUSH_VAPID_PRIVATE_KEY", c.PrivateKey}, {"WEBPUSH_SUBJECT", c.Subject}}
	set := 0
	for _, v := range vars {
		if v[1] != "" {
			set++
		}
	}
	if set > 0 && set < len(vars) {
		for _, v := range vars {
			if v[1] == "" {
				return Config{}, &hub.ConfigError{Var: v[0], Value: "", Reason: "the WEBPUSH_ variables go together: set all three or none"}
			}
		}
	}
	if set == 0 && on && (core.Production() || !core.Embedded()) {
		return Config{}, &hub.ConfigError{Var: "WEBPUSH_VAPID_PUBLIC_KEY", Value: "", Reason: "the webpush channel with a real Redis needs WEBPUSH_VAPID_PUBLIC_KEY, WEBPUSH_VAPID_PRIVATE_KEY and WEBPUSH_SUBJECT (go run . webpush-keys prints a pair); only the embedded dev mode makes its own"}
	}
	if c.Subject != "" && !strings.HasPrefix(c.Subject, "mailto:") && !strings.HasPrefix(c.Subject, "https://") {
		return Config{}, &hub.ConfigError{Var: "WEBPUSH_SUBJECT", Value: c.Subject, Reason: "must be a mailto: or https:// URL"}
	}
	if on && c.KeysSet() {
		if _, err := c.keys(); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// keys is the configured key pair; one that is not a pair is a
// *hub.ConfigError naming the key at fault.
func (c Config) keys() (Keys, error) {
	keys, err := ParseKeys(c.PublicKey, c.PrivateKey)
	if err != nil {
		v := "WEBPUSH_VAPID_PRIVATE_KEY"
		if strings.Contains(err.Error(), "public") {
			v = "WEBPUSH_VAPID_PUBLIC_KEY"
		}
		return Keys{}, &hub.ConfigError{Var: v, Value: "(hidden)", Reason: err.Error()}
	}
	return keys, nil
}
