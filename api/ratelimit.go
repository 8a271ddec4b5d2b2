package api

import (
	"errors"
	"maps"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// limiterSweepMin is the fewest keys a limiter holds before it forgets those
// whose budget is full again (idle), which loses nothing. It sweeps again each
// time its keys have doubled since the last sweep: a key's cost is amortized,
// and a hub with 10,000 quiet streams does not keep 10,000 buckets.
const limiterSweepMin = 1024

// userLimiter is a token bucket per key: a user id, or a client address.
type userLimiter struct {
	every   rate.Limit
	burst   int
	mu      sync.Mutex
	m       map[string]*rate.Limiter
	sweepAt int // the keys at which to sweep next
}

// newUserLimiter keeps budget b for each user (Config.StreamOpens,
// Config.Heartbeats, Config.UserRequests) or address (Config.IPRequests): a
// reload storm of several tabs fits in the burst; a client in a tight loop
// does not.
func newUserLimiter(b Budget) *userLimiter {
	return &userLimiter{every: rate.Limit(b.PerSec), burst: b.Burst, m: map[string]*rate.Limiter{}, sweepAt: limiterSweepMin}
}

// take spends one token of key's budget; when there is none it returns how
// long until there is.
func (l *userLimiter) take(key string, now time.Time) (wait time.Duration, ok bool) {
	return l.takeN(key, 1, now)
}

// takeN is take for n tokens at once (at most the burst; none when n is 0).
func (l *userLimiter) takeN(key string, n int, now time.Time) (wait time.Duration, ok bool) {
	if n <= 0 {
		return 0, true
	}
	n = min(n, l.burst)
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.m[key]
	if lim == nil {
		if len(l.m) >= l.sweepAt {
			l.sweep(now)
		}
		lim = rate.NewLimiter(l.every, l.burst)
		l.m[key] = lim
	}
	r := lim.ReserveN(now, n)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

// sweep forgets the keys whose budget is full again. A map keeps its buckets
// after deletes, so when most keys went it moves the rest to a new one.
func (l *userLimiter) sweep(now time.Time) {
	for k, x := range l.m {
		if x.TokensAt(now) >= float64(l.burst) {
			delete(l.m, k)
		}
	}
	if len(l.m) < l.sweepAt/4 {
		m := make(map[string]*rate.Limiter, len(l.m))
		maps.Copy(m, l.m)
		l.m = m
	}
	l.sweepAt = max(limiterSweepMin, 2*len(l.m))
}

// limit answers 429 COMMON429 with Retry-After when the user's budget in l is
// spent. It runs after authentication.
func limit(l *userLimiter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := l.spend(strconv.FormatInt(userOf(c).ID, 10)); err != nil {
				return tooMany(c, err)
			}
			return next(c)
		}
	}
}

// itemsPerToken is how many items a bulk action may look at for the one
// token its request spent; beyond them it spends a token per itemsPerToken.
const itemsPerToken = 100

// chargeItems spends, from the user's request budget, a token for every
// itemsPerToken items a bulk action looked at beyond the first: its
// request's own token paid for those. The budget may go into debt (up to a
// burst): the user's next requests wait it out, as a bulk loop should.
func (s *Server) chargeItems(user int64, looked int) {
	n := (looked - 1) / itemsPerToken
	if n <= 0 {
		return
	}
	s.userRequests.charge(strconv.FormatInt(user, 10), n, time.Now())
}

// charge takes n tokens (at most the burst) from key's budget even when it
// has fewer: what is missing is paid by the next requests' waits.
func (l *userLimiter) charge(key string, n int, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lim := l.m[key]; lim != nil {
		lim.ReserveN(now, min(n, l.burst))
	}
}

// errTooMany carries how long until a budget has a token again.
type errTooMany struct{ wait time.Duration }

func (e errTooMany) Error() string { return "too many requests" }

// peek says how long until key's budget has a token, without taking one
// (nil: it has one now).
func (l *userLimiter) peek(key string, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.m[key]
	if lim == nil {
		return nil
	}
	if tokens := lim.TokensAt(now); tokens < 1 {
		return errTooMany{time.Duration((1 - tokens) / float64(l.every) * float64(time.Second))}
	}
	return nil
}

// spend takes one token of key's budget, or says how long to wait.
func (l *userLimiter) spend(key string) error {
	if wait, ok := l.take(key, time.Now()); !ok {
		return errTooMany{wait}
	}
	return nil
}

// spendMisses takes, from the user's budget in s.authMisses, a token for each
// of rooms whose access answer is not cached (proxy mode): each one is a call
// to the backend and a new cache entry. 429 COMMON429 when it is spent.
func (s *Server) spendMisses(c echo.Context, user int64, rooms ...int64) error {
	misses := 0
	for _, r := range rooms {
		if !s.hub.AnswerCached(user, r) {
			misses++
		}
	}
	if wait, ok := s.authMisses.takeN(strconv.FormatInt(user, 10), misses, time.Now()); !ok {
		return tooMany(c, errTooMany{wait})
	}
	return nil
}

// tooMany is the 429 COMMON429 answer with Retry-After.
func tooMany(c echo.Context, err error) error {
	wait := time.Second
	if e, ok := err.(errTooMany); ok {
		wait = e.wait
	}
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	return &Error{http.StatusTooManyRequests, "COMMON429", "too many requests; retry after the Retry-After seconds", nil}
}

// clientAddr is the request's client address: the last entry of the trusted
// proxy header when one is configured (the address the proxy saw), else the
// connection's peer. An untrusted header is never read: a client could
// write any address there.
func clientAddr(r *http.Request, trustedHeader string) string {
	if trustedHeader != "" {
		if v := r.Header.Get(trustedHeader); v != "" {
			return strings.TrimSpace(v[strings.LastIndexByte(v, ',')+1:])
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// unauthenticatedLimit bounds, per client address, the requests that fail
// authentication: each failure spends a token of the address's budget, and
// past it a failure is answered 429 instead of 401. The credential is
// always checked first, so a valid one is never refused by its address's
// budget (behind a proxy every browser may share one address); a failing
// client learns nothing more from a 429 than from the 401 it replaces.
// Authenticated requests are limited per user instead.
func unauthenticatedLimit(l *userLimiter, trustedHeader string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			err := next(c)
			var e *Error
			if errors.As(err, &e) && e.Status == http.StatusUnauthorized {
				if werr := l.spend(clientAddr(c.Request(), trustedHeader)); werr != nil {
					return tooMany(c, werr)
				}
			}
			return err
		}
	}
}

// chain runs mws in order, as one middleware.
func chain(mws ...echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		for i := len(mws) - 1; i >= 0; i-- {
			next = mws[i](next)
		}
		return next
	}
}
