package delivery

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"roomhub/hub/push/webpush"
)

// Pusher is what the webpush channel needs: a user's subscriptions, one
// push to one of them, and forgetting one the push service says is gone.
// Nil: the channel is off.
type Pusher interface {
	Subscriptions(ctx context.Context, user int64) ([]webpush.Subscription, error)
	Send(ctx context.Context, sub webpush.Subscription, p webpush.Push) webpush.Result
	Forget(ctx context.Context, user int64, endpoint string) error
}

// pushOff is the webpush channel's hand-off: the push service instead of
// the gateway. Every one of the user's subscriptions (each browser or
// device) gets the push; the delivery is sent when any took it. A user with none is skipped
// (unsubscribed). A subscription the push service says is gone (404, 410)
// is forgotten; when none is left the delivery is dead (UNREGISTERED). 413
// is dead (PAYLOAD_TOO_LARGE); 429, 5xx, 408, a redirect, a timeout, no
// answer or one over the bounds are retried, with the longest Retry-After.
// Pushes the sender did not try (their push service is paused or busy)
// wait without spending an attempt, when nothing was sent or failed.
func (d *Delivery) pushOff(ctx context.Context, user int64, h handoff) answer {
	subs, err := d.Pusher.Subscriptions(ctx, user)
	if err != nil {
		return answer{code: "INTERNAL", retryable: true}
	}
	if len(subs) == 0 {
		return answer{skipped: "unsubscribed"}
	}
	p, _, ok := webpush.Of(user, h.items)
	if !ok {
		return answer{code: "INVALID_ARGUMENT"}
	}
	// Every device at once: a slow push service does not hold the others
	// (each push is bounded by the hand-off's time limit).
	start := time.Now()
	answers := make([]answer, len(subs))
	var wg sync.WaitGroup
	for i, sub := range subs {
		wg.Go(func() { answers[i] = classifyPush(d.Pusher.Send(ctx, sub, p), time.Now()) })
	}
	wg.Wait()
	var retry, permanent, wait answer
	sent := false
	for i, a := range answers {
		sub := subs[i]
		switch {
		case a.sent:
			sent = true
		case !a.wait.IsZero():
			if a.wait.After(wait.wait) {
				wait = a
			}
		case a.code == "UNREGISTERED":
			if err := d.Pusher.Forget(ctx, user, sub.Endpoint); err != nil {
				d.log.WarnContext(ctx, "forgetting a gone push subscription", "user", user, "err", err)
			}
		case a.retryable:
			if retry.code == "" || a.retryAfter > retry.retryAfter {
				retry = a
			}
		default:
			if permanent.code == "" {
				permanent = a
			}
		}
	}
	d.set.GetOrCreateHistogram(`delivery_sink_duration_seconds{channel="webpush"}`).UpdateDuration(start)
	switch {
	case sent:
		return answer{sent: true}
	case retry.code != "":
		return retry
	case !wait.wait.IsZero():
		return wait
	case permanent.code != "":
		return permanent
	}
	return answer{code: "UNREGISTERED"} // every one was gone
}

// classifyPush reads one push service's answer.
func classifyPush(r webpush.Result, now time.Time) answer {
	switch {
	case !r.Wait.IsZero():
		return answer{wait: r.Wait}
	case errors.Is(r.Err, webpush.ErrAnswerTooLarge):
		return answer{code: "ANSWER_TOO_LARGE", retryable: true}
	case r.Err != nil && r.Status == 0 && r.Timeout:
		return answer{code: "TIMEOUT", retryable: true}
	case r.Err != nil && r.Status == 0:
		return answer{code: "NETWORK", retryable: true}
	case r.Status >= 200 && r.Status < 300:
		return answer{sent: true}
	case r.Status == http.StatusNotFound || r.Status == http.StatusGone:
		return answer{code: "UNREGISTERED"}
	case r.Status == http.StatusRequestEntityTooLarge:
		return answer{code: "PAYLOAD_TOO_LARGE"}
	}
	a := answer{retryAfter: parseRetryAfter(r.RetryAfter, now), code: "HTTP_" + strconv.Itoa(r.Status)}
	switch {
	case r.Status >= 300 && r.Status < 400:
		a.code, a.retryable = "REDIRECT", true
	case r.Status >= 500, r.Status == http.StatusTooManyRequests, r.Status == http.StatusRequestTimeout:
		a.retryable = true
	}
	return a
}
