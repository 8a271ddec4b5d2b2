package push

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Answer is how one push to one device went, in seed 002's words.
type Answer struct {
	Sent bool
	// Code says why it was not sent: FCM's MessagingErrorCode (APNs'
	// reasons mapped onto the same names), or the hub's own: TIMEOUT,
	// NETWORK, ANSWER_TOO_LARGE, HTTP_<status>.
	Code      string
	Retryable bool
	// RetryAfter is the service's Retry-After (0: none).
	RetryAfter time.Duration
	// Wait, when set, says the push was not tried (its service is paused
	// or busy) and when to try again: not an attempt.
	Wait time.Time
	// Gone says the device is gone (UNREGISTERED, SENDER_ID_MISMATCH) and
	// the channel removed it.
	Gone bool
}

// Unanswered says whether the push got no answer (in time, or whole) or
// one over the bounds: NoAnswer's codes, what counts against a service's
// breaker.
func (a Answer) Unanswered() bool {
	return a.Code == "TIMEOUT" || a.Code == "NETWORK" || a.Code == "ANSWER_TOO_LARGE"
}

// Each sends to every target at once (a slow device does not hold the
// others) and answers in the targets' order.
func Each[T any](targets []T, send func(T) Answer) []Answer {
	answers := make([]Answer, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { answers[i] = send(t) })
	}
	wg.Wait()
	return answers
}

// What a push service's answer may cost: its headers, the part of its body
// read (an answer with more counts as failed), and how long making the
// connection may take.
const (
	MaxAnswerHeader = 8 << 10
	MaxAnswerBody   = 4 << 10
	ConnectTimeout  = 3 * time.Second
)

// ErrAnswerTooLarge is a push service's answer over the bounds: a failed
// attempt, whatever its status.
var ErrAnswerTooLarge = errors.New("push: the push service's answer is over the bounds")

// NewClient is the HTTP client of a channel's pushes: no proxy, no
// redirect followed, HTTP/2 when the service speaks it, connections made
// within ConnectTimeout (control, when set, may refuse an address), headers
// within MaxAnswerHeader, each push done within timeout. tlsConf (nil: the
// system's roots, which SSL_CERT_FILE may name) is for tests' stand-ins.
func NewClient(timeout time.Duration, tlsConf *tls.Config, control func(network, address string, c syscall.RawConn) error) *http.Client {
	d := &net.Dialer{Timeout: min(timeout, ConnectTimeout), Control: control}
	tr := &http.Transport{
		Proxy:                  nil, // a push goes straight to its service (FCM_BASE_URL and the like name a proxy)
		DialContext:            d.DialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    min(timeout, ConnectTimeout),
		ForceAttemptHTTP2:      true,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: MaxAnswerHeader, // HTTP/2 too: its header list limit is taken from this
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ReadAnswer reads resp's body up to MaxAnswerBody bytes and closes it; a
// longer one is ErrAnswerTooLarge (the rest is never read: it goes with
// the connection).
func ReadAnswer(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBody+1))
	switch {
	case len(b) > MaxAnswerBody:
		return nil, ErrAnswerTooLarge
	case err != nil:
		return nil, err
	}
	return b, nil
}

// Exchange sends req through c and reads its answer within the bounds
// (ReadAnswer). An error is a push with no answer: NoAnswer names it.
func Exchange(c *http.Client, req *http.Request) (*http.Response, []byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	b, err := ReadAnswer(resp)
	if err != nil {
		return nil, nil, err
	}
	return resp, b, nil
}

// NoAnswer is the Answer of a push whose answer did not come (in time, or
// whole) or came over the bounds: all retried.
func NoAnswer(err error) Answer {
	if IsTooLarge(err) {
		return Answer{Code: "ANSWER_TOO_LARGE", Retryable: true}
	}
	if TimedOut(err) {
		return Answer{Code: "TIMEOUT", Retryable: true}
	}
	return Answer{Code: "NETWORK", Retryable: true}
}

// TimedOut says whether err is a deadline passed.
func TimedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// IsTooLarge says whether err is an answer over the bounds: its body, or
// net/http's refusal of headers over MaxResponseHeaderBytes.
func IsTooLarge(err error) bool { return errors.Is(err, ErrAnswerTooLarge) || headerTooLarge(err) }

// headerTooLarge says whether err is net/http's refusal of headers over
// MaxResponseHeaderBytes: HTTP/1.1 and HTTP/2 word it differently, and
// neither exports it. HTTP/2's header decoder refuses a header longer than
// the bound as the connection's COMPRESSION_ERROR (a service that speaks
// HTTP/2 sends no corrupt header block otherwise).
func headerTooLarge(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "response headers exceeded") || strings.Contains(m, "header list larger than") ||
		strings.Contains(m, "COMPRESSION_ERROR")
}

// Badge is a person's unread count, which a phone's badge shows: the
// inbox's (main wires it; push does not import the inbox).
type Badge interface {
	Unread(ctx context.Context, user int64) (int64, error)
}

// CodeOK bounds what a service's or gateway's error code may be: it is
// stored and shown.
func CodeOK(c string) bool {
	if c == "" || len(c) > 64 {
		return false
	}
	return strings.IndexFunc(c, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}) < 0
}

// Retried says whether seed 002 sends a push that failed with code again
// later: INTERNAL, UNAVAILABLE, QUOTA_EXCEEDED.
func Retried(code string) bool {
	return code == "INTERNAL" || code == "UNAVAILABLE" || code == "QUOTA_EXCEEDED"
}

// GoneCode says whether code means the device is gone for good and is
// removed: UNREGISTERED, SENDER_ID_MISMATCH (a token of another project).
func GoneCode(code string) bool { return code == "UNREGISTERED" || code == "SENDER_ID_MISMATCH" }

// RetryAfter reads a Retry-After header: seconds or an HTTP date; 0 when
// absent or unreadable, at most a day.
func RetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), 24*time.Hour)
}
