package apns

import (
	"crypto/ecdsa"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// When a provider token is made again: APNs refuses one older than an
// hour, and one made again more often than every 20 minutes
// (TooManyProviderTokenUpdates).
const (
	tokenAge    = 40 * time.Minute
	minTokenAge = 20 * time.Minute
)

// tokens is the instance's provider token: an ES256 JWT (kid the key's
// id, iss the team, iat when made), made again after tokenAge, or at once
// when APNs calls the one a push carried expired or invalid (once per
// token: the pushes that carried it share the new one).
type tokens struct {
	key          *ecdsa.PrivateKey
	keyID, team  string
	now          func() time.Time
	mu           sync.Mutex
	token        string
	made         time.Time
	renewedEarly bool // the current token was made at APNs' word, before minTokenAge
}

func newTokens(key *ecdsa.PrivateKey, keyID, team string, now func() time.Time) *tokens {
	return &tokens{key: key, keyID: keyID, team: team, now: now}
}

// get is the token to send with.
func (t *tokens) get() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Sub(t.made) < tokenAge {
		return t.token, nil
	}
	return t.make()
}

// renew makes a new token in place of used, which APNs refused; a token
// already made again since, or one APNs refused within minTokenAge of an
// early renewal, is kept (APNs would refuse updates that often). It says
// whether a token other than used is there to send with.
func (t *tokens) renew(used string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != used {
		return t.token != ""
	}
	if t.renewedEarly && t.now().Sub(t.made) < minTokenAge {
		return false
	}
	if _, err := t.make(); err != nil {
		return false
	}
	t.renewedEarly = true
	return true
}

// make signs a new token. Called with t.mu held.
func (t *tokens) make() (string, error) {
	now := t.now()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": t.team, "iat": now.Unix()})
	tok.Header["kid"] = t.keyID
	s, err := tok.SignedString(t.key)
	if err != nil {
		return "", err
	}
	t.token, t.made, t.renewedEarly = s, now, false
	return s, nil
}
