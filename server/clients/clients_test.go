package clients

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
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
		{"IPv6 peer", "[::1]:4000", []string{"2001:db8::5"}, proxies, "2001:db8::5"},
		{"IPv4 in IPv6 is one client", "[::ffff:203.0.113.9]:4000", nil, nil, "203.0.113.9"},
		{"an address with a port in the header", "10.1.2.3:4000", []string{"198.51.100.1:5555"}, proxies, "198.51.100.1"},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := Addr(r, tc.trusted); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "nonsense", "10.0.0.0/8,x"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q): no error", bad)
		}
	}
}
