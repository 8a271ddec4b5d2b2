package apns

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"roomhub/hub/push"
)

// maxPayload is APNs' bound of an alert's payload; the body, then the
// title, are cut to fit.
const maxPayload = 4096

// payload is an alert push's JSON: what iOS shows, the badge, the thread,
// and what the app opens.
type payload struct {
	APS struct {
		Alert struct {
			Title string `json:"title"`
			Body  string `json:"body"`
		} `json:"alert"`
		Badge    *int   `json:"badge,omitempty"`
		Sound    string `json:"sound"`
		ThreadID string `json:"thread-id,omitempty"`
	} `json:"aps"`
	NotificationID string `json:"notificationId"`
	URL            string `json:"url,omitempty"` // none when the item has none
}

// payloadOf is f's payload (badge < 0: none), within maxPayload.
func payloadOf(f push.Face, badge int) []byte {
	build := func(f push.Face) []byte {
		var p payload
		p.APS.Alert.Title, p.APS.Alert.Body, p.APS.Sound, p.APS.ThreadID = f.Title, f.Body, "default", f.GroupKey
		if badge >= 0 {
			p.APS.Badge = &badge
		}
		p.NotificationID, p.URL = f.NotificationID, f.URL
		b, _ := json.Marshal(p)
		return b
	}
	return build(push.Fit(f, maxPayload, func(f push.Face) int { return len(build(f)) }))
}

// collapseID is a group key as apns-collapse-id: at most 64 bytes (a
// longer key is hashed to 64 hex digits, the same for the same key).
func collapseID(groupKey string) string {
	if len(groupKey) <= 64 {
		return groupKey
	}
	sum := sha256.Sum256([]byte(groupKey))
	return hex.EncodeToString(sum[:])
}

// reasons maps APNs' reasons onto seed 002's codes (DESIGN, Mobile push).
var reasons = map[string]string{
	"Unregistered": "UNREGISTERED", "BadDeviceToken": "UNREGISTERED", "DeviceTokenNotForTopic": "SENDER_ID_MISMATCH",
	"TooManyRequests": "QUOTA_EXCEEDED", "InternalServerError": "INTERNAL", "ServiceUnavailable": "UNAVAILABLE", "Shutdown": "UNAVAILABLE",
	"ExpiredProviderToken": "THIRD_PARTY_AUTH_ERROR", "InvalidProviderToken": "THIRD_PARTY_AUTH_ERROR",
}

// answerOf names APNs' answer: 200 sent; a reason mapped onto seed 002's
// codes (others APNS_<reason>), retried for QUOTA_EXCEEDED, INTERNAL,
// UNAVAILABLE and any 5xx (after Retry-After), the device gone for
// UNREGISTERED and SENDER_ID_MISMATCH. refused: the provider token was
// (ExpiredProviderToken, InvalidProviderToken).
func answerOf(status int, retryAfter string, body []byte, now time.Time) (a push.Answer, refused bool) {
	if status == http.StatusOK {
		return push.Answer{Sent: true}, false
	}
	var e struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(body, &e) // an answer without a reason is named by its status
	code, known := reasons[e.Reason]
	switch {
	case known:
	case push.CodeOK(e.Reason):
		code = "APNS_" + e.Reason
	default:
		code = "HTTP_" + strconv.Itoa(status)
	}
	a = push.Answer{Code: code, Retryable: push.Retried(code) || status >= 500, Gone: push.GoneCode(code)}
	if a.Retryable {
		a.RetryAfter = push.RetryAfter(retryAfter, now)
	}
	return a, e.Reason == "ExpiredProviderToken" || e.Reason == "InvalidProviderToken"
}
