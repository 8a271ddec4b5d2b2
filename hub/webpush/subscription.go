package webpush

import (
	"context"
	"crypto/ecdh"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
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

// Resolver finds a host's addresses (net.DefaultResolver.LookupNetIP in the hub).
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// Check says what is wrong with a subscription, or nil: an https endpoint
// with no credentials in it, whose host is no loopback, link-local or
// private address and resolves to none (unless allowPrivate: tests and dev
// only); a p256dh that is a P-256 point; an auth of 16 bytes.
func (s Subscription) Check(ctx context.Context, allowPrivate bool, resolve Resolver) error {
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
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if !Public(a) {
			return errors.New("endpoint: a loopback, link-local or private address")
		}
		return nil
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return errors.New("endpoint: a loopback address")
	}
	addrs, err := resolve(ctx, host)
	if err != nil || len(addrs) == 0 {
		return errors.New("endpoint: its host does not resolve")
	}
	for _, a := range addrs {
		if !Public(a) {
			return errors.New("endpoint: its host resolves to a loopback, link-local or private address")
		}
	}
	return nil
}

// SubKeys are a subscription's decoded keys.
type SubKeys struct {
	P256dh, Auth []byte
}

// Decode reads the subscription's keys: a P-256 point and 16 bytes.
func (s Subscription) Decode() (SubKeys, error) {
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

// cgnat is the shared address space of carrier-grade NAT (RFC 6598).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// Public says whether a is an address a push may go to: not loopback,
// link-local (169.254.169.254, a cloud's metadata, among them), private,
// shared (CGNAT), unspecified or multicast.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && !a.IsLoopback() && !a.IsPrivate() && !a.IsLinkLocalUnicast() && !a.IsLinkLocalMulticast() &&
		!a.IsInterfaceLocalMulticast() && !a.IsMulticast() && !a.IsUnspecified() && !cgnat.Contains(a) &&
		!(a.Is4() && a.As4()[0] == 0)
}

// guard is a dialer's Control: it refuses to connect to an address that is
// not Public, whatever a name resolved to at subscription time (DNS may
// have changed since).
func guard(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if !Public(ap.Addr()) {
		return &net.AddrError{Err: "a push to a loopback, link-local or private address", Addr: address}
	}
	return nil
}
