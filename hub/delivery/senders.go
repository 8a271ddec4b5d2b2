package delivery

import (
	"context"
	"encoding/json"
	"time"

	"roomhub/hub/push"
)

// Sender is a channel the hub sends itself (webpush, fcm, apns): it pushes
// a hand-off's items to each of the user's enabled devices of its platform
// at once, removes those the service says are gone, and answers each push.
// No answer: the user has no device there. An error: their devices could
// not be read (retried).
type Sender interface {
	Push(ctx context.Context, user int64, items []json.RawMessage) ([]push.Answer, error)
}

// pushOff is the hand-off of a channel the hub sends itself: its Sender
// instead of the gateway. The delivery is sent when any device took it; a
// user with none is skipped (unsubscribed). Otherwise the answer retried
// soonest wins: a retryable one (with the longest Retry-After), then one
// not tried (its service paused or busy: due again without spending an
// attempt), then a permanent one; when every device was gone, the gone
// one's code (UNREGISTERED, SENDER_ID_MISMATCH).
func (d *Delivery) pushOff(ctx context.Context, user int64, h handoff, s Sender) answer {
	start := time.Now()
	answers, err := s.Push(ctx, user, h.items)
	d.set.GetOrCreateHistogram(`delivery_sink_duration_seconds{channel="` + h.channel + `"}`).UpdateDuration(start)
	if err != nil {
		d.log.WarnContext(ctx, "reading a user's devices", "channel", h.channel, "user", user, "err", err)
		return answer{code: "INTERNAL", retryable: true}
	}
	if len(answers) == 0 {
		return answer{skipped: "unsubscribed"}
	}
	var retry, wait, permanent, gone *push.Answer
	for i := range answers {
		a := &answers[i]
		switch {
		case a.Sent:
			return answer{sent: true}
		case !a.Wait.IsZero():
			if wait == nil || a.Wait.After(wait.Wait) {
				wait = a
			}
		case a.Gone:
			gone = cmpOr(gone, a)
		case a.Retryable:
			if retry == nil || a.RetryAfter > retry.RetryAfter {
				retry = a
			}
		default:
			permanent = cmpOr(permanent, a)
		}
	}
	switch {
	case retry != nil:
		return answer{code: retry.Code, retryable: true, retryAfter: retry.RetryAfter}
	case wait != nil:
		return answer{wait: wait.Wait}
	case permanent != nil:
		return answer{code: permanent.Code}
	}
	return answer{code: gone.Code}
}

// cmpOr is a unless it is nil, then b: the first one found.
func cmpOr(a, b *push.Answer) *push.Answer {
	if a != nil {
		return a
	}
	return b
}
