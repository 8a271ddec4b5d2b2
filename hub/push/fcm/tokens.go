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
// expires, or until FCM refuses it. One request for a token is in flight at
// a time, and a push waits for it no longer than its own deadline: a token
// endpoint that hangs holds no push past its time.
type tokens struct {
	conf   *jwt.Config
	client *http.Client

	mu    sync.Mutex
	tok   *oauth2.Token
	gen   int    // which token: a refusal renews only the token it was given
	fetch *fetch // the request in flight, nil: none
}

// fetch is one request for a token: done is closed when it has ended.
type fetch struct {
	done chan struct{}
	tok  *oauth2.Token
	err  error
}

func newTokens(conf *jwt.Config, client *http.Client) *tokens {
	return &tokens{conf: conf, client: client}
}

// get is the access token to send with, and which one it is (for renew):
// the one kept, else the one being asked for, waited for within ctx. (The
// oauth2 package's requests for a token take no context: the request runs
// on in the background, bounded by the client's time limit, and its token
// serves the pushes after.)
func (t *tokens) get(ctx context.Context) (string, int, error) {
	t.mu.Lock()
	gen := t.gen
	if t.tok != nil && (t.tok.Expiry.IsZero() || time.Until(t.tok.Expiry) > earlyRenewal) {
		tok := t.tok.AccessToken
		t.mu.Unlock()
		return tok, gen, nil
	}
	f := t.fetch
	if f == nil {
		f = &fetch{done: make(chan struct{})}
		t.fetch = f
		go t.ask(f, gen)
	}
	t.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return "", gen, ctx.Err()
	}
	if f.err != nil {
		return "", gen, f.err
	}
	return f.tok.AccessToken, gen, nil
}

// ask makes f's request for token gen's successor and keeps what it got.
func (t *tokens) ask(f *fetch, gen int) {
	f.tok, f.err = t.conf.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, t.client)).Token()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fetch = nil
	if f.err == nil && t.gen == gen {
		t.tok = f.tok
	}
	close(f.done)
}

// renew drops token gen, which FCM refused: the next get makes a new one.
// A refusal of a token already renewed changes nothing.
func (t *tokens) renew(gen int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen == gen {
		t.tok, t.gen = nil, gen+1
	}
}
