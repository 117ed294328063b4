package clients

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultConnsPerClient is LimitConns's usual cap: twice the sockets a
// client may hold (DefaultSocketsPerClient), so that the sockets' own cap,
// with its clear refusal, binds first and a reader's pages still load
// beside them.
const DefaultConnsPerClient = 2 * DefaultSocketsPerClient

// connRefusal is what a connection over its client's cap reads before it
// is closed: a whole HTTP response, so a browser says why.
const connRefusal = "HTTP/1.1 429 Too Many Requests\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"Retry-After: 10\r\n" +
	"Connection: close\r\n" +
	"Content-Length: 75\r\n\r\n" +
	"too many connections from your address: close some and retry in a moment\n"

// ConnLimiter is a net.Listener that lets each client address hold at
// most max connections open at once (websockets included: they are
// connections until closed). One over the cap is answered 429 and closed
// at once. Connections from trusted proxies are not counted: the proxies
// speak for many clients, and the per-request limits tell those apart.
type ConnLimiter struct {
	net.Listener
	max int
	id  Identify

	refused atomic.Uint64

	mu   sync.Mutex
	open map[string]int // by client address
}

// LimitConns wraps ln so that each client, as id names it from a
// connection's address, holds at most max connections (0 means
// DefaultConnsPerClient).
func LimitConns(ln net.Listener, max int, id Identify) *ConnLimiter {
	if max <= 0 {
		max = DefaultConnsPerClient
	}
	return &ConnLimiter{Listener: ln, max: max, id: id, open: map[string]int{}}
}

// Refused is how many connections were refused over a client's cap.
func (l *ConnLimiter) Refused() uint64 { return l.refused.Load() }

// Accept returns the next connection whose client is under its cap.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client, counted := l.id.Conn(c.RemoteAddr())
		if !counted {
			return c, nil
		}
		l.mu.Lock()
		ok := l.open[client] < l.max
		if ok {
			l.open[client]++
		}
		l.mu.Unlock()
		if ok {
			return &limitedConn{Conn: c, release: func() { l.release(client) }}, nil
		}
		l.refused.Add(1)
		go refuse(c) // the next Accept must not wait for this client
	}
}

func (l *ConnLimiter) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[client]--; l.open[client] <= 0 {
		delete(l.open, client)
	}
}

// refuse answers c with connRefusal, within a second, and closes it.
func refuse(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write([]byte(connRefusal))
	c.Close()
}

// limitedConn gives its place back once, when it is closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
