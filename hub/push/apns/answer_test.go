package apns

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"roomhub/hub/push"
)

// APNs' reasons mapped onto seed 002's codes as DESIGN lists them; others
// APNS_<reason>, retried only on a 5xx; a refused provider token says so.
func TestAnswerOf_APNsReasons(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		status  int
		reason  string
		want    push.Answer
		refused bool
	}{
		{200, "", push.Answer{Sent: true}, false},
		{410, "Unregistered", push.Answer{Code: "UNREGISTERED", Gone: true}, false},
		{400, "BadDeviceToken", push.Answer{Code: "UNREGISTERED", Gone: true}, false},
		{400, "DeviceTokenNotForTopic", push.Answer{Code: "SENDER_ID_MISMATCH", Gone: true}, false},
		{429, "TooManyRequests", push.Answer{Code: "QUOTA_EXCEEDED", Retryable: true}, false},
		{500, "InternalServerError", push.Answer{Code: "INTERNAL", Retryable: true}, false},
		{503, "ServiceUnavailable", push.Answer{Code: "UNAVAILABLE", Retryable: true}, false},
		{503, "Shutdown", push.Answer{Code: "UNAVAILABLE", Retryable: true}, false},
		{403, "ExpiredProviderToken", push.Answer{Code: "THIRD_PARTY_AUTH_ERROR"}, true},
		{403, "InvalidProviderToken", push.Answer{Code: "THIRD_PARTY_AUTH_ERROR"}, true},
		{400, "BadExpirationDate", push.Answer{Code: "APNS_BadExpirationDate"}, false},
		{502, "", push.Answer{Code: "HTTP_502", Retryable: true}, false},
		{400, "<script>", push.Answer{Code: "HTTP_400"}, false},
	} {
		b, _ := json.Marshal(map[string]string{"reason": c.reason})
		if got, refused := answerOf(c.status, "", b, now); got != c.want || refused != c.refused {
			t.Errorf("%d %s: %+v %v, want %+v %v", c.status, c.reason, got, refused, c.want, c.refused)
		}
	}
}

// The payload fits 4 KB, the body cut first; a group's key over 64 bytes is
// a collapse id of 64 hex digits, the same for the same key.
func TestPayloadAndCollapseID(t *testing.T) {
	p := payloadOf(push.Face{Title: "T", Body: strings.Repeat("é", 5000), NotificationID: "1:1-0"}, 3)
	var got payload
	if err := json.Unmarshal(p, &got); err != nil || len(p) > maxPayload || !strings.HasSuffix(got.APS.Alert.Body, "…") || *got.APS.Badge != 3 {
		t.Fatalf("%d bytes, %v", len(p), err)
	}
	long := strings.Repeat("k", 65)
	if id := collapseID(long); len(id) != 64 || id != collapseID(long) || collapseID("short") != "short" {
		t.Fatalf("collapse ids: %q", id)
	}
}

// A payload carries "url" only when the item has one (issue 57, 6).
func TestPayloadOf_URLOnlyWhenTheItemHasOne(t *testing.T) {
	if p := string(payloadOf(push.Face{NotificationID: "1:1-0", Title: "t"}, -1)); strings.Contains(p, `"url"`) {
		t.Fatalf("without a url: %s", p)
	}
	if p := string(payloadOf(push.Face{NotificationID: "1:1-0", URL: "https://app.example/t/7"}, -1)); !strings.Contains(p, `"url":"https://app.example/t/7"`) {
		t.Fatalf("with a url: %s", p)
	}
}
