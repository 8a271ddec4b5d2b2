package api

import (
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
)

const secret = "test_secret"

func sign(t *testing.T, method jwt.SigningMethod, key any, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, c).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTokenVerifier(t *testing.T) {
	now := time.Now()
	valid := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "7", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	}
	with := func(k string, v any) jwt.MapClaims { c := valid(); c[k] = v; return c }
	without := func(k string) jwt.MapClaims { c := valid(); delete(c, k); return c }
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	v := NewTokenVerifier(secret)
	for _, tc := range []struct {
		name  string
		token string
		ok    bool
	}{
		{"valid", sign(t, jwt.SigningMethodHS256, []byte(secret), valid()), true},
		{"access type", sign(t, jwt.SigningMethodHS256, []byte(secret), with("token_type", "access")), true},
		{"refresh type", sign(t, jwt.SigningMethodHS256, []byte(secret), with("token_type", "refresh")), false},
		{"expired", sign(t, jwt.SigningMethodHS256, []byte(secret), with("exp", now.Add(-time.Minute).Unix())), false},
		{"no exp", sign(t, jwt.SigningMethodHS256, []byte(secret), without("exp")), false},
		{"wrong secret", sign(t, jwt.SigningMethodHS256, []byte("other"), valid()), false},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid()), false},
		{"RS256", sign(t, jwt.SigningMethodRS256, rsaKey, valid()), false},
		{"HS512", sign(t, jwt.SigningMethodHS512, []byte(secret), valid()), false},
		{"sub not numeric", sign(t, jwt.SigningMethodHS256, []byte(secret), with("sub", "alice")), false},
		{"sub zero", sign(t, jwt.SigningMethodHS256, []byte(secret), with("sub", "0")), false},
		{"no sub", sign(t, jwt.SigningMethodHS256, []byte(secret), without("sub")), false},
		{"garbage", "not.a.token", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := v.Verify(tc.token)
			if (err == nil) != tc.ok {
				t.Fatalf("Verify err = %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && u.ID != 7 {
				t.Fatalf("user = %d, want 7", u.ID)
			}
		})
	}
}

func TestRequireUser_TokenSources(t *testing.T) {
	v := NewTokenVerifier(secret)
	tok, _ := v.Sign(9, time.Hour)
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(discardLog())
	h := func(c echo.Context) error { return ok(c, userOf(c).ID) }
	e.GET("/user", h, requireUser(v, false, nil, nil, nil))
	e.GET("/stream", h, requireUser(v, true, nil, nil, nil))
	for _, tc := range []struct {
		name, path, header, cookie string
		want                       int
	}{
		{"bearer", "/user", "Bearer " + tok, "", 200},
		{"cookie", "/user", "", tok, 200},
		{"query on user route", "/user?token=" + tok, "", "", 401},
		{"query on stream", "/stream?token=" + tok, "", "", 200},
		{"basic scheme", "/user", "Basic " + tok, "", 401},
		{"bad bearer beats good cookie", "/user", "Bearer x", tok, 401},
		{"none", "/user", "", "", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: "access_token", Value: tc.cookie})
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status = %d, want %d (%s)", rec.Code, tc.want, rec.Body)
			}
			if tc.want == 401 && !contains(rec.Body.String(), `"code":"AUTH4001"`) {
				t.Fatalf("body %s lacks AUTH4001", rec.Body)
			}
		})
	}
}

func TestRequireInternal(t *testing.T) {
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(discardLog())
	e.POST("/p", func(c echo.Context) error { return ok(c, nil) }, requireInternal("key"))
	for key, want := range map[string]int{"key": 200, "": 401, "kez": 401, "key ": 401, "ke": 401} {
		req := httptest.NewRequest(http.MethodPost, "/p", nil)
		if key != "" {
			req.Header.Set("X-Internal-Key", key)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("key %q: status %d, want %d", key, rec.Code, want)
		}
	}
}

func FuzzVerifyToken(f *testing.F) {
	v := NewTokenVerifier("fuzz-secret")
	for _, rooms := range []any{nil, "*", []any{1, "2"}, []any{}, map[string]int{"a": 1}} {
		var tok string
		if rooms == nil {
			tok, _ = v.Sign(7, time.Hour)
		} else {
			tok, _ = v.Sign(7, time.Hour, rooms)
		}
		f.Add(tok)
	}
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		u, err := v.Verify(token)
		if err != nil {
			return
		}
		if u.ID <= 0 || u.Expires.IsZero() {
			t.Fatalf("accepted %q as %+v", token, u)
		}
		for r := range u.Grant.Rooms {
			if r <= 0 {
				t.Fatalf("grant of room %d", r)
			}
		}
	})
}

func FuzzParseRoomsClaim(f *testing.F) {
	for _, s := range []string{`"*"`, `[1,"2",3]`, `[]`, `null`, `"all"`, `[0]`, `[1.5]`, `{"a":1}`, `["9223372036854775808"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		g, err := parseRooms(raw)
		if err != nil {
			return
		}
		if len(g.Rooms) > maxRoomsClaim {
			t.Fatalf("%d rooms granted", len(g.Rooms))
		}
		for r := range g.Rooms {
			if r <= 0 {
				t.Fatalf("grant of room %d from %q", r, raw)
			}
		}
	})
}
