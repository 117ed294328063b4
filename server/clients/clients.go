// Package clients says who a client is, and holds what feed and room
// sockets share: a cap on the sockets one client holds open, and the pings
// that find half-open connections.
//
// A request comes from its
// client address, which every per-client limit (room creation, rooms held,
// open sockets) counts against. It is the socket's peer address, unless that
// peer is a proxy the operator trusts (serve --trusted-proxy), in which case
// the proxy's X-Forwarded-For names the client: the right-most address in it
// that is not itself a trusted proxy. A client can put anything in the
// header, but only the part its proxies appended is believed.
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

// Addr is the address a request counts against in every per-client
// limit. trusted are the proxies allowed to name the client.
func Addr(r *http.Request, trusted []netip.Prefix) string {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	if !isTrusted(peer, trusted) {
		return peer.String()
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
				return client.String()
			}
			client = a
			if !isTrusted(a, trusted) {
				return a.String()
			}
		}
	}
	return client.String() // every hop was a trusted proxy: the left-most
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
