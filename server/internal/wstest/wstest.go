// Package wstest holds what the tests of the server and its packages do
// with websockets: address a test server's socket, send a relay's batch.
package wstest

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/relay"
)

// URL is the websocket address of path on ts.
func URL(ts *httptest.Server, path string) string {
	return "ws" + strings.TrimPrefix(ts.URL, "http") + path
}

// Send sends a relay's batch of lines on c, an ingest socket, and returns
// the server's ack: the id of the last line it stored.
func Send(t testing.TB, ctx context.Context, c *websocket.Conn, lines ...relay.Line) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"lines": lines})
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("send: %v", err)
	}
	_, ack, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read ack: %v", err)
	}
	var m struct{ Ack string }
	if err := json.Unmarshal(ack, &m); err != nil {
		t.Fatalf("ack %q: %v", ack, err)
	}
	return m.Ack
}
