package fcm

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"roomhub/hub/push"
)

// fcmError is an error answer of FCM HTTP v1: a google.rpc.Status whose
// details carry FCM's errorCode.
type fcmError struct {
	Error struct {
		Status  string `json:"status"`
		Details []struct {
			Type      string `json:"@type"`
			ErrorCode string `json:"errorCode"`
		} `json:"details"`
	} `json:"error"`
}

// statusCodes names an answer without FCM's errorCode by its status, as
// FCM's documentation pairs them.
var statusCodes = map[string]string{
	"INVALID_ARGUMENT": "INVALID_ARGUMENT", "NOT_FOUND": "UNREGISTERED", "PERMISSION_DENIED": "SENDER_ID_MISMATCH",
	"RESOURCE_EXHAUSTED": "QUOTA_EXCEEDED", "UNAVAILABLE": "UNAVAILABLE", "INTERNAL": "INTERNAL", "UNAUTHENTICATED": "UNAUTHENTICATED",
}

// answerOf names FCM's answer: 2xx sent; else FCM's errorCode (or its
// status's), retried for INTERNAL, UNAVAILABLE, QUOTA_EXCEEDED, 5xx and
// 429 (after Retry-After), the device gone for UNREGISTERED and
// SENDER_ID_MISMATCH, the rest permanent.
func answerOf(status int, retryAfter string, body []byte, now time.Time) push.Answer {
	if status >= 200 && status < 300 {
		return push.Answer{Sent: true}
	}
	var e fcmError
	_ = json.Unmarshal(body, &e) // an answer that is no FCM error is named by its status
	code := statusCodes[e.Error.Status]
	for _, d := range e.Error.Details {
		if push.CodeOK(d.ErrorCode) {
			code = d.ErrorCode
		}
	}
	switch {
	case code != "":
	case status == http.StatusTooManyRequests:
		code = "QUOTA_EXCEEDED"
	case status >= 500:
		code = "INTERNAL"
	default:
		code = "HTTP_" + strconv.Itoa(status)
	}
	a := push.Answer{Code: code, Retryable: push.Retried(code), Gone: push.GoneCode(code)}
	if a.Retryable {
		a.RetryAfter = push.RetryAfter(retryAfter, now)
	}
	return a
}
