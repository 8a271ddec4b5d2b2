package webpush

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// b64 is the encoding of keys on the wire: base64url without padding.
var b64 = base64.RawURLEncoding

// decodeB64 reads base64url, with or without padding (and standard
// base64, which some clients send).
func decodeB64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.StdEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64url")
}

// Keys is the hub's VAPID key pair (RFC 8292): P-256, the public key as
// browsers take it (applicationServerKey: base64url of the uncompressed
// point).
type Keys struct {
	priv   *ecdsa.PrivateKey
	Public string
}

// NewKeys makes a key pair.
func NewKeys() (Keys, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Keys{}, err
	}
	pub, _ := k.PublicKey.Bytes()
	return Keys{priv: k, Public: b64.EncodeToString(pub)}, nil
}

// ParseKeys reads a key pair (base64url: the 65-byte public point and the
// 32-byte private scalar) and checks that the two belong together.
func ParseKeys(public, private string) (Keys, error) {
	d, err := decodeB64(private)
	if err != nil || len(d) != 32 {
		return Keys{}, errors.New("the private key is not 32 bytes of base64url")
	}
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		return Keys{}, fmt.Errorf("the private key: %w", err)
	}
	p, err := decodeB64(public)
	if err != nil {
		return Keys{}, errors.New("the public key is not base64url")
	}
	pub, _ := k.PublicKey.Bytes()
	if string(p) != string(pub) {
		return Keys{}, errors.New("the public key is not the private key's")
	}
	return Keys{priv: k, Public: b64.EncodeToString(pub)}, nil
}

// Private is the private key, base64url (to print or store).
func (k Keys) Private() string {
	d, _ := k.priv.Bytes()
	return b64.EncodeToString(d)
}

// Valid says whether k holds a key pair.
func (k Keys) Valid() bool { return k.priv != nil }

// vapidLife is how long one VAPID token is good for (RFC 8292 allows 24 h).
const vapidLife = 12 * time.Hour

// Authorization is the header that signs a push to endpoint: "vapid t=<an
// ES256 JWT for the endpoint's origin, sub subject>, k=<the public key>".
func (k Keys) Authorization(endpoint, subject string, now time.Time) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", errors.New("webpush: an endpoint without an origin")
	}
	t, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"aud": u.Scheme + "://" + u.Host,
		"exp": now.Add(vapidLife).Unix(),
		"sub": subject,
	}).SignedString(k.priv)
	if err != nil {
		return "", err
	}
	return "vapid t=" + t + ", k=" + k.Public, nil
}
