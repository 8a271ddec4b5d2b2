package hub

import (
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Dev defaults for secrets. They are refused when HUB_ENV=production.
const (
	DevJWTSecret      = "local_dev_secret"
	DevInternalAPIKey = "local_dev_internal_key"
)

// DefaultEventTypes are the event types a backend may publish unless EVENT_TYPES says otherwise.
var DefaultEventTypes = []string{
	"retrospect.submitted", "retrospect.created", "comment.created", "like.toggled", "member.joined",
}

// eventTypeRE is what an event type may look like: no CR/LF, so no SSE field injection.
var eventTypeRE = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)

// ValidEventTypeName reports whether s is a well-formed event type name.
func ValidEventTypeName(s string) bool { return eventTypeRE.MatchString(s) }

// reservedEventType reports whether the hub keeps this type for itself.
func reservedEventType(s string) bool {
	return s == PresenceEventType || strings.HasPrefix(s, "system.")
}

// Config is the hub's configuration, read once from the environment at start-up.
// Each field names its variable; the defaults are those of DESIGN.md.
type Config struct {
	Port                  int           // SERVER_PORT, 8083
	RedisURL              string        // REDIS_URL; empty means an embedded in-process Redis
	JWTSecret             string        // JWT_SECRET
	InternalAPIKey        string        // INTERNAL_API_KEY
	AllowedOrigins        []string      // ALLOWED_ORIGINS, comma list; empty allows none cross-origin
	ChannelCapacity       int           // SSE_CHANNEL_CAPACITY, 256 events buffered per stream
	KeepAlive             time.Duration // SSE_KEEPALIVE_SECS, 15
	PresenceUserTTL       time.Duration // PRESENCE_USER_TTL_SECS, 60
	PresenceHashTTL       time.Duration // PRESENCE_HASH_TTL_SECS, 120
	WriteBehindInterval   time.Duration // WRITE_BEHIND_INTERVAL_SECS, 30
	WriteBehindBatchSize  int           // WRITE_BEHIND_BATCH_SIZE, 200
	StreamMaxLen          int64         // STREAM_MAXLEN, 10000 (approximate)
	LockTTL               time.Duration // LOCK_TTL_SECS, 10
	WriteTimeout          time.Duration // SSE_WRITE_TIMEOUT_SECS, 5
	StreamOpens           Budget        // no variable: stream opens per user and instance; 20 at once, 2 a second after
	Heartbeats            Budget        // no variable: presence heartbeats per user and instance; 10 at once, 1 a second after
	ListenerIdle          time.Duration // no variable: a listener silent this long probes itself through Redis; 15 s, 0 never
	ShutdownSpread        time.Duration // no variable: on shutdown, open streams end spread over this long, each with a jittered retry:; 5 s
	OutboxGrace           time.Duration // no variable: an unfinished outbox entry this old is finished by the sweep; 10 s
	SlowWrite             time.Duration // no variable: a write blocked this long while events are dropped cuts the stream (system.lagged); 1 s, at most WriteTimeout
	IdempotencyTTL        time.Duration // IDEMPOTENCY_TTL_SECS, 86400
	PublishMaxBytes       int64         // PUBLISH_MAX_BYTES, 65536
	PublishWaitReplicas   int           // PUBLISH_WAIT_REPLICAS, 0: a publish is acknowledged once this many replicas have it (WAIT)
	PublishWait           time.Duration // PUBLISH_WAIT_MS, 500: how long a publish waits for them
	MaxConnectionsPerUser int           // MAX_CONNECTIONS_PER_USER, 5; 0 means no cap
	PresenceBroadcast     time.Duration // PRESENCE_BROADCAST_MS, 1000; 0 means one update per transition
	PresenceListMax       int           // PRESENCE_LIST_MAX, 500
	Retry                 time.Duration // SSE_RETRY_MS, 3000
	EventTypes            []string      // EVENT_TYPES, comma list
	InboxRetention        time.Duration // INBOX_RETENTION_DAYS, 30
	InboxMaxEntries       int           // INBOX_MAX_ENTRIES, 1000 newest kept per user
	ReadSinkURL           string        // READ_SINK_URL; empty means a log sink
	HistoryRetention      time.Duration // HISTORY_RETENTION_SECS, 604800: a room's history expires this long after its last publish
	RoomAuth              string        // ROOM_AUTH: open, claim or proxy; open in development, required in production
	RoomAuthURL           string        // ROOM_AUTH_URL, the backend asked in proxy mode
	RoomAuthCache         time.Duration // ROOM_AUTH_CACHE_SECS, 60: how long a proxy answer is kept
	StreamMaxRooms        int           // STREAM_MAX_ROOMS, 32 rooms in one page stream
	TLSCertFile           string        // TLS_CERT_FILE; with TLS_KEY_FILE the hub serves HTTPS with HTTP/2
	TLSKeyFile            string        // TLS_KEY_FILE
	DebugAddr             string        // DEBUG_ADDR; set: Go's pprof profiles are served there (bind it to loopback)
	PubSubMode            string        // PUBSUB_MODE on one Redis: patterns (PSUBSCRIBE room:*, the default) or channels (SUBSCRIBE per local topic)
	Env                   string        // HUB_ENV, development or production
	LogLevel              slog.Level    // LOG_LEVEL, info
}

// PUBSUB_MODE values: how a hub on one Redis listens (a cluster always
// subscribes per topic, with SSUBSCRIBE).
const (
	PubSubPatterns = "patterns" // PSUBSCRIBE room:* and user:*: every hub hears every room
	PubSubChannels = "channels" // SUBSCRIBE per local topic: a hub hears only its rooms
)

// Budget is a per-user rate limit: Burst at once, then PerSec a second.
type Budget struct {
	PerSec float64
	Burst  int
}

// Publishable reports whether a backend may publish events of type t.
func (c Config) Publishable(t string) bool {
	for _, a := range c.EventTypes {
		if a == t {
			return true
		}
	}
	return false
}

// Production reports whether the hub runs with HUB_ENV=production.
func (c Config) Production() bool { return c.Env == "production" }

// TLS reports whether the hub serves HTTPS (with HTTP/2).
func (c Config) TLS() bool { return c.TLSCertFile != "" }

// DevRoutes reports whether /dev/* may be mounted: not in production, and
// only with the dev default JWT secret, so that the tokens they mint are
// worthless anywhere else.
func (c Config) DevRoutes() bool { return !c.Production() && c.JWTSecret == DevJWTSecret }

// DefaultConfig is the configuration with nothing set.
func DefaultConfig() Config {
	c, err := LoadConfig(func(string) (string, bool) { return "", false })
	if err != nil {
		panic(err) // the defaults are valid by construction
	}
	return c
}

// ConfigError names the variable that stopped start-up.
type ConfigError struct {
	Var, Value, Reason string
}

// Error names the variable, its value and what is wrong with it.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("config: %s=%q: %s", e.Var, e.Value, e.Reason)
}

// LoadConfig reads the configuration through lookup (os.LookupEnv in main) and
// validates it. The first bad value is returned as a *ConfigError.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	l := loader{lookup: lookup}
	c := Config{
		Port:                  l.int("SERVER_PORT", 8083, 1, 65535),
		RedisURL:              l.str("REDIS_URL", ""),
		JWTSecret:             l.str("JWT_SECRET", DevJWTSecret),
		InternalAPIKey:        l.str("INTERNAL_API_KEY", DevInternalAPIKey),
		AllowedOrigins:        l.list("ALLOWED_ORIGINS", nil),
		ChannelCapacity:       l.int("SSE_CHANNEL_CAPACITY", 256, 1, 1<<20),
		KeepAlive:             l.secs("SSE_KEEPALIVE_SECS", 15, 1),
		PresenceUserTTL:       l.secs("PRESENCE_USER_TTL_SECS", 60, 1),
		PresenceHashTTL:       l.secs("PRESENCE_HASH_TTL_SECS", 120, 1),
		WriteBehindInterval:   l.secs("WRITE_BEHIND_INTERVAL_SECS", 30, 1),
		WriteBehindBatchSize:  l.int("WRITE_BEHIND_BATCH_SIZE", 200, 1, 100000),
		StreamMaxLen:          int64(l.int("STREAM_MAXLEN", 10000, 1, 1<<40)),
		LockTTL:               l.secs("LOCK_TTL_SECS", 10, 1),
		WriteTimeout:          l.secs("SSE_WRITE_TIMEOUT_SECS", 5, 1),
		IdempotencyTTL:        l.secs("IDEMPOTENCY_TTL_SECS", 86400, 1),
		PublishMaxBytes:       int64(l.int("PUBLISH_MAX_BYTES", 65536, 256, 64<<20)),
		PublishWaitReplicas:   l.int("PUBLISH_WAIT_REPLICAS", 0, 0, 100),
		PublishWait:           time.Duration(l.int("PUBLISH_WAIT_MS", 500, 1, 60_000)) * time.Millisecond,
		MaxConnectionsPerUser: l.int("MAX_CONNECTIONS_PER_USER", 5, 0, 1<<20),
		PresenceBroadcast:     time.Duration(l.int("PRESENCE_BROADCAST_MS", 1000, 0, 3600_000)) * time.Millisecond,
		PresenceListMax:       l.int("PRESENCE_LIST_MAX", 500, 0, 1<<20),
		Retry:                 time.Duration(l.int("SSE_RETRY_MS", 3000, 0, 3600_000)) * time.Millisecond,
		EventTypes:            l.list("EVENT_TYPES", DefaultEventTypes),
		InboxRetention:        time.Duration(l.int("INBOX_RETENTION_DAYS", 30, 1, 36500)) * 24 * time.Hour,
		InboxMaxEntries:       l.int("INBOX_MAX_ENTRIES", 1000, 1, 100000),
		ReadSinkURL:           l.str("READ_SINK_URL", ""),
		HistoryRetention:      l.secs("HISTORY_RETENTION_SECS", 604800, 1),
		RoomAuth:              l.str("ROOM_AUTH", ""),
		RoomAuthURL:           l.str("ROOM_AUTH_URL", ""),
		RoomAuthCache:         l.secs("ROOM_AUTH_CACHE_SECS", 60, 1),
		StreamMaxRooms:        l.int("STREAM_MAX_ROOMS", 32, 1, 1000),
		TLSCertFile:           l.str("TLS_CERT_FILE", ""),
		TLSKeyFile:            l.str("TLS_KEY_FILE", ""),
		DebugAddr:             l.str("DEBUG_ADDR", ""),
		PubSubMode:            l.str("PUBSUB_MODE", PubSubPatterns),
		Env:                   l.str("HUB_ENV", "development"),
	}
	c.LogLevel = l.level("LOG_LEVEL")
	c.SlowWrite = min(time.Second, c.WriteTimeout)
	c.OutboxGrace = 10 * time.Second
	c.ShutdownSpread = 5 * time.Second
	c.ListenerIdle = 15 * time.Second
	c.StreamOpens = Budget{PerSec: 2, Burst: 20}
	c.Heartbeats = Budget{PerSec: 1, Burst: 10}
	if l.err != nil {
		return Config{}, l.err
	}
	if err := c.validate(); err != nil {
		return Config{}, err
	}
	if c.RoomAuth == "" {
		c.RoomAuth = RoomAuthOpen // development only: validate refuses it unset in production
	}
	return c, nil
}

func (c Config) validate() error {
	if c.Env != "development" && c.Env != "production" {
		return &ConfigError{"HUB_ENV", c.Env, "must be development or production"}
	}
	if c.JWTSecret == "" {
		return &ConfigError{"JWT_SECRET", "", "must not be empty"}
	}
	if c.InternalAPIKey == "" {
		return &ConfigError{"INTERNAL_API_KEY", "", "must not be empty"}
	}
	if c.Production() && c.JWTSecret == DevJWTSecret {
		return &ConfigError{"JWT_SECRET", "(dev default)", "the dev default is refused when HUB_ENV=production"}
	}
	if c.Production() && c.InternalAPIKey == DevInternalAPIKey {
		return &ConfigError{"INTERNAL_API_KEY", "(dev default)", "the dev default is refused when HUB_ENV=production"}
	}
	if len(c.EventTypes) == 0 {
		return &ConfigError{"EVENT_TYPES", "", "must list at least one event type"}
	}
	for _, t := range c.EventTypes {
		if !ValidEventTypeName(t) {
			return &ConfigError{"EVENT_TYPES", t, "an event type is lowercase [a-z0-9_.-], at most 64 bytes"}
		}
		if reservedEventType(t) {
			return &ConfigError{"EVENT_TYPES", t, "presence.update and system.* are reserved for the hub"}
		}
	}
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			return &ConfigError{"ALLOWED_ORIGINS", o, "* is refused: requests carry credentials (cookies), so any site could read a user's streams; list the origins"}
		}
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return &ConfigError{"ALLOWED_ORIGINS", o, "an origin starts with http:// or https://"}
		}
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		name, v := "TLS_KEY_FILE", c.TLSKeyFile
		if c.TLSCertFile == "" {
			name, v = "TLS_CERT_FILE", c.TLSCertFile
		}
		return &ConfigError{name, v, "TLS_CERT_FILE and TLS_KEY_FILE go together: set both for HTTPS, or neither"}
	}
	if c.PubSubMode != PubSubPatterns && c.PubSubMode != PubSubChannels {
		return &ConfigError{"PUBSUB_MODE", c.PubSubMode, "must be patterns or channels"}
	}
	switch c.RoomAuth {
	case RoomAuthOpen, RoomAuthClaim, RoomAuthProxy:
	case "":
		if c.Production() {
			return &ConfigError{"ROOM_AUTH", "", "must be set when HUB_ENV=production: open, claim or proxy"}
		}
	default:
		return &ConfigError{"ROOM_AUTH", c.RoomAuth, "must be open, claim or proxy"}
	}
	if c.RoomAuth == RoomAuthProxy && !strings.HasPrefix(c.RoomAuthURL, "http://") && !strings.HasPrefix(c.RoomAuthURL, "https://") {
		return &ConfigError{"ROOM_AUTH_URL", c.RoomAuthURL, "ROOM_AUTH=proxy needs an http:// or https:// URL"}
	}
	if c.ReadSinkURL != "" && !strings.HasPrefix(c.ReadSinkURL, "http://") && !strings.HasPrefix(c.ReadSinkURL, "https://") {
		return &ConfigError{"READ_SINK_URL", c.ReadSinkURL, "must be an http:// or https:// URL"}
	}
	if c.PresenceHashTTL < c.PresenceUserTTL {
		return &ConfigError{"PRESENCE_HASH_TTL_SECS", strconv.Itoa(int(c.PresenceHashTTL / time.Second)),
			"must be at least PRESENCE_USER_TTL_SECS"}
	}
	return nil
}

// loader parses variables and keeps the first error.
type loader struct {
	lookup func(string) (string, bool)
	err    error
}

func (l *loader) get(name string) (string, bool) {
	v, ok := l.lookup(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

func (l *loader) fail(name, value, reason string) {
	if l.err == nil {
		l.err = &ConfigError{name, value, reason}
	}
}

func (l *loader) str(name, def string) string {
	if v, ok := l.get(name); ok {
		return v
	}
	return def
}

func (l *loader) int(name string, def, lo, hi int) int {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		l.fail(name, v, "not a whole number")
		return def
	}
	if n < lo || n > hi {
		l.fail(name, v, fmt.Sprintf("must be between %d and %d", lo, hi))
		return def
	}
	return n
}

func (l *loader) secs(name string, def, lo int) time.Duration {
	return time.Duration(l.int(name, def, lo, 10*365*86400)) * time.Second
}

func (l *loader) list(name string, def []string) []string {
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

func (l *loader) level(name string) slog.Level {
	v, ok := l.get(name)
	if !ok {
		return slog.LevelInfo
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(v)); err != nil {
		l.fail(name, v, "must be debug, info, warn or error")
	}
	return lv
}
