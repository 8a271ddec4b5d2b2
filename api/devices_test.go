package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"roomhub/hub"
	"roomhub/hub/push"
	"roomhub/internal/testpush"
	"roomhub/internal/testredis"
)

// fcmToken and apnsToken are well-formed tokens of each platform, n apart.
func fcmToken(n int) string  { return fmt.Sprintf("fcm-token:%04d_%s", n, strings.Repeat("x", 140)) }
func apnsToken(n int) string { return fmt.Sprintf("%064x", n) }

// devicesOf lists user's devices by their route.
func (th *testHub) devicesOf(t *testing.T, user int64) []push.Device {
	t.Helper()
	code, env := th.userDo(t, http.MethodGet, "/api/v1/push/devices", user, "")
	if code != 200 {
		t.Fatalf("GET devices: %d %+v", code, env)
	}
	var out struct{ Devices []push.Device }
	remarshal(t, env.Result, &out)
	return out.Devices
}

func (th *testHub) register(t *testing.T, user int64, body string) {
	t.Helper()
	if code, env := th.userDo(t, http.MethodPost, "/api/v1/push/devices", user, body); code != 200 || env.Result.(map[string]any)["registered"] != true {
		t.Fatalf("register %s: %d %+v", body, code, env)
	}
}

// byPlatform counts devices by platform, and says which are enabled.
func byPlatform(ds []push.Device) (n map[string]int, on map[string]bool) {
	n, on = map[string]int{}, map[string]bool{}
	for _, d := range ds {
		n[d.Platform]++
		on[d.ID] = d.Enabled
	}
	return n, on
}

// The device routes (DESIGN, Mobile push): tokens checked by platform;
// registering again keeps what the body does not say (label, consent);
// replaces drops the old token; ten a platform, the one registered longest
// ago replaced; a token moves to the user who registers it; DELETE and
// PATCH reach only the user's own; browsers are listed beside phones, and
// their consent outlives the SDK's refresh of the subscription.
func TestDevices_Routes(t *testing.T) {
	rs := testredis.Start(t)
	off := startHub(t, rs.Addr(), nil)
	if code, env := off.userDo(t, http.MethodGet, "/api/v1/push/devices", 7, ""); code != 404 || env.Code != "COMMON404" {
		t.Fatalf("with no push channel: %d %+v, want 404", code, env)
	}
	ps := testpush.Start(t)
	a := startPushHub(t, rs.Addr(), ps, nil)
	b := startPushHub(t, rs.Addr(), ps, nil)
	for _, body := range []string{
		`{"platform":"sms","token":"x"}`, `{"platform":"webpush","token":"x"}`, `{"platform":"fcm","token":""}`,
		`{"platform":"fcm","token":"has space"}`, `{"platform":"fcm","token":"` + strings.Repeat("a", 4097) + `"}`,
		`{"platform":"apns","token":"` + strings.Repeat("g", 64) + `"}`, `{"platform":"apns","token":"abcd"}`,
		`{"platform":"apns","token":"` + strings.Repeat("a", 202) + `"}`,
		`{"platform":"fcm","token":"` + fcmToken(1) + `","environment":"sandbox"}`,
		`{"platform":"apns","token":"` + apnsToken(1) + `","environment":"staging"}`,
		`{"platform":"fcm","token":"` + fcmToken(1) + `","label":"` + strings.Repeat("l", push.MaxLabel+1) + `"}`,
		`{"platform":"fcm","token":"` + fcmToken(1) + `","replaces":"bad token"}`,
		`{"platform":"fcm","token":"` + fcmToken(1) + `","extra":1}`,
		`[]`,
	} {
		if code, env := a.userDo(t, http.MethodPost, "/api/v1/push/devices", 7, body); code != 400 || env.Code != "COMMON400" {
			t.Errorf("%.80s: %d %+v, want 400", body, code, env)
		}
	}
	a.register(t, 7, `{"platform":"fcm","token":"`+fcmToken(1)+`","label":"Pixel 9"}`)
	a.register(t, 7, `{"platform":"apns","token":"`+apnsToken(1)+`","environment":"sandbox","label":"iPhone"}`)
	a.subscribe(t, 7, ps.Subscription("/push/laptop"))
	ds := b.devicesOf(t, 7)
	of := map[string]push.Device{}
	for _, d := range ds {
		of[d.Platform] = d
	}
	if f := of["fcm"]; len(ds) != 3 || ds[0] != f || f.Label != "Pixel 9" || !f.Enabled || f.LastSentAt != nil || f.AddedAt.IsZero() ||
		f.ID != push.DeviceID("fcm", fcmToken(1)) || of["apns"].Label != "iPhone" || of["webpush"].Label != "127.0.0.1" {
		t.Fatalf("devices: %+v", ds)
	}
	listed, _ := b.userDo(t, http.MethodGet, "/api/v1/push/devices", 7, "")
	if raw := fmt.Sprint(b.devicesOf(t, 7)); strings.Contains(raw, fcmToken(1)) || listed != 200 {
		t.Fatal("a device's token is listed")
	}

	// Consent: off by PATCH, kept by a registration that does not say, set by one that does.
	fcm1 := ds[0].ID
	if code, env := a.userDo(t, http.MethodPatch, "/api/v1/push/devices/"+fcm1, 8, `{"enabled":false}`); code != 404 {
		t.Fatalf("another user's device: %d %+v, want 404", code, env)
	}
	for _, body := range []string{`{}`, `{"enabled":"no"}`, `{"enabled":false,"x":1}`} {
		if code, _ := a.userDo(t, http.MethodPatch, "/api/v1/push/devices/"+fcm1, 7, body); code != 400 {
			t.Errorf("PATCH %s: %d, want 400", body, code)
		}
	}
	code, env := a.userDo(t, http.MethodPatch, "/api/v1/push/devices/"+fcm1, 7, `{"enabled":false}`)
	if code != 200 || env.Result.(map[string]any)["enabled"] != false || env.Result.(map[string]any)["id"] != fcm1 {
		t.Fatalf("PATCH: %d %+v", code, env)
	}
	a.register(t, 7, `{"platform":"fcm","token":"`+fcmToken(1)+`"}`)
	if _, on := byPlatform(a.devicesOf(t, 7)); on[fcm1] {
		t.Fatal("registering again without enabled turned the device back on")
	}
	if ds := a.devicesOf(t, 7); ds[0].Label != "Pixel 9" {
		t.Fatalf("registering again without a label dropped it: %+v", ds[0])
	}
	a.register(t, 7, `{"platform":"fcm","token":"`+fcmToken(1)+`","enabled":true}`)
	if _, on := byPlatform(a.devicesOf(t, 7)); !on[fcm1] {
		t.Fatal("enabled:true did not turn the device on")
	}
	browser := of["webpush"].ID
	if code, _ := a.userDo(t, http.MethodPatch, "/api/v1/push/devices/"+browser, 7, `{"enabled":false}`); code != 200 {
		t.Fatalf("PATCH a browser: %d", code)
	}
	a.subscribe(t, 7, ps.Subscription("/push/laptop")) // the SDK sends it again at every page
	if _, on := byPlatform(a.devicesOf(t, 7)); on[browser] {
		t.Fatal("the browser's refreshed subscription turned it back on")
	}

	// A refreshed token replaces the old one.
	a.register(t, 7, `{"platform":"fcm","token":"`+fcmToken(2)+`","replaces":"`+fcmToken(1)+`"}`)
	if ds := a.devicesOf(t, 7); ds[0].ID == fcm1 || len(ds) != 3 {
		t.Fatalf("after replaces: %+v", ds)
	}
	// Ten a platform: the eleventh replaces the one registered longest ago.
	for i := 3; i <= 12; i++ {
		a.register(t, 7, `{"platform":"fcm","token":"`+fcmToken(i)+`"}`)
	}
	n, on := byPlatform(a.devicesOf(t, 7))
	if _, first := on[push.DeviceID("fcm", fcmToken(2))]; n["fcm"] != push.MaxPerPlatform || n["apns"] != 1 || first {
		t.Fatalf("after 11 fcm tokens: %v (the first kept: %v)", n, first)
	}
	if v := metricValue(t, a, `push_devices{platform="fcm"}`); v != "10" {
		t.Fatalf("push_devices{platform=fcm} = %s, want 10", v)
	}

	// A token moves to the user who registers it.
	a.register(t, 8, `{"platform":"apns","token":"`+apnsToken(1)+`"}`)
	if n, _ := byPlatform(b.devicesOf(t, 7)); n["apns"] != 0 {
		t.Fatal("user 7 kept the token user 8 registered")
	}
	if ds := b.devicesOf(t, 8); len(ds) != 1 || ds[0].Label != "" {
		t.Fatalf("user 8's devices: %+v", ds)
	}
	del := func(user int64, platform, token string) any {
		t.Helper()
		code, env := b.userDo(t, http.MethodDelete, "/api/v1/push/devices", user, fmt.Sprintf(`{"platform":%q,"token":%q}`, platform, token))
		if code != 200 {
			t.Fatalf("DELETE: %d %+v", code, env)
		}
		return env.Result.(map[string]any)["unregistered"]
	}
	if del(7, "apns", apnsToken(1)) != false || del(8, "apns", apnsToken(1)) != true || del(8, "apns", apnsToken(1)) != false {
		t.Fatal("DELETE: another's token, one's own, one's own again: want false, true, false")
	}
	if v := metricValue(t, b, `push_devices{platform="apns"}`); v != "0" { // b deleted it: a reads it within 15 s
		t.Fatalf("push_devices{platform=apns} = %s, want 0", v)
	}
	keys, _ := a.rdb.Do(t.Context(), a.rdb.B().Hlen().Key(hub.PushDevicesKey(8)).Build()).AsInt64()
	if keys != 0 {
		t.Fatalf("user 8's devices hash holds %d after the delete", keys)
	}
}
