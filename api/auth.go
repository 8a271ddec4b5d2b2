package api

import (
	"crypto/subtle"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
)

// User is the caller of a user route, from a verified access token.
type User struct {
	ID      int64
	Expires time.Time // the token's exp: a stream ends then
}

const userKey = "roomhub.user"

// userOf returns the authenticated user set by the user middleware.
func userOf(c echo.Context) User { return c.Get(userKey).(User) }

// claims are those of DESIGN.md: sub (numeric user id), iat, exp, optional token_type.
type claims struct {
	TokenType *string `json:"token_type,omitempty"`
	jwt.RegisteredClaims
}

// TokenVerifier checks user tokens: HS256 only, exp required, sub numeric,
// token_type "access" when present.
type TokenVerifier struct {
	secret []byte
	parser *jwt.Parser
}

// NewTokenVerifier returns a verifier for tokens signed with secret.
func NewTokenVerifier(secret string) *TokenVerifier {
	return &TokenVerifier{
		secret: []byte(secret),
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithLeeway(5*time.Second),
		),
	}
}

// Verify parses and checks a token and returns its user.
func (v *TokenVerifier) Verify(token string) (User, error) {
	var cl claims
	_, err := v.parser.ParseWithClaims(token, &cl, func(*jwt.Token) (any, error) { return v.secret, nil })
	if err != nil {
		return User{}, err
	}
	if cl.TokenType != nil && *cl.TokenType != "access" {
		return User{}, errors.New("token_type is not access")
	}
	id, err := strconv.ParseInt(cl.Subject, 10, 64)
	if err != nil || id <= 0 {
		return User{}, errors.New("sub is not a positive user id")
	}
	return User{ID: id, Expires: cl.ExpiresAt.Time}, nil
}

// Sign mints an access token for user, valid for ttl. Dev mode and tests use it.
func (v *TokenVerifier) Sign(user int64, ttl time.Duration) (string, error) {
	now := time.Now()
	access := "access"
	cl := claims{TokenType: &access, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   strconv.FormatInt(user, 10),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, cl).SignedString(v.secret)
}

// requireUser authenticates with Authorization: Bearer, else the access_token
// cookie, else (when allowQuery, the stream route only) the token query parameter.
func requireUser(v *TokenVerifier, allowQuery bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			token := ""
			if h := c.Request().Header.Get(echo.HeaderAuthorization); h != "" {
				scheme, rest, found := strings.Cut(h, " ")
				if !found || !strings.EqualFold(scheme, "Bearer") {
					return errUnauthorized("Authorization must be a Bearer token")
				}
				token = strings.TrimSpace(rest)
			} else if ck, err := c.Cookie("access_token"); err == nil {
				token = ck.Value
			} else if allowQuery {
				token = c.QueryParam("token")
			}
			if token == "" {
				return errUnauthorized("missing access token")
			}
			u, err := v.Verify(token)
			if err != nil {
				return errUnauthorized("invalid or expired access token")
			}
			c.Set(userKey, u)
			return next(c)
		}
	}
}

// requireInternal checks X-Internal-Key against the configured key in constant time.
func requireInternal(key string) echo.MiddlewareFunc {
	want := []byte(key)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			got := []byte(c.Request().Header.Get("X-Internal-Key"))
			if subtle.ConstantTimeCompare(got, want) != 1 {
				return errUnauthorized("missing or wrong internal key")
			}
			return next(c)
		}
	}
}
