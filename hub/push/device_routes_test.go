package push_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"roomhub/hub/push"
	"roomhub/hub/push/webpush"
	"roomhub/internal/testhub"
	"roomhub/internal/testpush"
	"roomhub/internal/testredis"
)

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
	off := testhub.Start(t, rs.Addr(), nil)
	if code, env := off.UserDo(t, http.MethodGet, "/api/v1/push/devices", 7, ""); code != 404 || env.Code != "COMMON404" {
		t.Fatalf("with no push channel: %d %+v, want 404", code, env)
	}
	ps := testpush.Start(t)
	a := testhub.StartPushHub(t, rs.Addr(), ps, nil)
	b := testhub.StartPushHub(t, rs.Addr(), ps, nil)
	refusesBadBodies(t, a)
	of := listsPhonesAndBrowsers(t, a, b, ps)
	keepsConsent(t, a, of["fcm"].ID, of["webpush"].ID, ps)
	replacesAndBounds(t, a, of["fcm"].ID)
	tokenMovesAndDeletes(t, a, b)
}

// refusesBadBodies: a registration that is not one is a 400.
func refusesBadBodies(t *testing.T, a *testhub.Hub) {
	for _, body := range []string{
		`{"platform":"sms","token":"x"}`, `{"platform":"webpush","token":"x"}`, `{"platform":"fcm","token":""}`,
		`{"platform":"fcm","token":"has space"}`, `{"platform":"fcm","token":"` + strings.Repeat("a", 4097) + `"}`,
		`{"platform":"apns","token":"` + strings.Repeat("g", 64) + `"}`, `{"platform":"apns","token":"abcd"}`,
		`{"platform":"apns","token":"` + strings.Repeat("a", 202) + `"}`,
		`{"platform":"fcm","token":"` + testhub.FCMToken(1) + `","environment":"sandbox"}`,
		`{"platform":"apns","token":"` + testhub.APNSToken(1) + `","environment":"staging"}`,
		`{"platform":"fcm","token":"` + testhub.FCMToken(1) + `","label":"` + strings.Repeat("l", push.MaxLabel+1) + `"}`,
		`{"platform":"fcm","token":"` + testhub.FCMToken(1) + `","replaces":"bad token"}`,
		`{"platform":"fcm","token":"` + testhub.FCMToken(1) + `","label":"Pixel\u202eevil"}`, // a bidi override (hardening V, 19)
		`{"platform":"fcm","token":"` + testhub.FCMToken(1) + `","label":"Pixel\u0007"}`,     // a control character
		`{"platform":"fcm","token":"` + testhub.FCMToken(1) + `","label":"Pixel\u200b9"}`,    // a zero-width space (Cf)
		`{"platform":"fcm","token":"` + testhub.FCMToken(1) + `","extra":1}`,
		`[]`,
		// one field twice, or in another case (hardening V, 19): which would count?
		`{"platform":"fcm","token":"` + testhub.FCMToken(1) + `","Token":"` + testhub.FCMToken(2) + `"}`,
		`{"platform":"fcm","platform":"apns","token":"` + testhub.FCMToken(1) + `"}`,
		`{"Platform":"fcm","token":"` + testhub.FCMToken(1) + `"}`,
	} {
		if code, env := a.UserDo(t, http.MethodPost, "/api/v1/push/devices", 7, body); code != 400 || env.Code != "COMMON400" {
			t.Errorf("%.80s: %d %+v, want 400", body, code, env)
		}
	}
}

// listsPhonesAndBrowsers: two phones and a browser, listed by either
// instance, never with a token; it returns them by platform.
func listsPhonesAndBrowsers(t *testing.T, a, b *testhub.Hub, ps *testpush.Service) map[string]push.Device {
	a.Register(t, 7, `{"platform":"fcm","token":"`+testhub.FCMToken(1)+`","label":"Pixel 9"}`)
	a.Register(t, 7, `{"platform":"apns","token":"`+testhub.APNSToken(1)+`","environment":"sandbox","label":"iPhone"}`)
	a.Subscribe(t, 7, ps.Subscription("/push/laptop"))
	ds := b.DevicesOf(t, 7)
	of := map[string]push.Device{}
	for _, d := range ds {
		of[d.Platform] = d
	}
	if f := of["fcm"]; len(ds) != 3 || ds[0] != f || f.Label != "Pixel 9" || !f.Enabled || f.LastSentAt != nil || f.AddedAt.IsZero() ||
		f.ID != push.DeviceID("fcm", testhub.FCMToken(1)) || of["apns"].Label != "iPhone" || of["webpush"].Label != "127.0.0.1" {
		t.Fatalf("devices: %+v", ds)
	}
	listed, _ := b.UserDo(t, http.MethodGet, "/api/v1/push/devices", 7, "")
	if raw := fmt.Sprint(b.DevicesOf(t, 7)); strings.Contains(raw, testhub.FCMToken(1)) || listed != 200 {
		t.Fatal("a device's token is listed")
	}
	return of
}

// keepsConsent: off by PATCH (only one's own), kept by a registration that
// does not say, set by one that does; a browser's outlives the SDK's refresh.
func keepsConsent(t *testing.T, a *testhub.Hub, fcm1, browser string, ps *testpush.Service) {
	if code, env := a.UserDo(t, http.MethodPatch, "/api/v1/push/devices/"+fcm1, 8, `{"enabled":false}`); code != 404 {
		t.Fatalf("another user's device: %d %+v, want 404", code, env)
	}
	for _, body := range []string{`{}`, `{"enabled":"no"}`, `{"enabled":false,"x":1}`} {
		if code, _ := a.UserDo(t, http.MethodPatch, "/api/v1/push/devices/"+fcm1, 7, body); code != 400 {
			t.Errorf("PATCH %s: %d, want 400", body, code)
		}
	}
	code, env := a.UserDo(t, http.MethodPatch, "/api/v1/push/devices/"+fcm1, 7, `{"enabled":false}`)
	if code != 200 || env.Result.(map[string]any)["enabled"] != false || env.Result.(map[string]any)["id"] != fcm1 {
		t.Fatalf("PATCH: %d %+v", code, env)
	}
	a.Register(t, 7, `{"platform":"fcm","token":"`+testhub.FCMToken(1)+`"}`)
	if _, on := byPlatform(a.DevicesOf(t, 7)); on[fcm1] {
		t.Fatal("registering again without enabled turned the device back on")
	}
	if ds := a.DevicesOf(t, 7); ds[0].Label != "Pixel 9" {
		t.Fatalf("registering again without a label dropped it: %+v", ds[0])
	}
	a.Register(t, 7, `{"platform":"fcm","token":"`+testhub.FCMToken(1)+`","enabled":true}`)
	if _, on := byPlatform(a.DevicesOf(t, 7)); !on[fcm1] {
		t.Fatal("enabled:true did not turn the device on")
	}
	if code, _ := a.UserDo(t, http.MethodPatch, "/api/v1/push/devices/"+browser, 7, `{"enabled":false}`); code != 200 {
		t.Fatalf("PATCH a browser: %d", code)
	}
	a.Subscribe(t, 7, ps.Subscription("/push/laptop")) // the SDK sends it again at every page
	if _, on := byPlatform(a.DevicesOf(t, 7)); on[browser] {
		t.Fatal("the browser's refreshed subscription turned it back on")
	}
}

// replacesAndBounds: a refreshed token replaces the old one; ten a
// platform, the eleventh replacing the one registered longest ago.
func replacesAndBounds(t *testing.T, a *testhub.Hub, fcm1 string) {
	// A refreshed token replaces the old one.
	a.Register(t, 7, `{"platform":"fcm","token":"`+testhub.FCMToken(2)+`","replaces":"`+testhub.FCMToken(1)+`"}`)
	if ds := a.DevicesOf(t, 7); ds[0].ID == fcm1 || len(ds) != 3 {
		t.Fatalf("after replaces: %+v", ds)
	}
	// Ten a platform: the eleventh replaces the one registered longest ago.
	for i := 3; i <= 12; i++ {
		a.Register(t, 7, `{"platform":"fcm","token":"`+testhub.FCMToken(i)+`"}`)
	}
	n, on := byPlatform(a.DevicesOf(t, 7))
	if _, first := on[push.DeviceID("fcm", testhub.FCMToken(2))]; n["fcm"] != push.MaxPerPlatform || n["apns"] != 1 || first {
		t.Fatalf("after 11 fcm tokens: %v (the first kept: %v)", n, first)
	}
	if v := testhub.MetricValue(t, a, `push_devices{platform="fcm"}`); v != "10" {
		t.Fatalf("push_devices{platform=fcm} = %s, want 10", v)
	}
}

// tokenMovesAndDeletes: a token moves to the user who registers it; DELETE
// reaches only one's own, and the hash goes with the last device.
func tokenMovesAndDeletes(t *testing.T, a, b *testhub.Hub) {
	// A token moves to the user who registers it.
	a.Register(t, 8, `{"platform":"apns","token":"`+testhub.APNSToken(1)+`"}`)
	if n, _ := byPlatform(b.DevicesOf(t, 7)); n["apns"] != 0 {
		t.Fatal("user 7 kept the token user 8 registered")
	}
	if ds := b.DevicesOf(t, 8); len(ds) != 1 || ds[0].Label != "" {
		t.Fatalf("user 8's devices: %+v", ds)
	}
	del := func(user int64, platform, token string) any {
		t.Helper()
		code, env := b.UserDo(t, http.MethodDelete, "/api/v1/push/devices", user, fmt.Sprintf(`{"platform":%q,"token":%q}`, platform, token))
		if code != 200 {
			t.Fatalf("DELETE: %d %+v", code, env)
		}
		return env.Result.(map[string]any)["unregistered"]
	}
	if del(7, "apns", testhub.APNSToken(1)) != false || del(8, "apns", testhub.APNSToken(1)) != true || del(8, "apns", testhub.APNSToken(1)) != false {
		t.Fatal("DELETE: another's token, one's own, one's own again: want false, true, false")
	}
	if v := testhub.MetricValue(t, b, `push_devices{platform="apns"}`); v != "0" { // b deleted it: a reads it within 15 s
		t.Fatalf("push_devices{platform=apns} = %s, want 0", v)
	}
	keys, _ := a.Redis.Do(t.Context(), a.Redis.B().Hlen().Key(push.DevicesKey(8)).Build()).AsInt64()
	if keys != 0 {
		t.Fatalf("user 8's devices hash holds %d after the delete", keys)
	}
}

// A refreshed token is the same phone, and a renewed subscription the same
// browser: consent, label and addedAt carry over to the new one (hardening
// V, 2: the register script deleted the replaced entry before reading it,
// so a phone the person turned off came back on).
func TestDevices_ARefreshedTokenKeepsConsentLabelAndAddedAt(t *testing.T) {
	ps := testpush.Start(t)
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), ps, nil)
	th.Register(t, 7, `{"platform":"fcm","token":"`+testhub.FCMToken(1)+`","label":"Pixel 9"}`)
	old := push.DeviceID("fcm", testhub.FCMToken(1))
	if code, _ := th.UserDo(t, http.MethodPatch, "/api/v1/push/devices/"+old, 7, `{"enabled":false}`); code != 200 {
		t.Fatalf("PATCH: %d", code)
	}
	before := th.DevicesOf(t, 7)[0]
	th.Register(t, 7, `{"platform":"fcm","token":"`+testhub.FCMToken(2)+`","replaces":"`+testhub.FCMToken(1)+`"}`)
	ds := th.DevicesOf(t, 7)
	if len(ds) != 1 || ds[0].ID != push.DeviceID("fcm", testhub.FCMToken(2)) || ds[0].Enabled || ds[0].Label != "Pixel 9" || !ds[0].AddedAt.Equal(before.AddedAt) {
		t.Fatalf("after the refresh: %+v, want the old device's consent (off), label and addedAt %v", ds, before.AddedAt)
	}

	first := ps.Subscription("/push/old")
	th.Subscribe(t, 7, first)
	var sub struct{ Endpoint string }
	if err := json.Unmarshal([]byte(first), &sub); err != nil {
		t.Fatal(err)
	}
	browser := webpush.DeviceID(sub.Endpoint)
	if code, _ := th.UserDo(t, http.MethodPatch, "/api/v1/push/devices/"+browser, 7, `{"enabled":false}`); code != 200 {
		t.Fatalf("PATCH a browser: %d", code)
	}
	renewed := ps.Subscription("/push/new")
	th.Subscribe(t, 7, strings.TrimSuffix(renewed, "}")+fmt.Sprintf(`,"replaces":%q}`, sub.Endpoint))
	var browsers []push.Device
	for _, d := range th.DevicesOf(t, 7) {
		if d.Platform == "webpush" {
			browsers = append(browsers, d)
		}
	}
	if len(browsers) != 1 || browsers[0].ID == browser || browsers[0].Enabled {
		t.Fatalf("browsers after the renewal: %+v, want one, the new one, still off", browsers)
	}
	if subs, _ := th.SubsOf(t, 7); len(subs) != 1 {
		t.Fatalf("subscriptions: %d, want the renewed one alone", len(subs))
	}
}

// Devices live DeviceTTL (270 days) after their last registration, and so
// do their owner keys (hardening V, 6: 270 hours passed every test).
func TestDevices_KeptForDeviceTTL(t *testing.T) {
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), testpush.Start(t), nil)
	th.Register(t, 7, `{"platform":"fcm","token":"`+testhub.FCMToken(1)+`"}`)
	const want = 270 * 24 * time.Hour // FCM's own
	for _, key := range []string{push.DevicesKey(7), push.DeviceOwnerKey("fcm", testhub.FCMToken(1))} {
		ms, err := th.Redis.Do(t.Context(), th.Redis.B().Pttl().Key(key).Build()).AsInt64()
		if err != nil || ms < (want-time.Hour).Milliseconds() || ms > want.Milliseconds() {
			t.Fatalf("%s lives %v, want %v", key, time.Duration(ms)*time.Millisecond, want)
		}
	}
}

// ownerKeys counts the owner keys of phones and browsers in th's Redis.
func ownerKeys(t *testing.T, th *testhub.Hub) (devices, browsers int) {
	t.Helper()
	for pattern, n := range map[string]*int{"push:device:owner:*": &devices, "push:owner:*": &browsers} {
		keys, err := th.Redis.Do(t.Context(), th.Redis.B().Keys().Pattern(pattern).Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		*n = len(keys)
	}
	return devices, browsers
}

// An owner key leaves with its entry (over the cap, replaced, deleted), and
// a user registers at most MaxNewTokens new tokens a day: past it 429 with
// Retry-After (hardening V, 16: 400 registrations by one user left 10
// devices and 390 owner keys).
func TestDevices_OwnerKeysLeaveWithTheirEntries(t *testing.T) {
	ps := testpush.Start(t)
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), ps, nil)
	for i := 1; i <= 25; i++ {
		th.Register(t, 7, `{"platform":"fcm","token":"`+testhub.FCMToken(i)+`"}`)
	}
	th.Register(t, 7, `{"platform":"fcm","token":"`+testhub.FCMToken(26)+`","replaces":"`+testhub.FCMToken(25)+`"}`)
	if code, _ := th.UserDo(t, http.MethodDelete, "/api/v1/push/devices", 7, `{"platform":"fcm","token":"`+testhub.FCMToken(24)+`"}`); code != 200 {
		t.Fatalf("DELETE: %d", code)
	}
	for i := 1; i <= 14; i++ {
		th.Subscribe(t, 7, ps.Subscription(fmt.Sprintf("/push/b%d", i)))
	}
	devs, browsers := ownerKeys(t, th)
	if held := len(th.DevicesOf(t, 7)); devs != 9 || browsers != 10 || held != 19 {
		t.Fatalf("owner keys: %d of phones, %d of browsers, for %d devices held; want 9 and 10", devs, browsers, held)
	}
	// 40 new tokens spent so far (26 phones, 14 browsers): the rest of the day's budget, then 429.
	for i := 41; i <= push.MaxNewTokens; i++ {
		th.Register(t, 7, `{"platform":"apns","token":"`+testhub.APNSToken(i)+`"}`)
	}
	th.Register(t, 7, `{"platform":"apns","token":"`+testhub.APNSToken(push.MaxNewTokens)+`"}`) // held already: not new
	req, _ := http.NewRequest(http.MethodPost, th.URL+"/api/v1/push/devices", strings.NewReader(`{"platform":"apns","token":"`+testhub.APNSToken(999)+`"}`))
	req.Header.Set("Authorization", "Bearer "+th.Token(t, 7))
	resp, err := testhub.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a new token past the day's budget: %d (Retry-After %q), want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n, _ := th.Redis.Do(t.Context(), th.Redis.B().Exists().Key(push.DeviceOwnerKey("apns", testhub.APNSToken(999))).Build()).AsInt64(); n != 0 {
		t.Fatal("a refused registration left an owner key")
	}
}

// One token, one user: two users registering it at the same moment leave
// it with one of them, and an APNs token in upper case is the same phone
// (hardening V, 17).
func TestDevices_OneTokenIsOneUsersUnderRaces(t *testing.T) {
	t.Parallel()
	th := testhub.StartPushHub(t, testredis.Start(t).Addr(), testpush.Start(t), nil)
	for i := range 10 {
		tok := testhub.FCMToken(100 + i)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, u := range []int64{int64(1000 + 2*i), int64(1001 + 2*i)} {
			hdr := map[string]string{"Authorization": "Bearer " + th.Token(t, u), "Content-Type": "application/json"}
			wg.Go(func() {
				code, env, err := th.TryDo(http.MethodPost, "/api/v1/push/devices", hdr, `{"platform":"fcm","token":"`+tok+`"}`)
				if err == nil && code != 200 {
					err = fmt.Errorf("register: %d %+v", code, env)
				}
				errs[j] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		a, b := len(th.DevicesOf(t, int64(1000+2*i))), len(th.DevicesOf(t, int64(1001+2*i)))
		if a+b != 1 {
			t.Fatalf("round %d: the token is held %d and %d times, want by one user once", i, a, b)
		}
	}
	th.Register(t, 7, `{"platform":"apns","token":"`+strings.ToUpper(testhub.APNSToken(0xabc))+`"}`)
	th.Register(t, 7, `{"platform":"apns","token":"`+testhub.APNSToken(0xabc)+`"}`)
	if ds := th.DevicesOf(t, 7); len(ds) != 1 || ds[0].ID != push.DeviceID("apns", testhub.APNSToken(0xabc)) {
		t.Fatalf("one APNs token in two cases: %+v, want one device", ds)
	}
}
