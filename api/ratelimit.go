package api

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"
)

// limiterMax bounds the users a limiter remembers; past it, users whose budget
// is full again (idle) are forgotten, which loses nothing.
const limiterMax = 100_000

// userLimiter is a token bucket per user.
type userLimiter struct {
	every rate.Limit
	burst int
	mu    sync.Mutex
	m     map[int64]*rate.Limiter
}

// newUserLimiter keeps budget b for each user (Config.StreamOpens,
// Config.Heartbeats): a reload storm of several tabs fits in the burst; a
// client reconnecting in a tight loop does not.
func newUserLimiter(b Budget) *userLimiter {
	return &userLimiter{every: rate.Limit(b.PerSec), burst: b.Burst, m: map[int64]*rate.Limiter{}}
}

// take spends one token of user's budget; when there is none it returns how
// long until there is.
func (l *userLimiter) take(user int64, now time.Time) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.m[user]
	if lim == nil {
		if len(l.m) >= limiterMax {
			for u, x := range l.m {
				if x.TokensAt(now) >= float64(l.burst) {
					delete(l.m, u)
				}
			}
		}
		lim = rate.NewLimiter(l.every, l.burst)
		l.m[user] = lim
	}
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

// limit answers 429 COMMON429 with Retry-After when the user's budget in l is
// spent. It runs after authentication.
func limit(l *userLimiter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if wait, ok := l.take(userOf(c).ID, time.Now()); !ok {
				c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
				return &Error{http.StatusTooManyRequests, "COMMON429", "too many requests; retry after the Retry-After seconds", nil}
			}
			return next(c)
		}
	}
}
