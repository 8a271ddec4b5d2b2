package hub

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"roomhub/internal/env"
)

var vars = env.Map

func TestLoadConfig_Defaults(t *testing.T) {
	c, err := LoadConfig(vars(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.ChannelCapacity != 256 || c.KeepAlive != 15*time.Second ||
		c.StreamMaxLen != 10000 || c.MaxConnectionsPerUser != 5 ||
		c.PresenceBroadcast != time.Second || c.PresenceListMax != 500 || c.Retry != 3*time.Second ||
		c.IdempotencyTTL != 24*time.Hour || c.Env != "development" || c.InternalAPIKey != DevInternalAPIKey {
		t.Fatalf("defaults differ from DESIGN.md: %+v", c)
	}
	if len(c.EventTypes) != 5 {
		t.Fatalf("EventTypes = %v, want the 5 defaults", c.EventTypes)
	}
}

func TestLoadConfig_BadValueNamesTheVariable(t *testing.T) {
	for _, tc := range []struct{ name, val string }{
		{"SSE_CHANNEL_CAPACITY", "0"},
		{"SSE_KEEPALIVE_SECS", "-1"},
		{"MAX_CONNECTIONS_PER_USER", "five"},
		{"PRESENCE_BROADCAST_MS", "1.5"},
		{"LOG_LEVEL", "loud"},
		{"HUB_ENV", "staging"},
		{"EVENT_TYPES", "Comment.Created"},
		{"EVENT_TYPES", "system.gap"},
		{"EVENT_TYPES", "presence.update"},
		{"READ_SINK_URL", "ftp://x"},
		{"ROOM_AUTH", "maybe"},
		{"HISTORY_RETENTION_SECS", "0"},
	} {
		t.Run(tc.name+"="+tc.val, func(t *testing.T) {
			_, err := LoadConfig(vars(map[string]string{tc.name: tc.val}))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Var != tc.name {
				t.Fatalf("err = %v, want a ConfigError naming %s", err, tc.name)
			}
			if !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("message %q does not name %s", err, tc.name)
			}
		})
	}
}

func TestLoadConfig_ProductionRefusesDevSecrets(t *testing.T) {
	var ce *ConfigError
	_, err := LoadConfig(vars(map[string]string{"HUB_ENV": "production", "JWT_SECRET": "s"}))
	if !errors.As(err, &ce) || ce.Var != "INTERNAL_API_KEY" {
		t.Fatalf("err = %v, want INTERNAL_API_KEY refused", err)
	}
	_, err = LoadConfig(vars(map[string]string{"HUB_ENV": "production", "JWT_SECRET": "s", "INTERNAL_API_KEY": "k"}))
	if !errors.As(err, &ce) || ce.Var != "ROOM_AUTH" {
		t.Fatalf("err = %v, want ROOM_AUTH required in production", err)
	}
	_, err = LoadConfig(vars(map[string]string{"HUB_ENV": "production", "JWT_SECRET": "s", "INTERNAL_API_KEY": "k", "ROOM_AUTH": "claim"}))
	if !errors.As(err, &ce) || ce.Var != "REDIS_URL" {
		t.Fatalf("err = %v, want REDIS_URL required in production (never the embedded Redis)", err)
	}
	c, err := LoadConfig(vars(map[string]string{"HUB_ENV": "production", "JWT_SECRET": "s", "INTERNAL_API_KEY": "k", "ROOM_AUTH": "claim", "REDIS_URL": "redis://127.0.0.1:6379"}))
	if err != nil || !c.Production() || c.RoomAuth != RoomAuthClaim {
		t.Fatalf("production with real secrets and ROOM_AUTH: %v", err)
	}
	_, err = LoadConfig(vars(map[string]string{"ROOM_AUTH": "proxy"}))
	if !errors.As(err, &ce) || ce.Var != "ROOM_AUTH_URL" {
		t.Fatalf("err = %v, want ROOM_AUTH_URL required by proxy", err)
	}
	if c, _ := LoadConfig(vars(nil)); c.RoomAuth != RoomAuthOpen {
		t.Fatalf("development default ROOM_AUTH = %q, want open", c.RoomAuth)
	}
}

func TestLoadConfig_Lists(t *testing.T) {
	c, err := LoadConfig(vars(map[string]string{
		"EVENT_TYPES": " a.b , c_d ,",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.EventTypes, "|"); got != "a.b|c_d" {
		t.Fatalf("EventTypes = %q", got)
	}
}

// A URL with credentials is never printed whole, whichever variable holds it.
func TestLoadConfig_ErrorsRedactURLCredentials(t *testing.T) {
	for _, name := range []string{"READ_SINK_URL", "DELIVERY_SINK_URL", "ROOM_AUTH_URL"} {
		env := map[string]string{name: "ftp://gateway:hunter2secret@example.com/x", "ROOM_AUTH": "proxy",
			"DELIVERY_CHANNELS": "push", "ROOM_AUTH_URL": "http://ok", "DELIVERY_SINK_URL": "http://ok"}
		env[name] = "ftp://gateway:hunter2secret@example.com/x"
		_, err := LoadConfig(vars(env))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Var != name {
			t.Fatalf("%s: err = %v, want it refused", name, err)
		}
		if strings.Contains(err.Error(), "hunter2secret") || !strings.Contains(err.Error(), "ftp://(redacted)@example.com") {
			t.Fatalf("%s: the message %q shows the credentials", name, err)
		}
	}
}

// The WEBPUSH_ variables: all three or none; a subject that is mailto: or
// https:; production or a real Redis with webpush listed needs them; DELIVERY_SINK_URL only
// with another channel. The dev mode turns webpush on by itself.
func TestConfig_WebPush(t *testing.T) {
	load := func(vars map[string]string) (Config, error) {
		return LoadConfig(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	}
	keys := map[string]string{"DELIVERY_CHANNELS": "webpush", "WEBPUSH_VAPID_PUBLIC_KEY": "pub", "WEBPUSH_VAPID_PRIVATE_KEY": "priv", "WEBPUSH_SUBJECT": "mailto:ops@example.com"}
	if c, err := load(keys); err != nil || !c.WebPush() || !c.WebPushKeysSet() {
		t.Fatalf("all three set, webpush alone (no gateway): %v", err)
	}
	for _, missing := range []string{"WEBPUSH_VAPID_PUBLIC_KEY", "WEBPUSH_VAPID_PRIVATE_KEY", "WEBPUSH_SUBJECT"} {
		vars := maps.Clone(keys)
		delete(vars, missing)
		var ce *ConfigError
		if _, err := load(vars); !errors.As(err, &ce) || ce.Var != missing {
			t.Errorf("without %s: %v", missing, err)
		}
	}
	bad := maps.Clone(keys)
	bad["WEBPUSH_SUBJECT"] = "ops@example.com"
	if _, err := load(bad); err == nil || !strings.Contains(err.Error(), "WEBPUSH_SUBJECT") {
		t.Errorf("a subject without mailto: %v", err)
	}
	prod := map[string]string{"DELIVERY_CHANNELS": "webpush", "HUB_ENV": "production", "JWT_SECRET": strings.Repeat("s", 40), "INTERNAL_API_KEY": strings.Repeat("k", 40), "ROOM_AUTH": "open", "REDIS_URL": "redis://127.0.0.1:6379"}
	if _, err := load(prod); err == nil || !strings.Contains(err.Error(), "WEBPUSH_VAPID_PUBLIC_KEY") {
		t.Errorf("production without keys: %v", err)
	}
	// A real Redis outside production: the dev pair is the embedded mode's
	// alone (hardening IV, 10).
	if _, err := load(map[string]string{"DELIVERY_CHANNELS": "webpush", "REDIS_URL": "redis://127.0.0.1:6379"}); err == nil || !strings.Contains(err.Error(), "WEBPUSH_VAPID_PUBLIC_KEY") {
		t.Errorf("a real Redis without keys: %v", err)
	}
	if _, err := load(map[string]string{"DELIVERY_CHANNELS": "webpush,email"}); err == nil || !strings.Contains(err.Error(), "DELIVERY_SINK_URL") {
		t.Errorf("email without a gateway: %v", err)
	}

	dev := DefaultConfig().WithDevPush(vars(nil))
	if !dev.WebPush() || !strings.Contains(dev.DeliveryRules, `"comment.created":{"webpush":`+DevPushRule+`}`) {
		t.Errorf("dev mode: channels %v, rules %s", dev.DeliveryChannels, dev.DeliveryRules)
	}
	if c := DefaultConfig().WithDevPush(vars(map[string]string{"DELIVERY_CHANNELS": ""})); c.WebPush() {
		t.Error("DELIVERY_CHANNELS set (even empty) is the operator's choice")
	}
	withRedis := DefaultConfig()
	withRedis.RedisURL = "redis://localhost:6379"
	if withRedis.WithDevPush(vars(nil)).WebPush() {
		t.Error("with REDIS_URL it is not the dev mode")
	}
}

// Mobile push (DESIGN): a channel listed without its keys, or the APNS_
// keys half set (listed or not), stops start-up naming the variable; fcm
// and apns need no gateway; the services' URLs are https.
func TestConfig_MobilePush(t *testing.T) {
	load := func(vars map[string]string) (Config, error) {
		return LoadConfig(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	}
	apns := map[string]string{"APNS_KEY_ID": "ABC123DEFG", "APNS_TEAM_ID": "TEAM123456", "APNS_PRIVATE_KEY": "/keys/AuthKey.p8", "APNS_TOPIC": "com.example.app"}
	both := maps.Clone(apns)
	both["DELIVERY_CHANNELS"], both["FCM_CREDENTIALS"] = "fcm,apns", "/keys/service-account.json"
	if c, err := load(both); err != nil || !c.FCM() || !c.APNS() || !c.Devices() || !SentByHub("apns") || SentByHub("email") {
		t.Fatalf("both channels with their keys, no gateway: %v", err)
	}
	for v, vars := range map[string]map[string]string{
		"FCM_CREDENTIALS":       {"DELIVERY_CHANNELS": "fcm"},
		"APNS_KEY_ID":           {"DELIVERY_CHANNELS": "apns"},
		"APNS_TOPIC":            {"APNS_KEY_ID": "A", "APNS_TEAM_ID": "T", "APNS_PRIVATE_KEY": "/k.p8"}, // half set, not listed
		"FCM_BASE_URL":          {"FCM_BASE_URL": "http://fcm.internal"},
		"APNS_SANDBOX_BASE_URL": {"APNS_SANDBOX_BASE_URL": "https://"},
		"DELIVERY_SINK_URL":     {"DELIVERY_CHANNELS": "fcm,sms", "FCM_CREDENTIALS": "{}"},
	} {
		var ce *ConfigError
		if _, err := load(vars); !errors.As(err, &ce) || ce.Var != v {
			t.Errorf("%v: %v, want an error naming %s", vars, err, v)
		}
	}
}
