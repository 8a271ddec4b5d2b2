package fcm

import (
	"context"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/jwt"
)

// earlyRenewal is how long before its expiry an access token is made
// again.
const earlyRenewal = 5 * time.Minute

// tokens are the instance's access tokens: one at a time, bought with the
// key's signed assertion at its token_uri (through the pushes' client:
// bounded answers, the same roots), kept until earlyRenewal before it
// expires, or until FCM refuses it.
type tokens struct {
	conf *jwt.Config
	ctx  context.Context // carries the client the token requests go through

	mu  sync.Mutex
	src oauth2.TokenSource
	gen int // which src: a refusal renews only the token it was given
}

func newTokens(conf *jwt.Config, client *http.Client) *tokens {
	t := &tokens{conf: conf, ctx: context.WithValue(context.Background(), oauth2.HTTPClient, client)}
	t.src = t.fresh()
	return t
}

// fresh is a source that asks the token endpoint only when its token is
// within earlyRenewal of its expiry (each ask a new assertion).
func (t *tokens) fresh() oauth2.TokenSource {
	ask := sourceFunc(func() (*oauth2.Token, error) { return t.conf.TokenSource(t.ctx).Token() })
	return oauth2.ReuseTokenSourceWithExpiry(nil, ask, earlyRenewal)
}

type sourceFunc func() (*oauth2.Token, error)

func (f sourceFunc) Token() (*oauth2.Token, error) { return f() }

// get is the access token to send with, and which one it is (for renew).
// A token request is bounded by the pushes' client's time limit.
func (t *tokens) get() (string, int, error) {
	t.mu.Lock()
	src, gen := t.src, t.gen
	t.mu.Unlock()
	tok, err := src.Token()
	if err != nil {
		return "", gen, err
	}
	return tok.AccessToken, gen, nil
}

// renew drops token gen, which FCM refused: the next get makes a new one.
// A refusal of a token already renewed changes nothing.
func (t *tokens) renew(gen int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen == gen {
		t.src, t.gen = t.fresh(), gen+1
	}
}
