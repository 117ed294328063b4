package clients

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestLimitConns: one address holds at most its cap of connections; one
// over it reads a 429 and is closed; a closed one gives its place back;
// another address and a trusted proxy are not held to the first's count.
func TestLimitConns(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := netip.MustParsePrefix("127.0.0.3/32")
	ln := LimitConns(tcp, 2, Identify{Trusted: []netip.Prefix{proxy}})
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func(from string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", tcp.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	take := func(what string) net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: not accepted", what)
			return nil
		}
	}
	refused := func(c net.Conn, what string) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		if !strings.HasPrefix(string(b), "HTTP/1.1 429 ") || !strings.Contains(string(b), "too many connections") {
			t.Errorf("%s: read %q, want a 429 that says why", what, b)
		}
	}

	dial("127.0.0.2")
	first := take("the first from 127.0.0.2")
	dial("127.0.0.2")
	take("the second from 127.0.0.2")
	refused(dial("127.0.0.2"), "the third from 127.0.0.2")
	dial("127.0.0.1")
	take("the first from 127.0.0.1")
	for i := range 4 {
		dial("127.0.0.3")
		take("a trusted proxy's connection " + string(rune('1'+i)))
	}
	if got := ln.Refused(); got != 1 {
		t.Errorf("Refused() = %d, want 1", got)
	}
	first.Close()
	first.Close() // closing twice gives back one place only
	dial("127.0.0.2")
	take("127.0.0.2's once one of its own closed")
	refused(dial("127.0.0.2"), "127.0.0.2's over its cap again")
}

// fixedAddrs is a listener whose connections come from the addresses
// given, one each: the IPv6 clients a test cannot dial from.
type fixedAddrs struct {
	net.Listener // nil: only Accept and Close are called
	from         chan string
	clients      chan net.Conn
}

func (l *fixedAddrs) Accept() (net.Conn, error) {
	a, ok := <-l.from
	if !ok {
		return nil, net.ErrClosed
	}
	server, client := net.Pipe()
	l.clients <- client
	return fromAddr{server, net.TCPAddrFromAddrPort(netip.MustParseAddrPort(a))}, nil
}

func (l *fixedAddrs) Close() error { return nil }

type fromAddr struct {
	net.Conn
	remote net.Addr
}

func (c fromAddr) RemoteAddr() net.Addr { return c.remote }

// TestLimitConnsIPv6Prefix: the connection cap counts an IPv6 client as
// every other limit does, by --ipv6-prefix (Identify.IPv6Prefix), not
// always by /64: at /128 two addresses of one /64 are two clients, at /48
// two /64s of one /48 are one.
func TestLimitConnsIPv6Prefix(t *testing.T) {
	for _, tc := range []struct {
		bits         int
		first, other string
		refused      bool
	}{
		{128, "[2001:db8:1:2::1]:1000", "[2001:db8:1:2::2]:1000", false},
		{64, "[2001:db8:1:2::1]:1000", "[2001:db8:1:2::2]:1000", true},
		{48, "[2001:db8:1:2::1]:1000", "[2001:db8:1:3::1]:1000", true},
	} {
		l := &fixedAddrs{from: make(chan string, 2), clients: make(chan net.Conn, 2)}
		ln := LimitConns(l, 1, Identify{IPv6Prefix: tc.bits})
		l.from <- tc.first
		l.from <- tc.other
		close(l.from)
		var accepted int
		for {
			c, err := ln.Accept()
			if err != nil {
				break
			}
			defer c.Close()
			accepted++
		}
		if got := ln.Refused() == 1; got != tc.refused || accepted+int(ln.Refused()) != 2 {
			t.Errorf("/%d, %s then %s: %d accepted, %d refused; want the second refused: %v",
				tc.bits, tc.first, tc.other, accepted, ln.Refused(), tc.refused)
		}
		if tc.refused {
			<-l.clients
			c := <-l.clients
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if b, _ := io.ReadAll(c); !strings.HasPrefix(string(b), "HTTP/1.1 429 ") {
				t.Errorf("/%d: the refused connection read %q, want a 429", tc.bits, b)
			}
		}
	}
}
