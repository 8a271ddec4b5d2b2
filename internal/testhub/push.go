package testhub

import (
	"net/http"
	"roomhub/hub/push"
	"roomhub/hub/push/webpush"
	"testing"
)

// DevicesOf lists user's devices by their route.
func (th *Hub) DevicesOf(t *testing.T, user int64) []push.Device {
	t.Helper()
	code, env := th.UserDo(t, http.MethodGet, "/api/v1/push/devices", user, "")
	if code != 200 {
		t.Fatalf("GET devices: %d %+v", code, env)
	}
	var out struct{ Devices []push.Device }
	Remarshal(t, env.Result, &out)
	return out.Devices
}

func (th *Hub) Register(t *testing.T, user int64, body string) {
	t.Helper()
	if code, env := th.UserDo(t, http.MethodPost, "/api/v1/push/devices", user, body); code != 200 || env.Result.(map[string]any)["registered"] != true {
		t.Fatalf("register %s: %d %+v", body, code, env)
	}
}

// VapidKey is the hub's VAPID public key, from its route.
func (th *Hub) VapidKey(t *testing.T) string {
	t.Helper()
	code, env := th.Do(t, http.MethodGet, "/api/v1/push/vapid-public-key", nil, "")
	if code != 200 {
		t.Fatalf("vapid-public-key: %d %+v", code, env)
	}
	return env.Result.(map[string]any)["publicKey"].(string)
}

func (th *Hub) Subscribe(t *testing.T, user int64, sub string) {
	t.Helper()
	if code, env := th.UserDo(t, http.MethodPost, "/api/v1/push/subscriptions", user, sub); code != 200 {
		t.Fatalf("subscribe: %d %+v", code, env)
	}
}

// SubsOf reads a user's kept subscriptions straight from Redis.
func (th *Hub) SubsOf(t *testing.T, user int64) (map[string]string, error) {
	t.Helper()
	return th.Redis.Do(t.Context(), th.Redis.B().Hgetall().Key(webpush.SubscriptionsKey(user)).Build()).AsStrMap()
}
