package main

// Security tests against a real `syncloop serve`: who may read a feed from a
// browser (same origin only), who may write one (the token), what the
// static file server and the feed names let out (nothing outside the site),
// and how an oversized ingest message is refused.
//
// Rooms' rules (a viewer's steering messages refused, 1,000 rooms by one
// client rate-limited) are tested in server/rooms_test.go (TestRoomRoles,
// TestRoomLimits) and against a real process in e2e_rooms_test.go.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
)

const secToken = "sec-token-7f3a"

func startSecServer(t *testing.T) string {
	t.Helper()
	bin := syncloopBin(t)
	cache := filepath.Join(t.TempDir(), "cache")
	copyReadingCache(cache, extractor.DefaultTag)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := start(t, "serve", bin, "serve", "--addr", addr, "--token", secToken, "--cache-dir", cache, "--data-dir", filepath.Join(filepath.Dir(cache), "data"), "--log-level", "warn")
	waitHealthy(t, "http://"+addr, srv)
	return addr
}

func TestE2ESecurity(t *testing.T) {
	t.Parallel() // its own processes, ports and directories
	addr := startSecServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("browser websocket: same origin only", func(t *testing.T) {
		for _, tc := range []struct {
			origin string
			ok     bool
		}{
			{"http://" + addr, true},
			{"", true}, // not a browser: Origin protects a reader's browser, not the feed
			{"http://evil.example", false},
			{"https://evil.example", false},
			{"null", false},
			{"http://" + addr + ".evil.example", false},
			{"http://127.0.0.1:1", false},
			{"http://localhost:" + strings.SplitN(addr, ":", 2)[1], false},
		} {
			h := http.Header{}
			if tc.origin != "" {
				h.Set("Origin", tc.origin)
			}
			c, resp, err := websocket.Dial(ctx, "ws://"+addr+"/feeds/default/ws", &websocket.DialOptions{HTTPHeader: h})
			if tc.ok {
				if err != nil {
					t.Errorf("Origin %q: refused: %v", tc.origin, err)
					continue
				}
				_, b, err := c.Read(ctx)
				if err != nil || !strings.HasPrefix(string(b), `{"hello":`) {
					t.Errorf("Origin %q: no hello (%v): %.80s", tc.origin, err, b)
				}
				c.Close(websocket.StatusNormalClosure, "")
				continue
			}
			if err == nil {
				c.CloseNow()
				t.Errorf("Origin %q: accepted, want refused", tc.origin)
				continue
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Errorf("Origin %q: %v, want 403 Forbidden", tc.origin, err)
			}
		}
	})

	t.Run("ingest: token required, feed untouched", func(t *testing.T) {
		const feed = "sec-ingest"
		url := "ws://" + addr + "/feeds/" + feed + "/ingest"
		for _, tc := range []struct {
			name string
			hdr  http.Header
			url  string
		}{
			{"no token", nil, url},
			{"wrong token", http.Header{"Authorization": {"Bearer wrong"}}, url},
			{"token with a suffix", http.Header{"Authorization": {"Bearer " + secToken + "x"}}, url},
			{"token prefix", http.Header{"Authorization": {"Bearer " + secToken[:5]}}, url},
			{"empty bearer", http.Header{"Authorization": {"Bearer "}}, url},
			{"basic scheme", http.Header{"Authorization": {"Basic " + secToken}}, url},
			{"token in the query", nil, url + "?token=" + secToken},
			{"token as a cookie", http.Header{"Cookie": {"token=" + secToken}}, url},
		} {
			c, resp, err := websocket.Dial(ctx, tc.url, &websocket.DialOptions{HTTPHeader: tc.hdr})
			if err == nil {
				c.CloseNow()
				t.Errorf("%s: ingest accepted", tc.name)
				continue
			}
			if resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: %v, want 401", tc.name, err)
			}
		}
		if v := metric(t, addr, `syncloop_lines_ingested_total{feed="`+feed+`"}`); v > 0 {
			t.Errorf("feed %s has %d lines after refused ingests", feed, v)
		}
		// The right token works: the refusals above were the token's doing.
		c := ingestConn(t, ctx, url)
		sendLines(t, ctx, c, "ok-1", 3)
		if v := metric(t, addr, `syncloop_lines_ingested_total{feed="`+feed+`"}`); v != 3 {
			t.Errorf("feed %s has %d lines after one ingest of 3 with the token", feed, v)
		}
		c.Close(websocket.StatusNormalClosure, "")
	})

	t.Run("feed names cannot leave the feed directory", func(t *testing.T) {
		for _, name := range []string{"..%2f..%2fetc%2fpasswd", "%2e%2e", ".hidden", "a%00b", strings.Repeat("a", 65)} {
			for _, ep := range []string{"ws", "ingest"} {
				status, _ := rawGet(t, addr, "/feeds/"+name+"/"+ep, "Authorization: Bearer "+secToken)
				if status != http.StatusNotFound {
					t.Errorf("/feeds/%s/%s: %d, want 404", name, ep, status)
				}
			}
		}
	})

	t.Run("static files: no path traversal", func(t *testing.T) {
		if status, body := rawGet(t, addr, "/static/style.css"); status != 200 || len(body) == 0 {
			t.Fatalf("/static/style.css: %d: the control request failed", status)
		}
		for _, p := range []string{
			"/static/../go.mod",
			"/static/../../go.mod",
			"/static/%2e%2e/go.mod",
			"/static/%2E%2E/%2E%2E/go.mod",
			"/static/%2e%2e%2fgo.mod",
			"/static/..%2fgo.mod",
			"/static/..%5cgo.mod",
			"/static/..\\go.mod",
			"/static/%252e%252e/go.mod",
			"/static/....//go.mod",
			"/static/./../main.go",
			"/static//etc/passwd",
			"/static/%2fetc%2fpasswd",
			"//etc/passwd",
			"/static/static.go",
			"/static/style.css/../../go.mod",
			"/static/style.css%00.go",
		} {
			status, body := rawGet(t, addr, p)
			if status == http.StatusOK || leaks(body) {
				t.Errorf("GET %s: %d, %.120q: want it refused", p, status, body)
			}
			if status >= 300 && status < 400 {
				t.Errorf("GET %s: redirected (%d): a traversal should be refused, not cleaned", p, status)
			}
		}
	})

	t.Run("oversized ingest message closed with a reason", func(t *testing.T) {
		const feed = "sec-big"
		url := "ws://" + addr + "/feeds/" + feed + "/ingest"
		// Just under 1 MiB is taken: the limit is where it says.
		c := ingestConn(t, ctx, url)
		msg := batchOfSize(t, "under", 1<<20-100)
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			t.Fatal(err)
		}
		if _, b, err := c.Read(ctx); err != nil || !strings.Contains(string(b), `"ack"`) {
			t.Fatalf("a %d-byte message: %v %s, want an ack", len(msg), err, b)
		}
		before := metric(t, addr, `syncloop_lines_ingested_total{feed="`+feed+`"}`)

		msg = batchOfSize(t, "over", 1<<20+1)
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			t.Fatal(err)
		}
		_, _, err := c.Read(ctx)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusMessageTooBig || !strings.Contains(ce.Reason, "1 MiB") {
			t.Fatalf("a %d-byte message: %v, want close 1009 with a reason naming the 1 MiB limit", len(msg), err)
		}
		t.Logf("closed: %d %q", ce.Code, ce.Reason)
		if after := metric(t, addr, `syncloop_lines_ingested_total{feed="`+feed+`"}`); after != before {
			t.Errorf("the refused message changed the feed: %d lines before, %d after", before, after)
		}

		// Not JSON: closed with a reason too.
		c = ingestConn(t, ctx, url)
		c.Write(ctx, websocket.MessageText, []byte("<html>"))
		_, _, err = c.Read(ctx)
		if !errors.As(err, &ce) || ce.Code != websocket.StatusUnsupportedData || ce.Reason == "" {
			t.Errorf("a message that is not JSON: %v, want close 1003 with a reason", err)
		}
	})
}

// leaks reports whether a body holds a file from outside the site.
func leaks(body string) bool {
	for _, s := range []string{"module github.com/syncloop", "root:x:", "package main", "package static", "go:embed"} {
		if strings.Contains(body, s) {
			return true
		}
	}
	return false
}

// rawGet sends a request line exactly as given (no client-side cleaning of
// the path) and returns the status and body.
func rawGet(t *testing.T, addr, path string, headers ...string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

func ingestConn(t *testing.T, ctx context.Context, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + secToken}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// sendLines sends n klog lines in one batch and waits for its ack.
func sendLines(t *testing.T, ctx context.Context, c *websocket.Conn, prefix string, n int) {
	t.Helper()
	var lines []map[string]string
	for i := range n {
		lines = append(lines, map[string]string{"id": fmt.Sprintf("%s-%d", prefix, i),
			"raw": fmt.Sprintf(`I1130 03:04:05.000000    4242 kubelet.go:2529] "SyncLoop ADD" source="api" n=%d`, i)})
	}
	b, _ := json.Marshal(map[string]any{"lines": lines})
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	_, ack, err := c.Read(ctx)
	if err != nil || !strings.Contains(string(ack), fmt.Sprintf(`"%s-%d"`, prefix, n-1)) {
		t.Fatalf("ack: %v %s", err, ack)
	}
}

// batchOfSize is an ingest message of exactly size bytes: 4 lines of klog
// text padded to fill it.
func batchOfSize(t *testing.T, prefix string, size int) []byte {
	t.Helper()
	build := func(pad int) []byte {
		var lines []map[string]string
		for i := range 4 {
			lines = append(lines, map[string]string{"id": fmt.Sprintf("%s-%d", prefix, i),
				"raw": fmt.Sprintf(`I1130 03:04:05.000000    4242 kubelet.go:2529] "SyncLoop ADD" pad=%s`, strings.Repeat("x", pad))})
		}
		b, _ := json.Marshal(map[string]any{"lines": lines})
		return b
	}
	base := len(build(0))
	pad := (size - base) / 4
	b := build(pad)
	extra := size - len(b) // 0 to 3 bytes short: lengthen the first line
	if extra > 0 {
		b = []byte(strings.Replace(string(b), "pad=", "pad="+strings.Repeat("y", extra), 1))
	}
	if len(b) != size {
		t.Fatalf("batchOfSize: built %d bytes, want %d", len(b), size)
	}
	return b
}
