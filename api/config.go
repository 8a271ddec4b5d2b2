package api

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"roomhub/hub"
	"roomhub/hub/console"
	"roomhub/internal/env"
)

// DevJWTSecret is JWT_SECRET's dev default, refused when HUB_ENV=production.
const DevJWTSecret = "local_dev_secret"

// minProductionSecret is the shortest JWT_SECRET and INTERNAL_API_KEY
// production accepts.
const minProductionSecret = 32

// Config is the HTTP side's configuration, read once from the environment
// at start-up beside the core's (hub.Config). Each field names its variable;
// the defaults are those of DESIGN.md.
type Config struct {
	Port           int           // SERVER_PORT, 8083
	JWTSecret      string        // JWT_SECRET
	InternalAPIKey string        // INTERNAL_API_KEY: what the backend sends in X-Internal-Key
	AllowedOrigins []string      // ALLOWED_ORIGINS, comma list; empty allows none cross-origin
	StreamMaxRooms int           // STREAM_MAX_ROOMS, 32 rooms in one page stream
	TLSCertFile    string        // TLS_CERT_FILE; with TLS_KEY_FILE the hub serves HTTPS with HTTP/2
	TLSKeyFile     string        // TLS_KEY_FILE
	DebugAddr      string        // DEBUG_ADDR; set: Go's pprof profiles are served there, on loopback only
	DebugPublic    bool          // DEBUG_ADDR_ALLOW_PUBLIC, false: true lets DEBUG_ADDR listen beyond loopback
	MetricsAddr    string        // METRICS_ADDR; set: /metrics is served there, not on SERVER_PORT
	Env            string        // HUB_ENV, development or production
	JWTIssuer      string        // JWT_ISSUER: when set, a token's iss must be it
	JWTAudience    string        // JWT_AUDIENCE: when set, a token's aud must hold it
	StreamLifetime time.Duration // STREAM_MAX_LIFETIME_SECS, 86400: a stream ends this long after it opened, as at its token's expiry
	UserRequests   Budget        // USER_RATE_BURST 60, USER_RATE_PER_SEC 20: requests per user and instance on every user route
	IPRequests     Budget        // IP_RATE_BURST 20, IP_RATE_PER_SEC 2: requests that fail authentication, per client address and instance (user routes and internal keys apart)
	TrustedProxy   string        // TRUSTED_PROXY_HEADER: the header whose last entry is the client's address (only behind a proxy that writes it)
	AuthMisses     Budget        // ROOM_AUTH_MISS_BURST 64, ROOM_AUTH_MISS_PER_SEC 4: proxy-mode access checks per user and instance that the cache cannot answer
	StreamOpens    Budget        // no variable: stream opens per user and instance; 20 at once, 2 a second after
	ConsoleLogins  Budget        // no variable: console sign-in attempts per client address and instance; 5 at once, one each 10 s after
	// ConsolePassword is CONSOLE_PASSWORD: set (at least 16 bytes), the
	// operator's console is served at /console.
	ConsolePassword string
	Heartbeats      Budget // no variable: presence heartbeats per user and instance; 10 at once, 1 a second after
}

// Budget is a per-user rate limit: Burst at once, then PerSec a second.
type Budget struct {
	PerSec float64
	Burst  int
}

// validateConsole checks CONSOLE_PASSWORD: long enough, and none of the
// hub's other secrets (whoever holds one must not hold the console too).
func (c Config) validateConsole() error {
	p := c.ConsolePassword
	switch {
	case p == "":
		return nil
	case len(p) < console.MinPasswordBytes:
		return &hub.ConfigError{Var: "CONSOLE_PASSWORD", Value: "(redacted)", Reason: fmt.Sprintf("must be at least %d bytes (unset: no console)", console.MinPasswordBytes)}
	case p == c.JWTSecret || p == c.InternalAPIKey:
		return &hub.ConfigError{Var: "CONSOLE_PASSWORD", Value: "(redacted)", Reason: "must differ from JWT_SECRET and INTERNAL_API_KEY"}
	}
	return nil
}

// Console reports whether the operator's console is served.
func (c Config) Console() bool { return c.ConsolePassword != "" }

// Production reports whether the hub runs with HUB_ENV=production.
func (c Config) Production() bool { return c.Env == "production" }

// TLS reports whether the hub serves HTTPS (with HTTP/2).
func (c Config) TLS() bool { return c.TLSCertFile != "" }

// DevRoutes reports whether /dev/* may be mounted: not in production, and
// only with the dev default JWT secret, so that the tokens they mint are
// worthless anywhere else.
func (c Config) DevRoutes() bool { return !c.Production() && c.JWTSecret == DevJWTSecret }

// DefaultConfig is the configuration with nothing set.
func DefaultConfig() Config { return env.Defaults(LoadConfig) }

// LoadConfig reads the HTTP side's variables through lookup (os.LookupEnv in
// main) and validates them. The first bad value is returned as a
// *hub.ConfigError.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	l := env.New(lookup)
	c := Config{
		Port:            l.Int("SERVER_PORT", 8083, 1, 65535),
		JWTSecret:       l.Str("JWT_SECRET", DevJWTSecret),
		InternalAPIKey:  l.Str("INTERNAL_API_KEY", hub.DevInternalAPIKey),
		AllowedOrigins:  l.List("ALLOWED_ORIGINS", nil),
		StreamMaxRooms:  l.Int("STREAM_MAX_ROOMS", 32, 1, 1000),
		TLSCertFile:     l.Str("TLS_CERT_FILE", ""),
		TLSKeyFile:      l.Str("TLS_KEY_FILE", ""),
		DebugAddr:       l.Str("DEBUG_ADDR", ""),
		DebugPublic:     l.Str("DEBUG_ADDR_ALLOW_PUBLIC", "false") == "true",
		MetricsAddr:     l.Str("METRICS_ADDR", ""),
		Env:             l.Str("HUB_ENV", "development"),
		JWTIssuer:       l.Str("JWT_ISSUER", ""),
		JWTAudience:     l.Str("JWT_AUDIENCE", ""),
		StreamLifetime:  l.Secs("STREAM_MAX_LIFETIME_SECS", 86400, 1),
		UserRequests:    Budget{PerSec: float64(l.Int("USER_RATE_PER_SEC", 20, 1, 100000)), Burst: l.Int("USER_RATE_BURST", 60, 1, 1000000)},
		IPRequests:      Budget{PerSec: float64(l.Int("IP_RATE_PER_SEC", 2, 1, 100000)), Burst: l.Int("IP_RATE_BURST", 20, 1, 1000000)},
		TrustedProxy:    l.Str("TRUSTED_PROXY_HEADER", ""),
		AuthMisses:      Budget{PerSec: float64(l.Int("ROOM_AUTH_MISS_PER_SEC", 4, 1, 100000)), Burst: l.Int("ROOM_AUTH_MISS_BURST", 64, 1, 1000000)},
		StreamOpens:     Budget{PerSec: 2, Burst: 20},
		Heartbeats:      Budget{PerSec: 1, Burst: 10},
		ConsoleLogins:   Budget{PerSec: 0.1, Burst: 5},
		ConsolePassword: l.Str("CONSOLE_PASSWORD", ""),
	}
	if err := l.Err(); err != nil {
		return Config{}, err
	}
	return c, c.validate()
}

func (c Config) validate() error {
	if c.JWTSecret == "" {
		return &hub.ConfigError{Var: "JWT_SECRET", Reason: "must not be empty"}
	}
	if c.Env == "production" && c.JWTSecret == DevJWTSecret {
		return &hub.ConfigError{Var: "JWT_SECRET", Value: "(dev default)", Reason: "the dev default is refused when HUB_ENV=production"}
	}
	// A half-configured deployment fails closed: with a real JWT secret and
	// the public dev internal key, anyone could publish into any room.
	if (c.JWTSecret == DevJWTSecret) != (c.InternalAPIKey == hub.DevInternalAPIKey) {
		name := "INTERNAL_API_KEY"
		if c.JWTSecret == DevJWTSecret {
			name = "JWT_SECRET"
		}
		return &hub.ConfigError{Var: name, Value: "(dev default)",
			Reason: "JWT_SECRET and INTERNAL_API_KEY are both set, or both left to their dev defaults: one real and one dev default is refused"}
	}
	// One secret for both would let whoever mints user tokens publish as the
	// backend, and the reverse.
	if c.JWTSecret == c.InternalAPIKey {
		return &hub.ConfigError{Var: "JWT_SECRET", Value: "(redacted)", Reason: "must differ from INTERNAL_API_KEY"}
	}
	if c.Env == "production" {
		for _, sec := range []struct{ name, value string }{{"JWT_SECRET", c.JWTSecret}, {"INTERNAL_API_KEY", c.InternalAPIKey}} {
			if len(sec.value) < minProductionSecret {
				return &hub.ConfigError{Var: sec.name, Value: "(redacted)",
					Reason: fmt.Sprintf("must be at least %d bytes when HUB_ENV=production", minProductionSecret)}
			}
		}
	}
	if err := c.validateConsole(); err != nil {
		return err
	}
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			return &hub.ConfigError{Var: "ALLOWED_ORIGINS", Value: o, Reason: "* is refused: requests carry credentials (cookies), so any site could read a user's streams; list the origins"}
		}
		if !exactOrigin(o) {
			return &hub.ConfigError{Var: "ALLOWED_ORIGINS", Value: o,
				Reason: "an origin is exactly scheme://host[:port] (http or https), with no wildcard (* or ?), path or query"}
		}
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		name, v := "TLS_KEY_FILE", c.TLSKeyFile
		if c.TLSCertFile == "" {
			name, v = "TLS_CERT_FILE", c.TLSCertFile
		}
		return &hub.ConfigError{Var: name, Value: v, Reason: "TLS_CERT_FILE and TLS_KEY_FILE go together: set both for HTTPS, or neither"}
	}
	if c.DebugAddr != "" && !c.DebugPublic && !loopback(c.DebugAddr) {
		return &hub.ConfigError{Var: "DEBUG_ADDR", Value: c.DebugAddr,
			Reason: "pprof listens on loopback only (127.0.0.1:6060): its profiles cost CPU to anyone who asks; DEBUG_ADDR_ALLOW_PUBLIC=true overrides"}
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return &hub.ConfigError{Var: "METRICS_ADDR", Value: c.MetricsAddr, Reason: "must be host:port"}
		}
	}
	for _, f := range []struct{ name, path string }{{"TLS_CERT_FILE", c.TLSCertFile}, {"TLS_KEY_FILE", c.TLSKeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.ReadFile(f.path); err != nil {
			return &hub.ConfigError{Var: f.name, Value: f.path, Reason: "cannot be read: " + err.Error()}
		}
	}
	return nil
}

// exactOrigin reports whether o is one exact origin: http(s)://host[:port].
// Echo's CORS middleware reads * and ? in an origin as wildcards, so
// "https://*" would allow every site, with credentials.
func exactOrigin(o string) bool {
	if strings.ContainsAny(o, "*?") {
		return false
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && !strings.HasSuffix(o, "/")
}

// loopback reports whether addr (host:port) listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
