package apns

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The provider token's schedule (DESIGN): made again after 40 minutes and
// not before; at once when APNs refuses the one in use, once: a refusal of
// a token already replaced, or a second within 20 minutes of an early
// renewal, keeps the token (APNs refuses updates more often than that).
func TestTokens_Schedule(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Unix(1_800_000_000, 0)
	tk := newTokens(key, "KID", "TEAM", func() time.Time { return now })
	get := func() string {
		t.Helper()
		s, err := tk.get()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := get()
	var c jwt.MapClaims
	parsed, err := jwt.ParseWithClaims(a, &c, func(*jwt.Token) (any, error) { return &key.PublicKey, nil }, jwt.WithValidMethods([]string{"ES256"}))
	if err != nil || parsed.Header["kid"] != "KID" || c["iss"] != "TEAM" || c["iat"] != float64(now.Unix()) {
		t.Fatalf("the token: %v %v %v", err, parsed.Header, c)
	}
	now = now.Add(39 * time.Minute)
	if get() != a {
		t.Fatal("made again before 40 minutes")
	}
	now = now.Add(2 * time.Minute)
	b := get()
	if b == a {
		t.Fatal("not made again after 40 minutes")
	}
	if !tk.renew(a) || get() != b { // a refusal of a token already replaced: b is there to try
		t.Fatal("a refusal of an old token replaced the new one")
	}
	now = now.Add(time.Minute)
	tk.renew(b)
	c2 := get()
	if c2 == b {
		t.Fatal("a refused token was not made again at once")
	}
	now = now.Add(5 * time.Minute)
	if tk.renew(c2) || get() != c2 { // nothing new to try
		t.Fatal("made again twice within 20 minutes")
	}
	now = now.Add(16 * time.Minute)
	tk.renew(c2)
	if get() == c2 {
		t.Fatal("a refusal 21 minutes after an early renewal kept the token")
	}
}
