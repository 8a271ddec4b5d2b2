package testhub

import (
	"fmt"
	"net/http"
	"roomhub/hub/push"
	"roomhub/hub/push/webpush"
	"roomhub/internal/testapns"
	"roomhub/internal/testfcm"
	"roomhub/internal/testpush"
	"strings"
	"sync"
	"testing"
	"time"
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

// Register registers a phone for user (POST /push/devices body).
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

// Subscribe keeps a Web Push subscription for user.
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

// WithPushKeys sets the WEBPUSH_* keys: a hub on a real Redis needs them.
func WithPushKeys(c *Configs) {
	k := PushKeys()
	c.WebPush.PublicKey, c.WebPush.PrivateKey, c.WebPush.Subject = k.Public, k.Private(), "mailto:ops@example.com"
}

// StartPushHub is a hub with the webpush channel on, its endpoints allowed
// on loopback (the stand-in), trusting the stand-in's certificate.
func StartPushHub(t *testing.T, addr string, ps *testpush.Service, more func(*Configs)) *Hub {
	t.Helper()
	th := StartFull(t, addr, func(c *Configs) {
		c.Delivery.Channels, c.Delivery.Rules = []string{"webpush"}, PushRules
		WithPushKeys(c)
		c.WebPush.AllowPrivate, c.WebPush.AllowedHosts = true, []string{"*"}
		c.Delivery.Backoff = 100 * time.Millisecond
		c.Delivery.Timeout = time.Second
		if more != nil {
			more(c)
		}
	}, nil, Extras{PushTLS: ps.Client().Transport.(*http.Transport).TLSClientConfig})
	ps.SetPublicKey(th.VapidKey(t))
	return th
}

// StartFCMHub is a hub with the fcm channel on, sending to the stand-in
// (its key, its URL, its certificate trusted), retrying fast.
func StartFCMHub(t *testing.T, addr string, fs *testfcm.Service, more func(*Configs)) *Hub {
	t.Helper()
	return StartFull(t, addr, func(c *Configs) {
		c.Delivery.Channels, c.Delivery.Rules = []string{"fcm"}, `{"comment.created":{"fcm":{"afterSecs":0}}}`
		c.FCM.Credentials, c.FCM.BaseURL = fs.Key(), fs.URL
		c.Delivery.Backoff, c.Delivery.Timeout = 100*time.Millisecond, 2*time.Second
		if more != nil {
			more(c)
		}
	}, nil, Extras{PushTLS: fs.Client().Transport.(*http.Transport).TLSClientConfig})
}

// DeviceIDs is the set of devices' ids.
func DeviceIDs(ds []push.Device) map[string]bool {
	out := map[string]bool{}
	for _, d := range ds {
		out[d.ID] = true
	}
	return out
}

// StartAPNSHub is a hub with the apns channel on, sending to the stand-in
// (its key, its hosts, its certificate trusted), retrying fast.
func StartAPNSHub(t *testing.T, addr string, as *testapns.Service, more func(*Configs)) *Hub {
	t.Helper()
	return StartFull(t, addr, func(c *Configs) {
		c.Delivery.Channels, c.Delivery.Rules = []string{"apns"}, `{"comment.created":{"apns":{"afterSecs":0}}}`
		c.APNS.KeyID, c.APNS.TeamID, c.APNS.PrivateKey, c.APNS.Topic = testapns.KeyID, testapns.Team, as.Key(), testapns.Topic
		c.APNS.BaseURL, c.APNS.SandboxBaseURL = as.URL, as.URL+"/sandbox"
		c.Delivery.Backoff, c.Delivery.Timeout = 100*time.Millisecond, 2*time.Second
		if more != nil {
			more(c)
		}
	}, nil, Extras{PushTLS: as.Client().Transport.(*http.Transport).TLSClientConfig})
}

// FCMToken and APNSToken are well-formed tokens of each platform, n apart.
func FCMToken(n int) string { return fmt.Sprintf("fcm-token:%04d_%s", n, strings.Repeat("x", 140)) }

func APNSToken(n int) string { return fmt.Sprintf("%064x", n) }

// PushRules are webpush's rules as DESIGN's example has them: nobody
// looking or nothing.
const PushRules = `{"comment.created":{"webpush":{"afterSecs":0,"onlyIfOffline":true,"unless":"seen"}}}`

// PushKeys is one VAPID key pair for every test hub.
var PushKeys = sync.OnceValue(func() webpush.Keys {
	k, err := webpush.NewKeys()
	if err != nil {
		panic(err)
	}
	return k
})
