package delivery

import (
	"errors"
	"strings"
	"testing"

	"roomhub/hub"
	"roomhub/internal/env"
)

var vars = env.Map

// A channel other than the hub's own needs the gateway; the gateway's URL
// is http(s), and one with credentials is never printed whole.
func TestLoadConfig_TheGateway(t *testing.T) {
	core := hub.DefaultConfig()
	core.RedisURL = "redis://127.0.0.1:6379" // not the dev mode
	if _, err := LoadConfig(vars(map[string]string{"DELIVERY_CHANNELS": "webpush,email"}), core); err == nil || !strings.Contains(err.Error(), "DELIVERY_SINK_URL") {
		t.Errorf("email without a gateway: %v", err)
	}
	if c, err := LoadConfig(vars(map[string]string{"DELIVERY_CHANNELS": "webpush,fcm,apns"}), core); err != nil || !c.On("fcm") || c.On("email") {
		t.Errorf("the hub's own channels need no gateway: %+v %v", c, err)
	}
	_, err := LoadConfig(vars(map[string]string{"DELIVERY_CHANNELS": "push", "DELIVERY_SINK_URL": "ftp://gateway:hunter2secret@example.com/x"}), core)
	var ce *hub.ConfigError
	if !errors.As(err, &ce) || ce.Var != "DELIVERY_SINK_URL" {
		t.Fatalf("err = %v, want DELIVERY_SINK_URL refused", err)
	}
	if strings.Contains(err.Error(), "hunter2secret") || !strings.Contains(err.Error(), "ftp://(redacted)@example.com") {
		t.Fatalf("the message %q shows the credentials", err)
	}
	for _, bad := range []string{"in_app", "Push", strings.Repeat("a", 33)} {
		if _, err := LoadConfig(vars(map[string]string{"DELIVERY_CHANNELS": bad, "DELIVERY_SINK_URL": "http://ok"}), core); !errors.As(err, &ce) || ce.Var != "DELIVERY_CHANNELS" {
			t.Errorf("channel %q: %v", bad, err)
		}
	}
}

// The embedded dev mode turns webpush on by itself, with DevPushRule for
// every event type, DELIVERY_CHANNELS unset or empty (an .env file's
// DELIVERY_CHANNELS=, issue 57, 5); DELIVERY_CHANNELS set, a real Redis or
// production leave the channels to the operator.
func TestLoadConfig_DevModePushes(t *testing.T) {
	dev, err := LoadConfig(vars(nil), hub.DefaultConfig())
	if err != nil || !dev.On("webpush") || !strings.Contains(dev.Rules, `"comment.created":{"webpush":`+DevPushRule+`}`) {
		t.Errorf("dev mode: channels %v, rules %s, %v", dev.Channels, dev.Rules, err)
	}
	if c, _ := LoadConfig(vars(map[string]string{"DELIVERY_CHANNELS": ""}), hub.DefaultConfig()); !c.On("webpush") {
		t.Error("DELIVERY_CHANNELS empty is unset: the dev mode's webpush")
	}
	if c, _ := LoadConfig(vars(map[string]string{"DELIVERY_CHANNELS": "push", "DELIVERY_SINK_URL": "http://ok"}), hub.DefaultConfig()); c.On("webpush") {
		t.Error("DELIVERY_CHANNELS set is the operator's choice")
	}
	withRedis := hub.DefaultConfig()
	withRedis.RedisURL = "redis://localhost:6379"
	if c, _ := LoadConfig(vars(nil), withRedis); c.On("webpush") {
		t.Error("with REDIS_URL it is not the dev mode")
	}
	if c := DefaultConfig(); len(c.Channels) != 0 || c.MaxAttempts != 8 || c.InflightBytes != 64<<20 {
		t.Errorf("defaults: %+v", c)
	}
}
