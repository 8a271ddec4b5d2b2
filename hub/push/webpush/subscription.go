package webpush

import (
	"crypto/ecdh"
	"errors"
	"net/netip"
	"net/url"
)

// Subscription is a browser's PushSubscription.toJSON().
type Subscription struct {
	Endpoint       string `json:"endpoint"`
	ExpirationTime *int64 `json:"expirationTime"`
	Keys           struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// maxEndpoint bounds an endpoint's length (push services' are ~200 bytes).
const maxEndpoint = 2048

// errNotAPushService is the one answer for an endpoint whose host is not
// allowed or whose address literal is not public: it says nothing about
// the hub's network (no "does not resolve", no "is private"), so nobody
// can map internal names through it.
var errNotAPushService = errors.New("endpoint: not a push service this hub sends to")

// Check says what is wrong with a subscription, or nil: an https endpoint
// with no credentials in it, whose host is one of allowed (or below one;
// "*" any) and, when it is an address, a Public one (unless allowPrivate:
// tests and dev only); a p256dh that is a P-256 point; an auth of 16
// bytes. A name is not resolved here: the sender's dialer checks the
// address of every connection it makes.
func (s Subscription) Check(allowed []string, allowPrivate bool) error {
	if s.Endpoint == "" || len(s.Endpoint) > maxEndpoint {
		return errors.New("endpoint: required, at most 2,048 bytes")
	}
	u, err := url.Parse(s.Endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" {
		return errors.New("endpoint: an https URL without credentials")
	}
	if _, err := s.Decode(); err != nil {
		return err
	}
	if s.ExpirationTime != nil && *s.ExpirationTime < 0 {
		return errors.New("expirationTime: null or epoch milliseconds")
	}
	host := u.Hostname()
	if !HostAllowed(host, allowed) {
		return errNotAPushService
	}
	if a, err := netip.ParseAddr(host); err == nil && !allowPrivate && !Public(a) {
		return errNotAPushService
	}
	return nil
}

// SubKeys are a subscription's decoded keys.
type SubKeys struct {
	P256dh, Auth []byte
}

// Decode reads the subscription's keys: a P-256 point and 16 bytes.
func (s Subscription) Decode() (SubKeys, error) {
	switch {
	case s.Keys.P256dh == "" && s.Keys.Auth == "":
		return SubKeys{}, errors.New(`keys: required, {"p256dh","auth"} as the browser's PushSubscription.toJSON() gives them`)
	case s.Keys.P256dh == "":
		return SubKeys{}, errors.New("keys.p256dh: required")
	case s.Keys.Auth == "":
		return SubKeys{}, errors.New("keys.auth: required")
	}
	p, err := decodeB64(s.Keys.P256dh)
	if err != nil {
		return SubKeys{}, errors.New("keys.p256dh: not base64url")
	}
	if _, err := ecdh.P256().NewPublicKey(p); err != nil {
		return SubKeys{}, errors.New("keys.p256dh: not an uncompressed P-256 point")
	}
	a, err := decodeB64(s.Keys.Auth)
	if err != nil || len(a) != 16 {
		return SubKeys{}, errors.New("keys.auth: 16 bytes of base64url")
	}
	return SubKeys{P256dh: p, Auth: a}, nil
}
