// Package console keeps the operator's console's sessions: signed cookies
// any instance accepts, their CSRF tokens, and sign-out.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// SessionTTL is how long a session lasts from sign-in.
const SessionTTL = 12 * time.Hour

// MinPasswordBytes is the shortest CONSOLE_PASSWORD taken.
const MinPasswordBytes = 16

// maxCookie bounds a session cookie's length: longer is none the hub made.
const maxCookie = 256

// ErrNoSession is a cookie that opens nothing: missing, malformed, forged,
// expired or signed out.
var ErrNoSession = errors.New("no console session")

// Session is a signed-in operator's session.
type Session struct {
	ID      string    // 32 hex digits
	Expires time.Time // SessionTTL after sign-in
}

// Sessions signs and checks the console's sessions with a key made of the
// fleet's secret (in Redis, made once) and the password.
type Sessions struct {
	rdb      *hub.Redis
	password []byte

	mu  sync.Mutex
	key []byte // nil until read
}

// New returns the sessions of password on core's Redis.
func New(core *hub.Hub, password string) *Sessions {
	return &Sessions{rdb: core.Redis(), password: []byte(password)}
}

// CheckPassword reports whether p is the password, in constant time.
func (s *Sessions) CheckPassword(p string) bool {
	a, b := sha256.Sum256([]byte(p)), sha256.Sum256(s.password)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// signingKey is HMAC(secret, password); the secret is made by the first
// instance that needs it and read by the rest.
func (s *Sessions) signingKey(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	made := hex.EncodeToString(b[:])
	// Two calls, not SET NX GET: the embedded Redis of dev mode lacks it.
	if _, err := hub.Call(s.rdb, ctx, s.rdb.B().Set().Key(SecretKey).Value(made).Nx().Build(), hub.NoReply); err != nil && !errors.Is(err, rueidis.Nil) {
		return nil, err
	}
	secret, err := hub.Call(s.rdb, ctx, s.rdb.B().Get().Key(SecretKey).Build(), rueidis.RedisResult.ToString)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(s.password)
	s.key = m.Sum(nil)
	return s.key, nil
}

func (s *Sessions) mac(key []byte, parts ...string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strings.Join(parts, "|")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Issue starts a session at now and returns it with its cookie's value.
func (s *Sessions) Issue(ctx context.Context, now time.Time) (Session, string, error) {
	key, err := s.signingKey(ctx)
	if err != nil {
		return Session{}, "", err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	ss := Session{ID: hex.EncodeToString(b[:]), Expires: now.Add(SessionTTL).Truncate(time.Millisecond)}
	exp := strconv.FormatInt(ss.Expires.UnixMilli(), 10)
	return ss, ss.ID + "." + exp + "." + s.mac(key, "session", ss.ID, exp), nil
}

// Verify returns the session a cookie's value stands for at now, or
// ErrNoSession.
func (s *Sessions) Verify(ctx context.Context, cookie string, now time.Time) (Session, error) {
	parts := strings.Split(cookie, ".")
	if len(cookie) > maxCookie || len(parts) != 3 || len(parts[0]) != 32 {
		return Session{}, ErrNoSession
	}
	ms, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !now.Before(time.UnixMilli(ms)) {
		return Session{}, ErrNoSession
	}
	key, err := s.signingKey(ctx)
	if err != nil {
		return Session{}, err
	}
	if !hmac.Equal([]byte(parts[2]), []byte(s.mac(key, "session", parts[0], parts[1]))) {
		return Session{}, ErrNoSession
	}
	n, err := hub.Call(s.rdb, ctx, s.rdb.B().Exists().Key(revokedKey(parts[0])).Build(), rueidis.RedisResult.AsInt64)
	if err != nil {
		return Session{}, err
	}
	if n > 0 {
		return Session{}, ErrNoSession
	}
	return Session{ID: parts[0], Expires: time.UnixMilli(ms)}, nil
}

// CSRF is the token a session's pages send with every change.
func (s *Sessions) CSRF(ctx context.Context, ss Session) (string, error) {
	key, err := s.signingKey(ctx)
	if err != nil {
		return "", err
	}
	return s.mac(key, "csrf", ss.ID), nil
}

// CheckCSRF reports whether token is ss's CSRF token.
func (s *Sessions) CheckCSRF(ctx context.Context, ss Session, token string) (bool, error) {
	want, err := s.CSRF(ctx, ss)
	return err == nil && hmac.Equal([]byte(token), []byte(want)), err
}

// Revoke signs ss out on every instance, at now.
func (s *Sessions) Revoke(ctx context.Context, ss Session, now time.Time) error {
	ttl := ss.Expires.Sub(now)
	if ttl <= 0 {
		return nil
	}
	_, err := hub.Call(s.rdb, ctx, s.rdb.B().Set().Key(revokedKey(ss.ID)).Value("1").Px(ttl).Build(), hub.NoReply)
	return err
}
