package webpush

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"net/http"
	"net/url"
	"roomhub/hub/push"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sender sends pushes signed with the hub's VAPID keys.
type Sender struct {
	keys    Keys
	subject string
	client  *http.Client
	timeout time.Duration
	now     func() time.Time
	gate    *push.Gate

	mu     sync.Mutex
	tokens map[string]token // by push service origin: one signature serves many pushes
}

// token is a signed Authorization header and when it was made.
type token struct {
	header string
	made   time.Time
}

// tokenReuse is how long a token serves pushes to one origin: well within
// its 12 hours, so a push service never sees one about to expire.
const tokenReuse = time.Hour

// ErrAnswerTooLarge is a push service's answer over the bounds
// (push.MaxAnswerHeader, push.MaxAnswerBody): a failed attempt, whatever its status.
var ErrAnswerTooLarge = push.ErrAnswerTooLarge

// NewSender is a Sender whose connections go only to public addresses
// (unless allowPrivate), follow no redirect and end within timeout. tlsConf
// (nil: the system's roots) is for tests that stand up a push service.
func NewSender(keys Keys, subject string, allowPrivate bool, timeout time.Duration, tlsConf *tls.Config) *Sender {
	var control func(string, string, syscall.RawConn) error
	if !allowPrivate {
		control = func(_, address string, _ syscall.RawConn) error { return guard(address) }
	}
	return &Sender{keys: keys, subject: subject, timeout: timeout, now: time.Now, tokens: map[string]token{},
		gate:   push.NewGate(push.MaxInFlight, push.MaxPerOrigin, time.Now),
		client: push.NewClient(timeout, tlsConf, control)}
}

// Close lets the idle connections go.
func (s *Sender) Close() { s.client.CloseIdleConnections() }

// Push is one message: its plaintext and how the push service keeps it.
type Push struct {
	Payload []byte
	TTL     time.Duration // how long the push service keeps it for an offline device
	Urgency string        // very-low, low, normal or high
	Topic   string        // a newer push with the same topic replaces this one ("" none)
	User    int64         // whose it is: the breaker counts one person's refused pushes once
	Share   bool          // the hand-off's own place: sent even when the instance's slots are all held
}

// Result is a push service's answer: its status (0 when none came), its
// Retry-After, and the error when there was no answer. Wait, when set,
// says the push was not tried (its origin is paused or busy) and when to
// try again: not an attempt.
type Result struct {
	Status     int
	RetryAfter string
	Err        error
	Timeout    bool
	Wait       time.Time
}

// unanswered says whether r is no answer (in time, or whole) or one over
// the bounds: what always counts against its origin's breaker.
func (r Result) unanswered() bool { return r.Status == 0 || errors.Is(r.Err, ErrAnswerTooLarge) }

// refused says whether r is a 429 or 5xx: about one subscription, counted
// against the breaker once a person.
func (r Result) refused() bool { return r.Status == http.StatusTooManyRequests || r.Status >= 500 }

// Answer is r in seed 002's words: 2xx sent; 404 and 410 gone
// (UNREGISTERED); 413 PAYLOAD_TOO_LARGE; 429, 5xx, 408, a redirect, a
// timeout, no answer or one over the bounds retried (with Retry-After);
// other statuses HTTP_<status>, permanent.
func (r Result) Answer(now time.Time) push.Answer {
	switch {
	case !r.Wait.IsZero():
		return push.Answer{Wait: r.Wait}
	case errors.Is(r.Err, ErrAnswerTooLarge):
		return push.Answer{Code: "ANSWER_TOO_LARGE", Retryable: true}
	case r.Err != nil && r.Status == 0 && r.Timeout:
		return push.Answer{Code: "TIMEOUT", Retryable: true}
	case r.Err != nil && r.Status == 0:
		return push.Answer{Code: "NETWORK", Retryable: true}
	case r.Status >= 200 && r.Status < 300:
		return push.Answer{Sent: true}
	case r.Status == http.StatusNotFound || r.Status == http.StatusGone:
		return push.Answer{Code: "UNREGISTERED", Gone: true}
	case r.Status == http.StatusRequestEntityTooLarge:
		return push.Answer{Code: "PAYLOAD_TOO_LARGE"}
	}
	a := push.Answer{RetryAfter: push.RetryAfter(r.RetryAfter, now), Code: "HTTP_" + strconv.Itoa(r.Status)}
	switch {
	case r.Status >= 300 && r.Status < 400:
		a.Code, a.Retryable = "REDIRECT", true
	case r.Status >= 500, r.Status == http.StatusTooManyRequests, r.Status == http.StatusRequestTimeout:
		a.Retryable = true
	}
	return a
}

// Send encrypts p for sub and posts it to the subscription's endpoint,
// within the instance's and the origin's bounds.
func (s *Sender) Send(ctx context.Context, sub Subscription, p Push) Result {
	keys, err := sub.Decode()
	if err != nil {
		return Result{Err: err}
	}
	origin, auth, err := s.authorization(sub.Endpoint)
	if err != nil {
		return Result{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// The gate first: a push its origin cannot take now costs no sealing.
	pass, wait := s.gate.Enter(origin, p.Share)
	if !wait.IsZero() {
		return Result{Wait: wait}
	}
	body, err := Encrypt(p.Payload, keys.P256dh, keys.Auth)
	if err != nil {
		s.gate.Leave(pass, false, false, "") // the push service was never asked
		return Result{Err: err}
	}
	r := s.post(ctx, sub.Endpoint, auth, body, p)
	s.gate.Leave(pass, r.unanswered(), r.refused(), strconv.FormatInt(p.User, 10))
	return r
}

// post makes one push's request and reads its answer within the bounds.
func (s *Sender) post(ctx context.Context, endpoint, auth string, body []byte, p Push) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return Result{Err: err}
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Encoding", "aes128gcm")
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("TTL", strconv.Itoa(int(p.TTL.Seconds())))
	if p.Urgency != "" {
		req.Header.Set("Urgency", p.Urgency)
	}
	if p.Topic != "" {
		req.Header.Set("Topic", p.Topic)
	}
	resp, _, err := push.Exchange(s.client, req)
	if err != nil {
		return noAnswer(err)
	}
	return Result{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
}

// noAnswer is the Result of a push whose answer did not come (in time, or
// whole) or came over the bounds.
func noAnswer(err error) Result {
	if push.IsTooLarge(err) {
		return Result{Err: ErrAnswerTooLarge}
	}
	return Result{Err: err, Timeout: push.TimedOut(err)}
}

// authorization is the header for a push to endpoint: the origin's token
// while it is younger than tokenReuse, else a new one. The cache holds one
// entry per push service origin (a handful: FCM, Mozilla's, Apple's…), and
// entries past their use are dropped as new ones are made.
func (s *Sender) authorization(endpoint string) (origin, header string, err error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", "", errors.New("webpush: an endpoint without an origin")
	}
	origin, now := u.Scheme+"://"+strings.ToLower(u.Host), s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[origin]; ok && now.Sub(t.made) < tokenReuse {
		return origin, t.header, nil
	}
	h, err := s.keys.Authorization(endpoint, s.subject, now)
	if err != nil {
		return "", "", err
	}
	for o, t := range s.tokens {
		if now.Sub(t.made) >= tokenReuse {
			delete(s.tokens, o)
		}
	}
	s.tokens[origin] = token{header: h, made: now}
	return origin, h, nil
}

// Topic is a push Topic for a group key: at most 32 characters of base64url
// (RFC 8030 §5.4), the same for the same key.
func Topic(groupKey string) string {
	if groupKey == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(groupKey))
	return b64.EncodeToString(sum[:])[:32]
}

// Urgency is a severity's push urgency: critical is high, low is low, the
// rest normal.
func Urgency(severity string) string {
	switch severity {
	case "critical":
		return "high"
	case "low":
		return "low"
	}
	return "normal"
}
