package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"

	"roomhub/hub"
)

// User is the caller of a user route, from a verified access token.
type User struct {
	ID      int64
	Expires time.Time // the token's exp: a stream ends then
	Grant   hub.Grant // the rooms claim (ROOM_AUTH=claim)
}

const (
	userKey  = "roomhub.user"
	tokenKey = "roomhub.token" // the verified access token itself (a stream ticket stands for it)
)

// userOf returns the authenticated user set by the user middleware.
func userOf(c echo.Context) User { return c.Get(userKey).(User) }

// claims are those of DESIGN.md: sub (numeric user id), iat, exp, optional token_type.
type claims struct {
	TokenType *string         `json:"token_type,omitempty"`
	Rooms     json.RawMessage `json:"rooms,omitempty"`
	jwt.RegisteredClaims
}

// maxRoomsClaim bounds the rooms a token may list.
const maxRoomsClaim = 10_000

// parseRooms reads the rooms claim: "*", or an array of room ids as numbers or
// numeric strings. Absent grants nothing (only ROOM_AUTH=claim looks at it).
func parseRooms(raw json.RawMessage) (hub.Grant, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return hub.Grant{}, nil
	}
	var all string
	if json.Unmarshal(raw, &all) == nil {
		if all != "*" {
			return hub.Grant{}, errors.New(`rooms is "*" or a list of room ids`)
		}
		return hub.Grant{All: true}, nil
	}
	var ids []json.RawMessage
	if err := json.Unmarshal(raw, &ids); err != nil || len(ids) > maxRoomsClaim {
		return hub.Grant{}, errors.New(`rooms is "*" or a list of room ids`)
	}
	g := hub.Grant{Rooms: make(map[int64]bool, len(ids))}
	for _, id := range ids {
		room, err := hub.ParseRoomID(strings.Trim(string(id), `"`))
		if err != nil {
			return hub.Grant{}, errors.New("rooms lists something that is not a room id")
		}
		g.Rooms[room] = true
	}
	return g, nil
}

// TokenVerifier checks user tokens: HS256 only, exp required, sub numeric,
// token_type "access" when present, and iss and aud when it expects them.
type TokenVerifier struct {
	secret           []byte
	issuer, audience string
	parser           *jwt.Parser
}

// NewTokenVerifier returns a verifier for tokens signed with secret.
func NewTokenVerifier(secret string) *TokenVerifier { return newVerifier(secret, "", "") }

// Expect returns a verifier that also requires the token's iss to be issuer
// and its aud to hold audience, each when not "" (JWT_ISSUER, JWT_AUDIENCE);
// its Sign writes them.
func (v *TokenVerifier) Expect(issuer, audience string) *TokenVerifier {
	return newVerifier(string(v.secret), issuer, audience)
}

func newVerifier(secret, issuer, audience string) *TokenVerifier {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(5 * time.Second),
	}
	if issuer != "" {
		opts = append(opts, jwt.WithIssuer(issuer))
	}
	if audience != "" {
		opts = append(opts, jwt.WithAudience(audience))
	}
	return &TokenVerifier{secret: []byte(secret), issuer: issuer, audience: audience, parser: jwt.NewParser(opts...)}
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
	grant, err := parseRooms(cl.Rooms)
	if err != nil {
		return User{}, err
	}
	return User{ID: id, Expires: cl.ExpiresAt.Time, Grant: grant}, nil
}

// Sign mints an access token for user, valid for ttl, with an optional rooms
// claim (a JSON value). Dev mode and tests use it.
func (v *TokenVerifier) Sign(user int64, ttl time.Duration, rooms ...any) (string, error) {
	now := time.Now()
	access := "access"
	cl := claims{TokenType: &access, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   strconv.FormatInt(user, 10),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		Issuer:    v.issuer,
	}}
	if v.audience != "" {
		cl.Audience = jwt.ClaimStrings{v.audience}
	}
	if len(rooms) > 0 {
		b, err := json.Marshal(rooms[0])
		if err != nil {
			return "", err
		}
		cl.Rooms = b
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, cl).SignedString(v.secret)
}

// Tickets redeems stream tickets (POST /stream-tickets): the token a ticket
// stands for, once; "" for a ticket unknown, used or expired.
type Tickets interface {
	RedeemTicket(ctx context.Context, ticket string) (string, error)
}

// requireUser authenticates with Authorization: Bearer, else the access_token
// cookie, else (when allowQuery, the stream routes only) the ticket query
// parameter (redeemed through tickets, when not nil, unless overBudget says
// the client's address has spent its failures), else the token one. A
// request the cookie authenticates that changes anything (any method but
// GET and HEAD) must come from the page's own origin or one of
// allowedOrigins, else 403: a browser sends the cookie with cross-site
// requests too (CSRF). A stream (allowQuery) the cookie authenticates is
// refused when another site, a navigation or an element opens it.
func requireUser(v *TokenVerifier, allowQuery bool, tickets Tickets, allowedOrigins []string, overBudget func(*http.Request) error) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			token, byCookie := "", false
			if h := c.Request().Header.Get(echo.HeaderAuthorization); h != "" {
				scheme, rest, found := strings.Cut(h, " ")
				if !found || !strings.EqualFold(scheme, "Bearer") {
					return errUnauthorized("Authorization must be a Bearer token")
				}
				token = strings.TrimSpace(rest)
			} else if ck, err := c.Cookie("access_token"); err == nil {
				token, byCookie = ck.Value, true
			} else if t := c.QueryParam("ticket"); allowQuery && t != "" && tickets != nil {
				if overBudget != nil { // the address spent its failures: no Redis call for another
					if err := overBudget(c.Request()); err != nil {
						return tooMany(c, err)
					}
				}
				var err error
				if token, err = tickets.RedeemTicket(c.Request().Context(), t); err != nil {
					return err
				}
				if token == "" {
					return errUnauthorized("unknown, used or expired stream ticket")
				}
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
			if byCookie && !sameOriginOrAllowed(c.Request(), allowedOrigins) {
				return &Error{http.StatusForbidden, "COMMON403",
					"a change authenticated by the cookie must come from this site or an allowed origin", nil}
			}
			// A stream opened by a cross-site page, a navigation or a
			// subresource (an <img> on a sibling subdomain) with the cookie
			// would count toward the user's cap, evict their real streams and
			// mark them present: an EventSource sends Sec-Fetch-Mode cors and
			// Sec-Fetch-Dest empty, so only those are let through.
			if byCookie && allowQuery && !eventSourceLike(c.Request()) {
				return &Error{http.StatusForbidden, "COMMON403",
					"a stream authenticated by the cookie can be opened only by an EventSource or fetch of an allowed page, not another site, a navigation or an element", nil}
			}
			c.Set(userKey, u)
			c.Set(tokenKey, token)
			return next(c)
		}
	}
}

// eventSourceLike reports whether r may be an EventSource's (or a fetch's)
// as the browser marks it: not cross-site, a Sec-Fetch-Mode of cors or
// same-origin, a Sec-Fetch-Dest of empty. A header that is absent (an
// older browser, a client that is no browser) refuses nothing.
func eventSourceLike(r *http.Request) bool {
	site, mode, dest := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Sec-Fetch-Dest")
	return site != "cross-site" && (mode == "" || mode == "cors" || mode == "same-origin") && (dest == "" || dest == "empty")
}

// sameOriginOrAllowed reports whether r may change something with the
// cookie's authority: a GET or HEAD, or a request whose Origin is the hub's
// own or listed, or (no Origin) one the browser marks same-origin.
func sameOriginOrAllowed(r *http.Request, allowed []string) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	if slices.Contains(allowed, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && u.Host == r.Host
}

// requireInternal checks X-Internal-Key against the configured key in constant time.
func requireInternal(key string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !validInternalKey(c.Request(), key) {
				return errUnauthorized("missing or wrong internal key")
			}
			return next(c)
		}
	}
}

// validInternalKey reports whether r carries the internal key, compared in
// constant time.
func validInternalKey(r *http.Request, key string) bool {
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Internal-Key")), []byte(key)) == 1
}
