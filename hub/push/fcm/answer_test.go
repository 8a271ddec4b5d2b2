package fcm

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"roomhub/hub/push"
)

// FCM's answers in seed 002's words: its errorCode as given (a code
// outside the bounds named by the status instead), the status's when it
// gives none; retried, gone and permanent as DESIGN says; Retry-After
// only on what is retried.
func TestAnswerOf_FCMsAnswers(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := func(status, code string) []byte {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"status": status,
			"details": []map[string]string{{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}}}})
		return b
	}
	for _, c := range []struct {
		status     int
		body       []byte
		retryAfter string
		want       push.Answer
	}{
		{200, []byte(`{"name":"x"}`), "", push.Answer{Sent: true}},
		{404, body("NOT_FOUND", "UNREGISTERED"), "", push.Answer{Code: "UNREGISTERED", Gone: true}},
		{403, body("PERMISSION_DENIED", "SENDER_ID_MISMATCH"), "", push.Answer{Code: "SENDER_ID_MISMATCH", Gone: true}},
		{429, body("RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"), "7", push.Answer{Code: "QUOTA_EXCEEDED", Retryable: true, RetryAfter: 7 * time.Second}},
		{503, body("UNAVAILABLE", ""), "", push.Answer{Code: "UNAVAILABLE", Retryable: true}},
		{500, []byte("not json"), "", push.Answer{Code: "INTERNAL", Retryable: true}},
		{429, nil, "", push.Answer{Code: "QUOTA_EXCEEDED", Retryable: true}},
		{400, body("INVALID_ARGUMENT", "INVALID_ARGUMENT"), "9", push.Answer{Code: "INVALID_ARGUMENT"}},
		{401, body("UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"), "", push.Answer{Code: "THIRD_PARTY_AUTH_ERROR"}},
		{404, body("NOT_FOUND", strings.Repeat("X", 65)), "", push.Answer{Code: "UNREGISTERED", Gone: true}}, // an unbounded code: the status's
		{418, nil, "", push.Answer{Code: "HTTP_418"}},
	} {
		if got := answerOf(c.status, c.retryAfter, c.body, now); got != c.want {
			t.Errorf("%d %s: %+v, want %+v", c.status, c.body, got, c.want)
		}
	}
}

// A message: the face, the data, Android's priority and TTL by severity
// and expiry, iOS's badge only when known; a long body cut to fit.
func TestMessageOf_TheFaceAndItsFit(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := push.Face{NotificationID: "42:1-0", EventType: "comment.created", Title: "T", Body: strings.Repeat("é", 4000), Severity: "low",
		ExpiresAt: now.Add(90 * time.Second)}
	m := messageOf("tok", f, -1, now)
	b, _ := json.Marshal(m)
	mm := m.Message
	if len(b) > maxMessage || !strings.HasSuffix(mm.Notification.Body, "…") || mm.Android.Priority != "NORMAL" || mm.Android.TTL != "90s" ||
		mm.APNS.Headers["apns-priority"] != "5" || mm.APNS.Payload.APS.Badge != nil || mm.Data["notificationId"] != "42:1-0" {
		t.Fatalf("%d bytes: %+v", len(b), mm)
	}
	if mm := messageOf("tok", push.Face{Severity: "critical"}, 0, now).Message; mm.Android.Priority != "HIGH" || mm.APNS.Payload.APS.Badge == nil {
		t.Fatalf("critical with a zero badge: %+v", mm)
	}
}

// A message carries "url" only when the item has one (issue 57, 6).
func TestBuild_URLOnlyWhenTheItemHasOne(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	if m := build("tok", push.Face{NotificationID: "1:1-0", Title: "t"}, -1, now); strings.Contains(fmt.Sprint(m.Message.Data), "url") {
		t.Fatalf("without a url: %v", m.Message.Data)
	}
	if m := build("tok", push.Face{NotificationID: "1:1-0", URL: "https://app.example/t/7"}, -1, now); m.Message.Data["url"] != "https://app.example/t/7" {
		t.Fatalf("with a url: %v", m.Message.Data)
	}
}
