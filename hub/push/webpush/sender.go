package webpush

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
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
	gate    *gate

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

// What a push service's answer may cost: its headers, the part of its body
// read (the rest is dropped, and the answer counts as failed), and how
// long making the connection may take.
const (
	maxAnswerHeader = 8 << 10
	maxAnswerBody   = 4 << 10
	connectTimeout  = 3 * time.Second
)

// ErrAnswerTooLarge is a push service's answer over the bounds: a failed
// attempt, whatever its status.
var ErrAnswerTooLarge = errors.New("webpush: the push service's answer is over the bounds")

// NewSender is a Sender whose connections go only to public addresses
// (unless allowPrivate), follow no redirect and end within timeout. tlsConf
// (nil: the system's roots) is for tests that stand up a push service.
func NewSender(keys Keys, subject string, allowPrivate bool, timeout time.Duration, tlsConf *tls.Config) *Sender {
	d := &net.Dialer{Timeout: min(timeout, connectTimeout)}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error { return guard(address) }
	}
	tr := &http.Transport{
		Proxy:                  nil, // a push goes straight to the push service: no proxy may stand between the guard and it
		DialContext:            d.DialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    min(timeout, connectTimeout),
		ForceAttemptHTTP2:      true,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: maxAnswerHeader, // HTTP/2 too: its header list limit is taken from this
	}
	return &Sender{keys: keys, subject: subject, timeout: timeout, now: time.Now, tokens: map[string]token{},
		gate: newGate(MaxInFlight, MaxPerOrigin, time.Now),
		client: &http.Client{
			Transport:     tr,
			Timeout:       timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
}

// Close lets the idle connections go.
func (s *Sender) Close() { s.client.CloseIdleConnections() }

// defaultTTL is how long a push service keeps a push for an offline device.
const defaultTTL = 24 * time.Hour

// Push is one message: its plaintext and how the push service keeps it.
type Push struct {
	Payload []byte
	TTL     time.Duration // how long the push service keeps it for an offline device
	Urgency string        // very-low, low, normal or high
	Topic   string        // a newer push with the same topic replaces this one ("" none)
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

// failed says whether r counts against its origin's breaker: no answer,
// an answer over the bounds, 429 or 5xx.
func (r Result) failed() bool {
	return r.Status == 0 || r.Status == http.StatusTooManyRequests || r.Status >= 500 || errors.Is(r.Err, ErrAnswerTooLarge)
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
	wait, err := s.gate.enter(ctx, origin)
	switch {
	case err != nil:
		return Result{Err: err, Timeout: true}
	case !wait.IsZero():
		return Result{Wait: wait}
	}
	body, err := Encrypt(p.Payload, keys.P256dh, keys.Auth)
	if err != nil {
		s.gate.leave(origin, false) // the push service was never asked
		return Result{Err: err}
	}
	r := s.post(ctx, sub.Endpoint, auth, body, p)
	s.gate.leave(origin, r.failed())
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
	resp, err := s.client.Do(req)
	if err != nil {
		return noAnswer(err)
	}
	defer resp.Body.Close() // unread bytes are dropped with the connection, never read
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBody+1))
	switch {
	case n > maxAnswerBody:
		return Result{Err: ErrAnswerTooLarge}
	case err != nil:
		return noAnswer(err)
	}
	return Result{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
}

// noAnswer is the Result of a push whose answer did not come (in time, or
// whole) or came over the bounds.
func noAnswer(err error) Result {
	if headerTooLarge(err) {
		return Result{Err: ErrAnswerTooLarge}
	}
	var ne net.Error
	return Result{Err: err, Timeout: errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())}
}

// headerTooLarge says whether err is net/http's refusal of headers over
// MaxResponseHeaderBytes (HTTP/1.1 and HTTP/2 word it differently, and
// neither exports it).
func headerTooLarge(err error) bool {
	m := err.Error()
	return strings.Contains(m, "response headers exceeded") || strings.Contains(m, "header list larger than")
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
