package fcm_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"roomhub/hub/push"
	"roomhub/internal/testfcm"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// Every answer of DESIGN's table, through the hub to the stand-in FCM:
// the delivery's state and code, the device removed or kept, a retry
// after Retry-After; and a sent message's shape (the item's face, its
// data, Android's priority, TTL and collapse key, iOS's badge and thread).
func TestFCM_AnswersAndTheMessage(t *testing.T) {
	fs := testfcm.Start(t)
	th := testhub.StartFCMHub(t, testredis.Start(t).Addr(), fs, func(c *testhub.Configs) { c.Delivery.MaxAttempts = 3 })
	type want struct {
		state, code string
		attempts    int
		kept        bool
	}
	cases := map[int64]struct {
		script []testfcm.Answer
		want   want
	}{
		20: {nil, want{"sent", "", 1, true}},
		21: {[]testfcm.Answer{{Status: 404, ErrorCode: "UNREGISTERED"}}, want{"dead", "UNREGISTERED", 1, false}},
		22: {[]testfcm.Answer{{Status: 403, ErrorCode: "SENDER_ID_MISMATCH"}}, want{"dead", "SENDER_ID_MISMATCH", 1, false}},
		23: {[]testfcm.Answer{{Status: 400, ErrorCode: "INVALID_ARGUMENT"}}, want{"dead", "INVALID_ARGUMENT", 1, true}},
		24: {[]testfcm.Answer{{Status: 401, ErrorCode: "THIRD_PARTY_AUTH_ERROR"}}, want{"dead", "THIRD_PARTY_AUTH_ERROR", 1, true}},
		25: {[]testfcm.Answer{{Status: 429, ErrorCode: "QUOTA_EXCEEDED", RetryAfter: "1"}, {}}, want{"sent", "QUOTA_EXCEEDED", 2, true}},
		26: {[]testfcm.Answer{{Status: 503, ErrorCode: "UNAVAILABLE"}, {Status: 500, ErrorCode: "INTERNAL"}, {}}, want{"sent", "INTERNAL", 3, true}},
		27: {[]testfcm.Answer{{Status: 500, ErrorCode: "INTERNAL"}}, want{"dead", "INTERNAL", 3, true}},
	}
	for u, c := range cases {
		fs.Script(testhub.FCMToken(int(u)), c.script...)
		th.Register(t, u, fmt.Sprintf(`{"platform":"fcm","token":%q}`, testhub.FCMToken(int(u))))
	}
	// User 20 has three unread items when the third comes: the badge says 3.
	th.NotifyWith(t, 42, "", 20)
	th.NotifyWith(t, 42, "", 20)
	th.WaitDelivery(t, th.NotifyWith(t, 42, "", 20), 20, "fcm", "sent") // (settles the first two's too)
	nid := th.NotifyWith(t, 42, `"severity":"high","groupKey":"thread-7","data":{"title":"Ann replied","text":"Looks good","url":"https://app.example/t/7"}`,
		20, 21, 22, 23, 24, 25, 26, 27, 28)
	for u, c := range cases {
		r := th.WaitDelivery(t, nid, u, "fcm", c.want.state)
		if testhub.Str(r.LastErrorCode) != c.want.code || r.Attempts != c.want.attempts {
			t.Errorf("user %d: %+v, want %+v", u, r, c.want)
		}
		if at := r.LastErrorAttempt; c.want.code != "" && (at == nil || *at != c.want.attempts-map[bool]int{true: 1}[c.want.state == "sent"]) {
			t.Errorf("user %d: the error came from attempt %v, want the last failed one", u, at)
		}
		if _, kept := testhub.DeviceIDs(th.DevicesOf(t, u))[push.DeviceID("fcm", testhub.FCMToken(int(u)))]; kept != c.want.kept {
			t.Errorf("user %d: device kept %v, want %v", u, kept, c.want.kept)
		}
	}
	if r := th.WaitDelivery(t, nid, 28, "fcm", "skipped"); testhub.Str(r.Reason) != "unsubscribed" {
		t.Errorf("a user with no device: %+v", r)
	}
	var m *testfcm.Message
	for _, got := range fs.Messages() {
		if got.Token == testhub.FCMToken(20) && got.Data["notificationId"] == nid {
			m = &got
		}
	}
	if m == nil {
		t.Fatal("user 20's message was not taken")
	}
	if m.Notification["title"] != "Ann replied" || m.Notification["body"] != "Looks good" || m.Data["url"] != "https://app.example/t/7" ||
		m.Data["type"] != "comment.created" || m.Data["severity"] != "high" || m.Android.Priority != "HIGH" || m.Android.TTL != "86400s" ||
		m.Android.CollapseKey != "thread-7" || m.APNS.Headers["apns-priority"] != "10" || m.APNS.Payload.APS.ThreadID != "thread-7" ||
		m.APNS.Payload.APS.Badge == nil || *m.APNS.Payload.APS.Badge != 4 {
		t.Errorf("the message: %+v", *m)
	}
	if at := th.DevicesOf(t, 20)[0].LastSentAt; at == nil || time.Since(*at) > time.Minute {
		t.Errorf("lastSentAt after a push: %v", at)
	}
	if at := fs.Arrivals(testhub.FCMToken(25)); len(at) != 2 || at[1].Sub(at[0]) < time.Second {
		t.Errorf("QUOTA_EXCEEDED with Retry-After: 1, then 200: tried at %v, want the second a second after the first", at)
	}
	if v := testhub.MetricValue(t, th, `push_devices_removed_total{platform="fcm"}`); v != "2" {
		t.Errorf("push_devices_removed_total{platform=fcm} = %s, want 2", v)
	}
}

// An access token FCM refuses as expired is made again and the push sent
// once more at once: one attempt, two tries, a second grant. A refused key
// (an assertion the token endpoint refuses) is THIRD_PARTY_AUTH_ERROR.
func TestFCM_AnExpiredAccessTokenIsMadeAgainAtOnce(t *testing.T) {
	t.Parallel()
	fs := testfcm.Start(t)
	rs := testredis.Start(t)
	th := testhub.StartFCMHub(t, rs.Addr(), fs, nil)
	th.Register(t, 30, fmt.Sprintf(`{"platform":"fcm","token":%q}`, testhub.FCMToken(30)))
	th.WaitDelivery(t, th.NotifyWith(t, 42, "", 30), 30, "fcm", "sent")
	if fs.Grants() != 1 {
		t.Fatalf("%d grants for the first push, want 1", fs.Grants())
	}
	th.WaitDelivery(t, th.NotifyWith(t, 42, "", 30), 30, "fcm", "sent")
	if fs.Grants() != 1 {
		t.Fatalf("%d grants for two pushes, want 1: the token is kept", fs.Grants())
	}
	fs.ExpireTokens()
	nid := th.NotifyWith(t, 42, "", 30)
	if r := th.WaitDelivery(t, nid, 30, "fcm", "sent"); r.Attempts != 1 {
		t.Fatalf("after the token expired: %+v, want sent at the first attempt", r)
	}
	if fs.Grants() != 2 || fs.Refused() != 1 || fs.Tries(testhub.FCMToken(30)) != 3 {
		t.Fatalf("after the token expired: %d grants, %d refused, %d taken; want 2, 1, 3", fs.Grants(), fs.Refused(), fs.Tries(testhub.FCMToken(30)))
	}

	// A 401 about the device (its APNs credential at Firebase) keeps the
	// access token: the push is dead at once, no new token asked for
	// (hardening V, 19).
	th.Register(t, 32, fmt.Sprintf(`{"platform":"fcm","token":%q}`, testhub.FCMToken(32)))
	fs.Script(testhub.FCMToken(32), testfcm.Answer{Status: 401, ErrorCode: "THIRD_PARTY_AUTH_ERROR"})
	if r := th.WaitDelivery(t, th.NotifyWith(t, 42, "", 32), 32, "fcm", "dead"); testhub.Str(r.LastErrorCode) != "THIRD_PARTY_AUTH_ERROR" {
		t.Fatalf("a device's 401: %+v", r)
	}
	if fs.Grants() != 2 || fs.Tries(testhub.FCMToken(32)) != 1 {
		t.Fatalf("after a device's 401: %d grants, %d tries; want the token kept (2) and one try", fs.Grants(), fs.Tries(testhub.FCMToken(32)))
	}

	// A token is kept until 5 minutes before it expires: one that lives 4
	// minutes is made again for every push.
	fs.SetTokenLifetime(4 * time.Minute)
	fs.ExpireTokens()
	for range 2 {
		th.WaitDelivery(t, th.NotifyWith(t, 42, "", 30), 30, "fcm", "sent")
	}
	if fs.Grants() != 4 {
		t.Fatalf("%d grants after two pushes with 4-minute tokens, want 4", fs.Grants())
	}

	// Another key than the one FCM's token endpoint knows (a hub of its own:
	// the first would take the delivery).
	other := testfcm.Start(t)
	bad := testhub.StartFCMHub(t, testredis.Start(t).Addr(), fs, func(c *testhub.Configs) {
		c.FCM.Credentials = strings.Replace(other.Key(), other.URL, fs.URL, 1)
	})
	bad.Register(t, 31, fmt.Sprintf(`{"platform":"fcm","token":%q}`, testhub.FCMToken(31)))
	if r := bad.WaitDelivery(t, bad.NotifyWith(t, 42, "", 31), 31, "fcm", "dead"); testhub.Str(r.LastErrorCode) != "THIRD_PARTY_AUTH_ERROR" {
		t.Fatalf("a key the token endpoint refuses: %+v", r)
	}
}

// A device turned off gets nothing while the person's others do; a person
// looking at the app (a stream open) gets no push when the rule says
// onlyIfOffline.
func TestFCM_ConsentPerDeviceAndOnlyWhenNobodyLooks(t *testing.T) {
	t.Parallel()
	fs := testfcm.Start(t)
	th := testhub.StartFCMHub(t, testredis.Start(t).Addr(), fs, func(c *testhub.Configs) {
		c.Delivery.Rules = `{"comment.created":{"fcm":{"afterSecs":0,"onlyIfOffline":true}}}`
	})
	th.Register(t, 40, fmt.Sprintf(`{"platform":"fcm","token":%q,"label":"phone"}`, testhub.FCMToken(40)))
	th.Register(t, 40, fmt.Sprintf(`{"platform":"fcm","token":%q,"label":"tablet","enabled":false}`, testhub.FCMToken(41)))
	th.WaitDelivery(t, th.NotifyWith(t, 42, "", 40), 40, "fcm", "sent")
	if fs.Tries(testhub.FCMToken(40)) != 1 || fs.Tries(testhub.FCMToken(41)) != 0 {
		t.Fatalf("tries: enabled %d, disabled %d; want 1 and 0", fs.Tries(testhub.FCMToken(40)), fs.Tries(testhub.FCMToken(41)))
	}
	code, env := th.UserDo(t, http.MethodPatch, "/api/v1/push/devices/"+push.DeviceID("fcm", testhub.FCMToken(40)), 40, `{"enabled":false}`)
	if code != 200 {
		t.Fatalf("PATCH: %d %+v", code, env)
	}
	if r := th.WaitDelivery(t, th.NotifyWith(t, 42, "", 40), 40, "fcm", "skipped"); testhub.Str(r.Reason) != "unsubscribed" {
		t.Fatalf("every device off: %+v, want skipped unsubscribed", r)
	}
	th.UserDo(t, http.MethodPatch, "/api/v1/push/devices/"+push.DeviceID("fcm", testhub.FCMToken(40)), 40, `{"enabled":true}`)
	s := th.SettledUserStream(t, 40)
	defer s.Close()
	if r := th.WaitDelivery(t, th.NotifyWith(t, 42, "", 40), 40, "fcm", "skipped"); testhub.Str(r.Reason) != "online" {
		t.Fatalf("looking at the app: %+v, want skipped online", r)
	}
	if fs.Tries(testhub.FCMToken(40)) != 1 {
		t.Fatalf("%d tries, want still 1", fs.Tries(testhub.FCMToken(40)))
	}
}

// A phone's badge is the person's exact unread count at the push: after
// two of three items are read in another tab, the fourth's badge is 2.
func TestFCM_TheBadgeIsTheUnreadCount(t *testing.T) {
	t.Parallel()
	fs := testfcm.Start(t)
	th := testhub.StartFCMHub(t, testredis.Start(t).Addr(), fs, nil)
	th.Register(t, 45, fmt.Sprintf(`{"platform":"fcm","token":%q}`, testhub.FCMToken(45)))
	var ids []string
	for range 3 {
		nid := th.NotifyWith(t, 42, "", 45)
		th.WaitDelivery(t, nid, 45, "fcm", "sent")
		ids = append(ids, nid)
	}
	th.MarkRead(t, 45, ids[0])
	th.MarkRead(t, 45, ids[2])
	nid := th.NotifyWith(t, 42, "", 45)
	th.WaitDelivery(t, nid, 45, "fcm", "sent")
	var badges []int
	for _, m := range fs.Messages() {
		if b := m.APNS.Payload.APS.Badge; b != nil {
			badges = append(badges, *b)
		}
	}
	if fmt.Sprint(badges) != "[1 2 3 2]" {
		t.Fatalf("badges %v, want [1 2 3 2]", badges)
	}
}
