package channels

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/hub/push/webpush"
	"roomhub/internal/env"
	"roomhub/internal/testapns"
	"roomhub/internal/testfcm"
)

// load reads every configuration a channel depends on, as main does.
func load(vars map[string]string) (Config, error) {
	lookup := env.Map(vars)
	core, err := hub.LoadConfig(lookup)
	if err != nil {
		return Config{}, err
	}
	d, err := delivery.LoadConfig(lookup, core)
	if err != nil {
		return Config{}, err
	}
	return LoadConfig(lookup, d, core)
}

// The WEBPUSH_ variables: all three or none; a subject that is mailto: or
// https:; production or a real Redis with webpush listed needs them; a key
// pair that is not one is refused before anything waits for Redis.
func TestLoadConfig_WebPush(t *testing.T) {
	pair, err := webpush.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{"DELIVERY_CHANNELS": "webpush", "WEBPUSH_VAPID_PUBLIC_KEY": pair.Public, "WEBPUSH_VAPID_PRIVATE_KEY": pair.Private(), "WEBPUSH_SUBJECT": "mailto:ops@example.com"}
	if c, err := load(keys); err != nil || !c.Delivery.On("webpush") || !c.WebPush.KeysSet() {
		t.Fatalf("all three set, webpush alone (no gateway): %v", err)
	}
	for _, missing := range []string{"WEBPUSH_VAPID_PUBLIC_KEY", "WEBPUSH_VAPID_PRIVATE_KEY", "WEBPUSH_SUBJECT"} {
		vars := maps.Clone(keys)
		delete(vars, missing)
		var ce *hub.ConfigError
		if _, err := load(vars); !errors.As(err, &ce) || ce.Var != missing {
			t.Errorf("without %s: %v", missing, err)
		}
	}
	bad := maps.Clone(keys)
	bad["WEBPUSH_SUBJECT"] = "ops@example.com"
	if _, err := load(bad); err == nil || !strings.Contains(err.Error(), "WEBPUSH_SUBJECT") {
		t.Errorf("a subject without mailto: %v", err)
	}
	bad = maps.Clone(keys)
	bad["WEBPUSH_VAPID_PRIVATE_KEY"] = "bm90IGEga2V5"
	if _, err := load(bad); err == nil || !strings.Contains(err.Error(), "WEBPUSH_VAPID_PRIVATE_KEY") || strings.Contains(err.Error(), "bm90IGEga2V5") {
		t.Errorf("a private key that is none: %v", err)
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
	if c, err := load(nil); err != nil || !c.Delivery.On("webpush") || c.WebPush.KeysSet() {
		t.Errorf("the dev mode: webpush on with no keys (it makes a pair): %+v %v", c, err)
	}
}

// Mobile push (DESIGN): a channel listed without its keys, or the APNS_
// keys half set (listed or not), stops start-up naming the variable; fcm
// and apns need no gateway; the services' URLs are https; a key that is
// not one is refused before anything waits for Redis.
func TestLoadConfig_MobilePush(t *testing.T) {
	fs, as := testfcm.Start(t), testapns.Start(t)
	both := map[string]string{"APNS_KEY_ID": testapns.KeyID, "APNS_TEAM_ID": testapns.Team, "APNS_PRIVATE_KEY": as.Key(), "APNS_TOPIC": testapns.Topic,
		"DELIVERY_CHANNELS": "fcm,apns", "FCM_CREDENTIALS": fs.Key()}
	if c, err := load(both); err != nil || !c.Delivery.On("fcm") || !c.Delivery.On("apns") {
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
		var ce *hub.ConfigError
		if _, err := load(vars); !errors.As(err, &ce) || ce.Var != v {
			t.Errorf("%v: %v, want an error naming %s", vars, err, v)
		}
	}
	for v, bad := range map[string]string{"FCM_CREDENTIALS": `{"type":"authorized_user"}`, "APNS_PRIVATE_KEY": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"} {
		vars := maps.Clone(both)
		vars[v] = bad
		var ce *hub.ConfigError
		if _, err := load(vars); !errors.As(err, &ce) || ce.Var != v {
			t.Errorf("a %s that is no key: %v", v, err)
		}
	}
}
