package webpush

import (
	"net"
	"net/netip"
	"strings"
)

// HostAllowed says whether host (lower case, no port) is one of allowed or
// below one of them; "*" allows any host.
func HostAllowed(host string, allowed []string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, a := range allowed {
		a = strings.TrimSuffix(strings.ToLower(a), ".")
		if a == "*" || host == a || strings.HasSuffix(host, "."+a) {
			return true
		}
	}
	return false
}

// notGlobal are the address blocks a push never goes to: IANA's
// special-purpose registries (RFC 6890 and its updates), and the IPv6
// prefixes that carry an IPv4 address inside (so 169.254.169.254 cannot be
// reached as 64:ff9b::a9fe:a9fe or 2002:a9fe:a9fe::).
var notGlobal = prefixes(
	// IPv4
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
	"192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24", "192.168.0.0/16",
	"192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
	// IPv6
	"::/96", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
	"2002::/16", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
)

// globalUnicast is the IPv6 space routed on the internet (2000::/3).
var globalUnicast = netip.MustParsePrefix("2000::/3")

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Public says whether a is an address a push may go to: a global unicast
// address in no special-purpose block (loopback, private, link-local and a
// cloud's metadata at 169.254.169.254, shared, reserved, documentation,
// benchmarking, multicast) and no IPv6 form of an IPv4 address (mapped,
// IPv4-compatible, NAT64, 6to4, Teredo).
func Public(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	a = a.Unmap()
	if a.Is6() && !globalUnicast.Contains(a) {
		return false // only the global unicast space is routed on the internet
	}
	for _, p := range notGlobal {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// errRefusedAddress is what a dialer's guard answers for an address that
// is not Public: it names neither the address nor the host, so a push's
// error code (NETWORK) says nothing of the hub's network.
var errRefusedAddress = &net.AddrError{Err: "a push to an address that is not public"}

// guard is a dialer's Control: it refuses to connect to an address that is
// not Public, whatever the name resolved to (checked at every connection,
// so a name that resolves elsewhere later gains nothing: DNS rebinding).
func guard(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !Public(ap.Addr()) {
		return errRefusedAddress
	}
	return nil
}
