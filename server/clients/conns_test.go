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
	ln := LimitConns(tcp, 2, []netip.Prefix{proxy})
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
