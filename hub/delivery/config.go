package delivery

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"roomhub/hub"
	"roomhub/hub/push"
	"roomhub/internal/env"
)

// Config is delivery's configuration, read once at start-up beside the
// core's (LoadConfig). Each field names its variable; the zero Config has no
// channel on: nothing leaves the hub, and the rest is never read.
type Config struct {
	Channels      []string      // DELIVERY_CHANNELS, comma list; none: nothing leaves the hub
	Rules         string        // DELIVERY_RULES, JSON text or @path: event type → channel → rule (ParseRules)
	Caps          string        // DELIVERY_CAPS, JSON: channel → {perHour, perDay} (ParseCaps)
	SinkURL       string        // DELIVERY_SINK_URL, the backend's gateway; required with a channel other than webpush, fcm and apns
	MaxAttempts   int           // DELIVERY_MAX_ATTEMPTS, 8
	InflightBytes int64         // DELIVERY_INFLIGHT_MB, 64: the bytes of items an instance's hand-offs hold at once
	Timeout       time.Duration // no variable: one hand-off's time limit (the push services' too); 10 s
	Backoff       time.Duration // no variable: the first retry's wait, doubling to 10 min; 5 s
}

// On reports whether channel ch is one of DELIVERY_CHANNELS.
func (c Config) On(ch string) bool { return slices.Contains(c.Channels, ch) }

// channelRE is what a delivery channel's name may look like.
var channelRE = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// DevPushRule is the webpush rule of the embedded dev mode and README's
// example: at once, only to someone with no stream open, not once seen.
const DevPushRule = `{"afterSecs":0,"onlyIfOffline":true,"unless":"seen"}`

// DefaultConfig is the configuration with nothing set, outside the dev mode:
// no channel on.
func DefaultConfig() Config {
	c, err := load(env.Nothing, hub.DefaultConfig(), false)
	if err != nil {
		panic(err) // the defaults are valid by construction
	}
	return c
}

// LoadConfig reads delivery's variables through lookup (os.LookupEnv in
// main) and checks them against core's configuration (its event types, and
// whether this is the embedded dev mode). The first bad value is a
// *hub.ConfigError naming its variable.
//
// In the embedded dev mode (go run . without REDIS_URL, not production)
// with DELIVERY_CHANNELS unset (or empty), the webpush channel is on, and with
// DELIVERY_RULES unset every event type has DevPushRule, so that a closed
// demo tab rings.
func LoadConfig(lookup func(string) (string, bool), core hub.Config) (Config, error) {
	return load(lookup, core, true)
}

// load is LoadConfig, with the dev mode's channel when devMode allows it.
func load(lookup func(string) (string, bool), core hub.Config, devMode bool) (Config, error) {
	l := env.New(lookup)
	c := Config{
		Channels:      l.List("DELIVERY_CHANNELS", nil),
		Rules:         l.Str("DELIVERY_RULES", ""),
		Caps:          l.Str("DELIVERY_CAPS", ""),
		SinkURL:       l.Str("DELIVERY_SINK_URL", ""),
		MaxAttempts:   l.Int("DELIVERY_MAX_ATTEMPTS", 8, 1, 100),
		InflightBytes: int64(l.Int("DELIVERY_INFLIGHT_MB", 64, 1, 65536)) << 20,
		Timeout:       10 * time.Second,
		Backoff:       5 * time.Second,
	}
	if err := l.Err(); err != nil {
		return Config{}, err
	}
	// empty is unset, as for every variable: an .env file's DELIVERY_CHANNELS= keeps the dev mode's channel
	if v, _ := lookup("DELIVERY_CHANNELS"); devMode && strings.TrimSpace(v) == "" && core.Embedded() && !core.Production() {
		c = c.devPush(core, lookup)
	}
	if err := c.check(); err != nil {
		return Config{}, err
	}
	if _, _, err := c.parse(core); err != nil {
		return Config{}, err
	}
	return c, nil
}

// devPush is c with the webpush channel on, and with DELIVERY_RULES unset
// DevPushRule for every event type of core's.
func (c Config) devPush(core hub.Config, lookup func(string) (string, bool)) Config {
	c.Channels = []string{push.WebPushChannel}
	if _, set := lookup("DELIVERY_RULES"); !set {
		rules := make([]string, 0, len(core.EventTypes))
		for _, t := range core.EventTypes {
			rules = append(rules, strconv.Quote(t)+`:{"webpush":`+DevPushRule+`}`)
		}
		c.Rules = "{" + strings.Join(rules, ",") + "}"
	}
	return c
}

// check validates the channels' names and the gateway's URL.
func (c Config) check() error {
	for _, ch := range c.Channels {
		if !channelRE.MatchString(ch) || ch == "in_app" {
			return &hub.ConfigError{Var: "DELIVERY_CHANNELS", Value: ch, Reason: "a channel is [a-z0-9_], 1 to 32 bytes, and not in_app (the inbox itself)"}
		}
	}
	if slices.ContainsFunc(c.Channels, func(ch string) bool { return !push.SentByHub(ch) }) && c.SinkURL == "" {
		return &hub.ConfigError{Var: "DELIVERY_SINK_URL", Value: "", Reason: "a channel other than webpush, fcm and apns needs the gateway's http:// or https:// URL"}
	}
	if c.SinkURL != "" && !strings.HasPrefix(c.SinkURL, "http://") && !strings.HasPrefix(c.SinkURL, "https://") {
		return &hub.ConfigError{Var: "DELIVERY_SINK_URL", Value: c.SinkURL, Reason: "must be an http:// or https:// URL"}
	}
	return nil
}

// parse reads DELIVERY_RULES and DELIVERY_CAPS against core's event types;
// a bad one is a *hub.ConfigError naming it.
func (c Config) parse(core hub.Config) (map[string]Rules, map[string]Cap, error) {
	rules, err := ParseRules(c.Rules, c, core)
	if err != nil {
		return nil, nil, &hub.ConfigError{Var: "DELIVERY_RULES", Value: abbreviate(c.Rules), Reason: err.Error()}
	}
	caps, err := ParseCaps(c.Caps, c)
	if err != nil {
		return nil, nil, &hub.ConfigError{Var: "DELIVERY_CAPS", Value: abbreviate(c.Caps), Reason: err.Error()}
	}
	return rules, caps, nil
}

// abbreviate keeps an error message's copy of a long value short.
func abbreviate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
