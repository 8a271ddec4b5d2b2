package apns_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"roomhub/hub/push"
	"roomhub/internal/testapns"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// Every APNs reason of DESIGN's table, through the hub to the stand-in
// (HTTP/2 only, the provider token checked): the delivery's state and
// code, the device removed or kept, a retry after Retry-After; a sent
// push's headers and payload; a sandbox device at the sandbox's host; a
// long text cut to APNs' 4 KB.
func TestAPNs_AnswersAndThePush(t *testing.T) {
	t.Parallel()
	as := testapns.Start(t)
	th := testhub.StartAPNSHub(t, testredis.Start(t).Addr(), as, func(c *testhub.Configs) { c.Delivery.MaxAttempts = 3 })
	type want struct {
		state, code string
		attempts    int
		kept        bool
	}
	cases := map[int64]struct {
		script []testapns.Answer
		want   want
	}{
		50: {nil, want{"sent", "", 1, true}},
		51: {[]testapns.Answer{{Status: 410, Reason: "Unregistered"}}, want{"dead", "UNREGISTERED", 1, false}},
		52: {[]testapns.Answer{{Status: 400, Reason: "BadDeviceToken"}}, want{"dead", "UNREGISTERED", 1, false}},
		53: {[]testapns.Answer{{Status: 400, Reason: "DeviceTokenNotForTopic"}}, want{"dead", "SENDER_ID_MISMATCH", 1, false}},
		54: {[]testapns.Answer{{Status: 429, Reason: "TooManyRequests", RetryAfter: "1"}, {}}, want{"sent", "QUOTA_EXCEEDED", 2, true}},
		55: {[]testapns.Answer{{Status: 500, Reason: "InternalServerError"}, {Status: 503, Reason: "ServiceUnavailable"}, {}}, want{"sent", "UNAVAILABLE", 3, true}},
		56: {[]testapns.Answer{{Status: 503, Reason: "Shutdown"}}, want{"dead", "UNAVAILABLE", 3, true}},
		57: {[]testapns.Answer{{Status: 400, Reason: "BadExpirationDate"}}, want{"dead", "APNS_BadExpirationDate", 1, true}},
		58: {nil, want{"sent", "", 1, true}},
	}
	for u, c := range cases {
		as.Script(testhub.APNSToken(int(u)), c.script...)
		env := ""
		if u == 58 {
			env = `,"environment":"sandbox"`
		}
		th.Register(t, u, fmt.Sprintf(`{"platform":"apns","token":%q%s}`, testhub.APNSToken(int(u)), env))
	}
	th.WaitDelivery(t, th.NotifyWith(t, 42, "", 50), 50, "apns", "sent")
	nid := th.NotifyWith(t, 42, `"severity":"high","groupKey":"thread-7","data":{"title":"Ann replied","text":"Looks good","url":"https://app.example/t/7"}`,
		50, 51, 52, 53, 54, 55, 56, 57, 58, 59)
	for u, c := range cases {
		r := th.WaitDelivery(t, nid, u, "apns", c.want.state)
		if testhub.Str(r.LastErrorCode) != c.want.code || r.Attempts != c.want.attempts {
			t.Errorf("user %d: %+v, want %+v", u, r, c.want)
		}
		if _, kept := testhub.DeviceIDs(th.DevicesOf(t, u))[push.DeviceID("apns", testhub.APNSToken(int(u)))]; kept != c.want.kept {
			t.Errorf("user %d: device kept %v, want %v", u, kept, c.want.kept)
		}
	}
	if r := th.WaitDelivery(t, nid, 59, "apns", "skipped"); testhub.Str(r.Reason) != "unsubscribed" {
		t.Errorf("a user with no device: %+v", r)
	}
	if at := as.Arrivals(testhub.APNSToken(54)); len(at) != 2 || at[1].Sub(at[0]) < time.Second {
		t.Errorf("TooManyRequests with Retry-After: 1, then 200: tried at %v", at)
	}
	n := notificationOf(t, as, testhub.APNSToken(50), nid)
	p, h := n.Payload, n.Header
	exp, _ := strconv.ParseInt(h.Get("apns-expiration"), 10, 64)
	if p.APS.Alert.Title != "Ann replied" || p.APS.Alert.Body != "Looks good" || p.APS.Badge == nil || *p.APS.Badge != 2 ||
		p.APS.Sound != "default" || p.APS.ThreadID != "thread-7" || p.NotificationID != nid || p.URL != "https://app.example/t/7" ||
		h.Get("apns-push-type") != "alert" || h.Get("apns-priority") != "10" || h.Get("apns-collapse-id") != "thread-7" ||
		time.Until(time.Unix(exp, 0)) < 23*time.Hour || n.Sandbox {
		t.Errorf("the push: %+v", n)
	}
	if !notificationOf(t, as, testhub.APNSToken(58), nid).Sandbox {
		t.Error("a sandbox device's push went to the production host")
	}
	// A low one is sent when the phone likes (priority 5); a long text is cut to fit 4 KB.
	low := th.NotifyWith(t, 42, `"severity":"low","data":{"title":"T","text":"`+strings.Repeat("é", 5000)+`"}`, 50)
	th.WaitDelivery(t, low, 50, "apns", "sent")
	if n := notificationOf(t, as, testhub.APNSToken(50), low); n.Header.Get("apns-priority") != "5" || n.Size > 4096 ||
		!strings.HasSuffix(n.Payload.APS.Alert.Body, "…") || len(n.Payload.APS.Alert.Body) < 3000 {
		t.Errorf("a low push with a long text: priority %s, %d bytes, body of %d", n.Header.Get("apns-priority"), n.Size, len(n.Payload.APS.Alert.Body))
	}
}

// notificationOf is the push the stand-in took for token and nid.
func notificationOf(t *testing.T, as *testapns.Service, token, nid string) testapns.Notification {
	t.Helper()
	for _, n := range as.Notifications() {
		if n.Token == token && n.Payload.NotificationID == nid {
			return n
		}
	}
	t.Fatalf("no push of %s to %.8s… taken", nid, token)
	return testapns.Notification{}
}

// A provider token APNs calls expired is made again and the push sent once
// more at once (one attempt); the token is otherwise kept. A key APNs does
// not know is THIRD_PARTY_AUTH_ERROR after one new token.
func TestAPNs_AnExpiredProviderTokenIsMadeAgainAtOnce(t *testing.T) {
	t.Parallel()
	as := testapns.Start(t)
	th := testhub.StartAPNSHub(t, testredis.Start(t).Addr(), as, nil)
	th.Register(t, 60, fmt.Sprintf(`{"platform":"apns","token":%q}`, testhub.APNSToken(60)))
	th.WaitDelivery(t, th.NotifyWith(t, 42, "", 60), 60, "apns", "sent")
	th.WaitDelivery(t, th.NotifyWith(t, 42, "", 60), 60, "apns", "sent")
	if as.Tokens() != 1 {
		t.Fatalf("%d provider tokens for two pushes, want 1", as.Tokens())
	}
	as.ExpireTokens()
	if r := th.WaitDelivery(t, th.NotifyWith(t, 42, "", 60), 60, "apns", "sent"); r.Attempts != 1 {
		t.Fatalf("after the token expired: %+v, want sent at the first attempt", r)
	}
	if as.Tokens() != 2 || as.Refused() != 1 {
		t.Fatalf("after the token expired: %d tokens, %d refused; want 2 and 1", as.Tokens(), as.Refused())
	}

	other := testapns.Start(t)
	bad := testhub.StartAPNSHub(t, testredis.Start(t).Addr(), as, func(c *testhub.Configs) { c.APNS.PrivateKey = other.Key() })
	bad.Register(t, 61, fmt.Sprintf(`{"platform":"apns","token":%q}`, testhub.APNSToken(61)))
	before := as.Refused()
	if r := bad.WaitDelivery(t, bad.NotifyWith(t, 42, "", 61), 61, "apns", "dead"); testhub.Str(r.LastErrorCode) != "THIRD_PARTY_AUTH_ERROR" {
		t.Fatalf("a key APNs does not know: %+v", r)
	}
	if n := as.Refused() - before; n != 2 {
		t.Fatalf("the first refused push was sent %d times, want twice (a new token once)", n)
	}
	// Within 20 minutes of that early renewal there is no new token to try:
	// the push is not sent again with the one just refused (hardening V, 4).
	if r := bad.WaitDelivery(t, bad.NotifyWith(t, 42, "", 61), 61, "apns", "dead"); testhub.Str(r.LastErrorCode) != "THIRD_PARTY_AUTH_ERROR" || r.Attempts != 1 {
		t.Fatalf("a second push with the key APNs does not know: %+v, want dead at its first attempt", r)
	}
	if n := as.Refused() - before; n != 3 {
		t.Fatalf("the second refused push was sent %d times, want once (no new token: no second try)", n-2)
	}
}
