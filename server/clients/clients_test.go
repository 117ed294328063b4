package clients

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestIdentifyClient(t *testing.T) {
	proxies, err := ParseTrustedProxies("10.0.0.0/8, 192.168.1.7,::1/128")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		remote  string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{"no proxies trusted: the header is ignored", "203.0.113.9:4000", []string{"198.51.100.1"}, nil, "203.0.113.9"},
		{"a peer that is not a trusted proxy cannot name the client", "203.0.113.9:4000", []string{"198.51.100.1"}, proxies, "203.0.113.9"},
		{"a trusted proxy names the client", "10.1.2.3:4000", []string{"198.51.100.1"}, proxies, "198.51.100.1"},
		{"the right-most untrusted address, not what the client wrote", "10.1.2.3:4000", []string{"6.6.6.6, 198.51.100.1, 192.168.1.7"}, proxies, "198.51.100.1"},
		{"several headers read as one list", "10.1.2.3:4000", []string{"6.6.6.6", "198.51.100.1", "10.9.9.9"}, proxies, "198.51.100.1"},
		{"a trusted proxy without the header", "10.1.2.3:4000", nil, proxies, "10.1.2.3"},
		{"every hop trusted: the left-most", "10.1.2.3:4000", []string{"10.4.4.4, 192.168.1.7"}, proxies, "10.4.4.4"},
		{"garbage stops the walk at the last trusted hop", "10.1.2.3:4000", []string{"6.6.6.6, garbage"}, proxies, "10.1.2.3"},
		{"IPv6 peer named by a trusted proxy: its /64", "[::1]:4000", []string{"2001:db8::5"}, proxies, "2001:db8::/64"},
		{"IPv4 in IPv6 is one client", "[::ffff:203.0.113.9]:4000", nil, nil, "203.0.113.9"},
		{"an address with a port in the header", "10.1.2.3:4000", []string{"198.51.100.1:5555"}, proxies, "198.51.100.1"},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := (Identify{Trusted: tc.trusted}).Client(r); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "nonsense", "10.0.0.0/8,x"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q): no error", bad)
		}
	}
}

// TestClientKeyIPv6Prefix: an IPv6 client counts by its /64 (or the
// configured prefix), so one host's 2^64 addresses are one client; an
// IPv4 client by its address.
func TestClientKeyIPv6Prefix(t *testing.T) {
	tests := []struct {
		name   string
		remote string
		bits   int
		want   string
	}{
		{"IPv4: the address", "203.0.113.9:4000", 64, "203.0.113.9"},
		{"IPv4 ignores the IPv6 prefix", "203.0.113.9:4000", 48, "203.0.113.9"},
		{"IPv4 in IPv6: the IPv4 address", "[::ffff:203.0.113.9]:4000", 64, "203.0.113.9"},
		{"IPv6: its /64", "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:4000", 64, "2001:db8:1:2::/64"},
		{"another address in the same /64 is the same client", "[2001:db8:1:2::1]:5000", 64, "2001:db8:1:2::/64"},
		{"the next /64 is another client", "[2001:db8:1:3::1]:5000", 64, "2001:db8:1:3::/64"},
		{"0 means the default /64", "[2001:db8:1:2::1]:5000", 0, "2001:db8:1:2::/64"},
		{"a /48 groups a site", "[2001:db8:1:2::1]:5000", 48, "2001:db8:1::/48"},
		{"/128 counts each address", "[2001:db8:1:2::1]:5000", 128, "2001:db8:1:2::1"},
		{"a zone is not part of the client", "[fe80::1%eth0]:5000", 64, "fe80::/64"},
		{"loopback", "[::1]:5000", 64, "::/64"},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if got := (Identify{IPv6Prefix: tc.bits}).Client(r); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// The zero Identify groups by the default /64.
	a, b := httptest.NewRequest("GET", "/", nil), httptest.NewRequest("GET", "/", nil)
	a.RemoteAddr, b.RemoteAddr = "[2001:db8::1]:1", "[2001:db8::ffff:2]:2"
	if id := (Identify{}); id.Client(a) != id.Client(b) {
		t.Errorf("two addresses of one /64 are two clients: %q, %q", id.Client(a), id.Client(b))
	}
	for _, bad := range []int{0, 8, 129, -1} {
		if CheckIPv6Prefix(bad) == nil {
			t.Errorf("CheckIPv6Prefix(%d): no error", bad)
		}
	}
	for _, good := range []int{16, 48, 64, 128} {
		if err := CheckIPv6Prefix(good); err != nil {
			t.Errorf("CheckIPv6Prefix(%d): %v", good, err)
		}
	}
}
