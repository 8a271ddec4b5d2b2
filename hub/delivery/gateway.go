package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"roomhub/hub"
	"roomhub/hub/push"
)

// gatewayClient posts hand-offs: each within timeout, redirects not
// followed (a 3xx is an answer, retried as REDIRECT: the internal key never
// goes elsewhere).
func gatewayClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// handoffBody is what the gateway receives.
type handoffBody struct {
	Channel       string            `json:"channel"`
	UserID        int64             `json:"userId"`
	Notifications []json.RawMessage `json:"notifications"`
	Attempt       int               `json:"attempt"`
}

// answer is how the gateway answered one hand-off.
type answer struct {
	sent       bool
	retryable  bool
	code       string        // the error code when not sent
	retryAfter time.Duration // the gateway's Retry-After, 0 when none
	skipped    string        // not handed off, and why (webpush: unsubscribed)
	wait       time.Time     // not tried (the channel's or the push service's slots were full, or it is paused): due again then, no attempt spent
}

// permanentCodes are the error codes a gateway may answer with that are
// never retried, whatever the status (push.Retried names those retried).
var permanentCodes = map[string]bool{"INVALID_ARGUMENT": true, "UNREGISTERED": true, "SENDER_ID_MISMATCH": true, "THIRD_PARTY_AUTH_ERROR": true}

// handOff posts one hand-off to the gateway and classifies the answer.
func (d *Delivery) handOff(ctx context.Context, idemKey string, body handoffBody) answer {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.cfg.SinkURL, bytes.NewReader(b))
	if err != nil {
		return answer{code: "NETWORK", retryable: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Internal-Key", d.coreCfg.InternalAPIKey)
	req.Header.Set("Idempotency-Key", idemKey)
	hub.InjectTrace(ctx, req.Header)
	start := time.Now()
	resp, err := d.client.Do(req)
	d.set.GetOrCreateHistogram(`delivery_sink_duration_seconds{channel="` + body.Channel + `"}`).UpdateDuration(start)
	if err != nil {
		var ne interface{ Timeout() bool }
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return answer{code: "TIMEOUT", retryable: true}
		}
		return answer{code: "NETWORK", retryable: true}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return classify(resp.StatusCode, raw, resp.Header.Get("Retry-After"), time.Now())
}

// classify reads a gateway's answer: 2xx is sent; a named permanent code or
// a 4xx other than 408 and 429 is permanent; a named retryable code, any
// 5xx, 408, 429 and a 3xx are retried.
func classify(status int, body []byte, retryAfter string, now time.Time) answer {
	if status >= 200 && status < 300 {
		return answer{sent: true}
	}
	a := answer{retryAfter: push.RetryAfter(retryAfter, now)}
	if status >= 300 && status < 400 {
		a.code, a.retryable = "REDIRECT", true
		return a
	}
	var e struct {
		ErrorCode string `json:"errorCode"`
	}
	if json.Unmarshal(body, &e) == nil && push.CodeOK(e.ErrorCode) {
		a.code = e.ErrorCode
	} else {
		a.code = "HTTP_" + strconv.Itoa(status)
	}
	switch {
	case permanentCodes[a.code]:
	case push.Retried(a.code), status >= 500, status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		a.retryable = true
	}
	return a
}

// maxBackoff bounds the wait between attempts.
const maxBackoff = 10 * time.Minute

// backoff is the wait after attempt (from 1) failed: first doubling to
// maxBackoff, ±20 % jitter, and at least what the gateway asked for.
func backoff(first time.Duration, attempt int, retryAfter time.Duration) time.Duration {
	w := first
	for i := 1; i < attempt && w < maxBackoff; i++ {
		w *= 2
	}
	w = min(w, maxBackoff)
	w = time.Duration(float64(w) * (0.8 + 0.4*rand.Float64()))
	return max(w, retryAfter)
}
