package main

// What one client address can hold of a real `syncloop serve`: its share
// of the connections, and no connection past its read timeout while it
// sends a body. That long-lived sockets and event streams are not cut
// off by the read timeout is tested in server (TestReadTimeoutSpares...).

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveForTest runs `syncloop serve` with args on a loopback port of
// 127.0.0.1 until the test ends, and returns its base URL (no slash).
func serveForTest(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr lockedBuffer
	done := make(chan error, 1)
	args = append([]string{"syncloop", "serve", "--addr", "127.0.0.1:0", "--cache-dir", t.TempDir(), "--data-dir", t.TempDir()}, args...)
	// No tag is fetched: these tests need none.
	go func() {
		done <- run(ctx, args, goEnv(map[string]string{"GOPROXY": "off"}), strings.NewReader(""), io.Discard, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop within 15s")
		}
	})
	return "http://" + servingAt(t, &stderr, done, 20*time.Second)
}

// clientFrom is an HTTP client whose connections come from the loopback
// address local (Linux routes all of 127/8 to lo).
func clientFrom(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return &http.Client{
		Timeout:       10 * time.Second,
		Transport:     &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 2},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// TestServeSlowBodies: one address's slow bodies take only its share of
// the connections, and are cut at the read timeout; another address is
// served meanwhile. "Meanwhile" is measured against the read timeout, the
// moment 127.0.0.2's connections would be freed anyway: a page for
// 127.0.0.1 that waited that long could have waited for them. It was a
// bound of 1 s (the read timeout then) that a loaded machine crossed
// (1.07 s) without any waiting on 127.0.0.2, so the read timeout is 3 s.
func TestServeSlowBodies(t *testing.T) {
	const (
		readTimeout = 3 * time.Second
		perClient   = 8
		slow        = 100
	)
	base := serveForTest(t, "--read-timeout", readTimeout.String(), "--conns-per-client", fmt.Sprint(perClient))
	hostPort := strings.TrimPrefix(base, "http://")
	page := base + "/no/such/page" // the site's own 404 page: no tag need be fetched
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// 127.0.0.2 opens many connections, each starting a body that never comes.
	type result struct {
		refused bool
		conn    net.Conn
	}
	results := make(chan result, slow)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	for range slow {
		go func() {
			c, err := d.DialContext(ctx, "tcp", hostPort)
			if err != nil {
				t.Errorf("dial from 127.0.0.2: %v", err)
				results <- result{}
				return
			}
			fmt.Fprintf(c, "POST /rooms HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000000\r\n\r\ntag=", hostPort)
			// A refusal comes at once; a held connection hears nothing
			// before the read timeout.
			c.SetReadDeadline(time.Now().Add(readTimeout / 2))
			b := make([]byte, 64)
			n, _ := io.ReadFull(c, b[:12])
			if strings.HasPrefix(string(b[:n]), "HTTP/1.1 429") {
				c.Close()
				results <- result{refused: true}
				return
			}
			c.SetReadDeadline(time.Time{})
			results <- result{conn: c}
		}()
	}
	// Meanwhile 127.0.0.1 reads a page, each before the read timeout
	// could have freed 127.0.0.2's connections.
	reader := clientFrom("127.0.0.1")
	var slowest time.Duration
	for range 5 {
		start := time.Now()
		resp, err := reader.Get(page)
		if err != nil {
			t.Fatalf("GET the page from 127.0.0.1 while 127.0.0.2 holds its connections: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		slowest = max(slowest, took)
		if resp.StatusCode != http.StatusNotFound || took >= readTimeout {
			t.Errorf("GET a page from 127.0.0.1: %d in %v; want the 404 page before the read timeout (%v) frees 127.0.0.2's connections", resp.StatusCode, took, readTimeout)
		}
		time.Sleep(50 * time.Millisecond) // sleep: the GETs are spread over the time 127.0.0.2's connections are held
	}
	var held []net.Conn
	refused := 0
	for range slow {
		r := <-results
		switch {
		case r.refused:
			refused++
		case r.conn != nil:
			held = append(held, r.conn)
		}
	}
	if len(held) > perClient || refused < slow-perClient {
		t.Errorf("127.0.0.2 holds %d connections, %d refused; want at most %d held", len(held), refused, perClient)
	}
	// The slow bodies are given up on once the read timeout passes.
	start := time.Now()
	deadline := start.Add(readTimeout + 3*time.Second)
	for _, c := range held {
		c.SetReadDeadline(deadline)
		_, err := io.Copy(io.Discard, c)
		c.Close()
		if err != nil {
			t.Errorf("a slow body's connection still open %v after it began: %v", time.Since(start), err)
		}
	}
	t.Logf("127.0.0.2: %d held, %d refused; 127.0.0.1's slowest page %v; the held closed %v after",
		len(held), refused, slowest.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	// 127.0.0.2 has its share back.
	resp, err := clientFrom("127.0.0.2").Get(page)
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET a page from 127.0.0.2 once its slow connections ended: %v %v", err, resp)
	}
	resp.Body.Close()

}
