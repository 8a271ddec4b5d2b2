package hub

import (
	"log/slog"
	"roomhub/internal/env"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DevInternalAPIKey is INTERNAL_API_KEY's dev default, refused when
// HUB_ENV=production.
const DevInternalAPIKey = "local_dev_internal_key"

// DefaultEventTypes are the event types a backend may publish unless EVENT_TYPES says otherwise.
var DefaultEventTypes = []string{
	"retrospect.submitted", "retrospect.created", "comment.created", "like.toggled", "member.joined",
}

// ValidEventTypeName reports whether s is a well-formed event type name.
// An event type is 1 to 64 of [a-z0-9_.-]: no CR/LF, so no SSE field
// injection. (A loop, not a regexp: every pub/sub message is checked.)
func ValidEventTypeName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// reservedEventType reports whether the hub keeps this type for itself.
func reservedEventType(s string) bool {
	return s == PresenceEventType || strings.HasPrefix(s, "system.")
}

// Config is the hub's configuration, read once from the environment at start-up.
// Each field names its variable; the defaults are those of DESIGN.md.
type Config struct {
	RedisURL              string        // REDIS_URL; empty means an embedded in-process Redis
	InternalAPIKey        string        // INTERNAL_API_KEY
	ChannelCapacity       int           // SSE_CHANNEL_CAPACITY, 256 events buffered per stream
	KeepAlive             time.Duration // SSE_KEEPALIVE_SECS, 15
	PresenceUserTTL       time.Duration // PRESENCE_USER_TTL_SECS, 60
	PresenceHashTTL       time.Duration // PRESENCE_HASH_TTL_SECS, 120
	StreamMaxLen          int64         // STREAM_MAXLEN, 10000 (approximate)
	LockTTL               time.Duration // LOCK_TTL_SECS, 10
	WriteTimeout          time.Duration // SSE_WRITE_TIMEOUT_SECS, 5
	ListenerIdle          time.Duration // no variable: a listener silent this long probes itself through Redis; 15 s, 0 never
	ShutdownSpread        time.Duration // no variable: on shutdown, open streams end spread over this long, each with a jittered retry:; 5 s
	SlowWrite             time.Duration // no variable: a write blocked this long while events are dropped cuts the stream (system.lagged); 1 s, at most WriteTimeout
	IdempotencyTTL        time.Duration // IDEMPOTENCY_TTL_SECS, 86400
	PublishWaitReplicas   int           // PUBLISH_WAIT_REPLICAS, 0: a publish is acknowledged once this many replicas have it (WAIT)
	PublishWait           time.Duration // PUBLISH_WAIT_MS, 500: how long a publish waits for them
	MaxConnectionsPerUser int           // MAX_CONNECTIONS_PER_USER, 5; 0 means no cap
	PresenceBroadcast     time.Duration // PRESENCE_BROADCAST_MS, 1000; 0 means one update per transition
	PresenceListMax       int           // PRESENCE_LIST_MAX, 500
	Retry                 time.Duration // SSE_RETRY_MS, 3000
	EventTypes            []string      // EVENT_TYPES, comma list
	HistoryRetention      time.Duration // HISTORY_RETENTION_SECS, 604800: a room's history expires this long after its last publish
	RoomAuth              string        // ROOM_AUTH: open, claim or proxy; open in development, required in production
	RoomAuthURL           string        // ROOM_AUTH_URL, the backend asked in proxy mode
	RoomAuthCache         time.Duration // ROOM_AUTH_CACHE_SECS, 60: how long a proxy answer is kept
	RecordTTL             time.Duration // DELIVERY_RECORD_DAYS, 7: how long a finished record is kept (a delivery's, a dead ingest entry's)
	PubSubMode            string        // PUBSUB_MODE on one Redis: channels (SUBSCRIBE per local topic, the default) or patterns (PSUBSCRIBE room:*)
	Env                   string        // HUB_ENV, development or production
	LogLevel              slog.Level    // LOG_LEVEL, info
}

// PUBSUB_MODE values: how a hub on one Redis listens (a cluster always
// subscribes per topic, with SSUBSCRIBE).
const (
	PubSubPatterns = "patterns" // PSUBSCRIBE room:* and user:*: every hub hears every room
	PubSubChannels = "channels" // SUBSCRIBE per local topic: a hub hears only its rooms
)

// Publishable reports whether a backend may publish events of type t.
func (c Config) Publishable(t string) bool { return slices.Contains(c.EventTypes, t) }

// Embedded reports whether the hub runs on its own in-process Redis (no
// REDIS_URL: the dev mode of go run .).
func (c Config) Embedded() bool { return c.RedisURL == "" }

// Production reports whether the hub runs with HUB_ENV=production.
func (c Config) Production() bool { return c.Env == "production" }

// DefaultConfig is the configuration with nothing set.
func DefaultConfig() Config { return env.Defaults(LoadConfig) }

// ConfigError names the variable that stopped start-up.
type ConfigError = env.Error

// LoadConfig reads the configuration through lookup (os.LookupEnv in main) and
// validates it. The first bad value is returned as a *ConfigError.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	l := env.New(lookup)
	c := Config{
		RedisURL:              l.Str("REDIS_URL", ""),
		InternalAPIKey:        l.Str("INTERNAL_API_KEY", DevInternalAPIKey),
		ChannelCapacity:       l.Int("SSE_CHANNEL_CAPACITY", 256, 1, 1<<20),
		KeepAlive:             l.Secs("SSE_KEEPALIVE_SECS", 15, 1),
		PresenceUserTTL:       l.Secs("PRESENCE_USER_TTL_SECS", 60, 1),
		PresenceHashTTL:       l.Secs("PRESENCE_HASH_TTL_SECS", 120, 1),
		StreamMaxLen:          int64(l.Int("STREAM_MAXLEN", 10000, 1, 1<<40)),
		LockTTL:               l.Secs("LOCK_TTL_SECS", 10, 1),
		WriteTimeout:          l.Secs("SSE_WRITE_TIMEOUT_SECS", 5, 1),
		IdempotencyTTL:        l.Secs("IDEMPOTENCY_TTL_SECS", 86400, 1),
		PublishWaitReplicas:   l.Int("PUBLISH_WAIT_REPLICAS", 0, 0, 100),
		PublishWait:           time.Duration(l.Int("PUBLISH_WAIT_MS", 500, 1, 60_000)) * time.Millisecond,
		MaxConnectionsPerUser: l.Int("MAX_CONNECTIONS_PER_USER", 5, 0, 1<<20),
		PresenceBroadcast:     time.Duration(l.Int("PRESENCE_BROADCAST_MS", 1000, 0, 3600_000)) * time.Millisecond,
		PresenceListMax:       l.Int("PRESENCE_LIST_MAX", 500, 0, 1<<20),
		Retry:                 time.Duration(l.Int("SSE_RETRY_MS", 3000, 0, 3600_000)) * time.Millisecond,
		EventTypes:            l.List("EVENT_TYPES", DefaultEventTypes),
		HistoryRetention:      l.Secs("HISTORY_RETENTION_SECS", 604800, 1),
		RoomAuth:              l.Str("ROOM_AUTH", ""),
		RoomAuthURL:           l.Str("ROOM_AUTH_URL", ""),
		RoomAuthCache:         l.Secs("ROOM_AUTH_CACHE_SECS", 60, 1),
		RecordTTL:             time.Duration(l.Int("DELIVERY_RECORD_DAYS", 7, 1, 3650)) * 24 * time.Hour,
		PubSubMode:            l.Str("PUBSUB_MODE", PubSubChannels),
		Env:                   l.Str("HUB_ENV", "development"),
	}
	c.LogLevel = l.Level("LOG_LEVEL")
	c.SlowWrite = min(time.Second, c.WriteTimeout)
	c.ShutdownSpread = 5 * time.Second
	c.ListenerIdle = 15 * time.Second
	if err := l.Err(); err != nil {
		return Config{}, err
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
		return &ConfigError{Var: "HUB_ENV", Value: c.Env, Reason: "must be development or production"}
	}
	if c.InternalAPIKey == "" {
		return &ConfigError{Var: "INTERNAL_API_KEY", Value: "", Reason: "must not be empty"}
	}
	if c.Production() && c.InternalAPIKey == DevInternalAPIKey {
		return &ConfigError{Var: "INTERNAL_API_KEY", Value: "(dev default)", Reason: "the dev default is refused when HUB_ENV=production"}
	}
	if len(c.EventTypes) == 0 {
		return &ConfigError{Var: "EVENT_TYPES", Value: "", Reason: "must list at least one event type"}
	}
	for _, t := range c.EventTypes {
		if !ValidEventTypeName(t) {
			return &ConfigError{Var: "EVENT_TYPES", Value: t, Reason: "an event type is lowercase [a-z0-9_.-], at most 64 bytes"}
		}
		if reservedEventType(t) {
			return &ConfigError{Var: "EVENT_TYPES", Value: t, Reason: "presence.update and system.* are reserved for the hub"}
		}
	}
	if c.PubSubMode != PubSubPatterns && c.PubSubMode != PubSubChannels {
		return &ConfigError{Var: "PUBSUB_MODE", Value: c.PubSubMode, Reason: "must be patterns or channels"}
	}
	switch c.RoomAuth {
	case RoomAuthOpen, RoomAuthClaim, RoomAuthProxy:
	case "":
		if c.Production() {
			return &ConfigError{Var: "ROOM_AUTH", Value: "", Reason: "must be set when HUB_ENV=production: open, claim or proxy"}
		}
	default:
		return &ConfigError{Var: "ROOM_AUTH", Value: c.RoomAuth, Reason: "must be open, claim or proxy"}
	}
	if c.Production() && c.Embedded() {
		// The embedded Redis is one process's memory: replicas would not share
		// it, a restart would lose it, and /health would still say healthy.
		return &ConfigError{Var: "REDIS_URL", Value: "", Reason: "must be set when HUB_ENV=production (unset would mean an embedded in-memory Redis, one per replica, lost on restart)"}
	}
	if c.RoomAuth == RoomAuthProxy && !strings.HasPrefix(c.RoomAuthURL, "http://") && !strings.HasPrefix(c.RoomAuthURL, "https://") {
		return &ConfigError{Var: "ROOM_AUTH_URL", Value: c.RoomAuthURL, Reason: "ROOM_AUTH=proxy needs an http:// or https:// URL"}
	}
	if c.PresenceHashTTL < c.PresenceUserTTL {
		return &ConfigError{Var: "PRESENCE_HASH_TTL_SECS", Value: strconv.Itoa(int(c.PresenceHashTTL / time.Second)), Reason: "must be at least PRESENCE_USER_TTL_SECS"}
	}
	return nil
}
