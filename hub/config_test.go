package hub

import (
	"errors"
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

// A URL with credentials is never printed whole, whichever variable holds
// it (the features' own: their packages' tests).
func TestLoadConfig_ErrorsRedactURLCredentials(t *testing.T) {
	for _, name := range []string{"ROOM_AUTH_URL"} {
		env := map[string]string{"ROOM_AUTH": "proxy"}
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
