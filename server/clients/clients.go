// Package clients says who a client is, and holds what feed and room
// sockets and event streams share: a cap on the sockets one client holds
// open, the pings that find half-open connections, a socket's one writer
// (Writer) and an event stream's (Events).
//
// A request comes from its
// client address, which every per-client limit (room creation, rooms held,
// open sockets) counts against. It is the socket's peer address, unless that
// peer is a proxy the operator trusts (serve --trusted-proxy), in which case
// the proxy's X-Forwarded-For names the client: the right-most address in it
// that is not itself a trusted proxy. A client can put anything in the
// header, but only the part its proxies appended is believed.
//
// An IPv4 client is its address. An IPv6 client is the network its address
// is in, /64 by default (serve --ipv6-prefix): one host is given a whole /64
// (SLAAC, privacy addresses), so counting each address would give one
// client 2^64 shares of every limit.
package clients

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies parses serve --trusted-proxy: CIDRs separated by
// commas ("10.0.0.0/8,192.168.1.7/32"); a bare address means itself alone.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: want a CIDR such as 10.0.0.0/8 or an address", part)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want a CIDR such as 10.0.0.0/8 or an address", part)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// DefaultIPv6Prefix is how many leading bits of an IPv6 address name one
// client: a /64 is what one host or one home is given.
const DefaultIPv6Prefix = 64

// CheckIPv6Prefix checks serve --ipv6-prefix.
func CheckIPv6Prefix(bits int) error {
	if bits < 16 || bits > 128 {
		return fmt.Errorf("ipv6 prefix /%d: want 16 to 128 bits (64 groups a host's addresses; 128 counts each address)", bits)
	}
	return nil
}

// Identify says who a client is, for every per-client limit of one
// server: the rooms one creates and holds, the tags it fetches, the notes
// it writes, the sockets and streams it holds open, the connections it
// makes (LimitConns). The server makes one from --trusted-proxy and
// --ipv6-prefix and every limit asks it, so that all of them count one
// client alike. The zero Identify trusts no proxy and groups IPv6 by
// DefaultIPv6Prefix.
type Identify struct {
	Trusted    []netip.Prefix // proxies whose X-Forwarded-For names the client
	IPv6Prefix int            // bits that name an IPv6 client; 0 means DefaultIPv6Prefix
}

// Client is the name r's client counts under: the client address (the
// package comment says which) as Key names it.
func (id Identify) Client(r *http.Request) string {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	return Key(clientOf(r, peer, id.Trusted), id.IPv6Prefix)
}

// Conn is the name a connection from remote counts under, and false when
// it is not counted: it comes from a trusted proxy, which speaks for many
// clients (only its requests say which), or from an address that is not
// IP.
func (id Identify) Conn(remote net.Addr) (string, bool) {
	peer, ok := parseAddr(remote.String())
	if !ok || isTrusted(peer, id.Trusted) {
		return "", false
	}
	return Key(peer, id.IPv6Prefix), true
}

// Key is the name one client's address counts under: an IPv4 address
// itself, an IPv6 address its network of v6bits bits ("2001:db8:1:2::/64";
// 0 means DefaultIPv6Prefix, 128 the address alone).
func Key(a netip.Addr, v6bits int) string {
	a = a.WithZone("").Unmap()
	if !a.Is6() {
		return a.String()
	}
	if v6bits <= 0 {
		v6bits = DefaultIPv6Prefix
	}
	if v6bits >= 128 {
		return a.String()
	}
	return netip.PrefixFrom(a, v6bits).Masked().String()
}

// clientOf is the client a request from peer is for.
func clientOf(r *http.Request, peer netip.Addr, trusted []netip.Prefix) netip.Addr {
	if !isTrusted(peer, trusted) {
		return peer
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		list := strings.Split(hops[i], ",")
		for j := len(list) - 1; j >= 0; j-- {
			a, ok := parseAddr(strings.TrimSpace(list[j]))
			if !ok {
				// Not an address: the chain is broken here, and what is
				// left of it cannot be believed.
				return client
			}
			client = a
			if !isTrusted(a, trusted) {
				return a
			}
		}
	}
	return client // every hop was a trusted proxy: the left-most
}

// parseAddr reads "host:port", "[v6]:port" or a bare address, with IPv4
// in IPv6 unmapped so one client has one spelling.
func parseAddr(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
