package feeds

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// TestGrantToken: a feed granted a token takes only that one; one
// granted again closes a relay holding the old at its next batch; an
// empty grant opens nothing; a revoked feed takes
// the server's token again.
func TestGrantToken(t *testing.T) {
	l, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const feed = "room-abc"
	dial := func(token string) (*websocket.Conn, int, string) {
		t.Helper()
		c, resp, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/"+feed+"/ingest"), &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
		})
		if err != nil {
			if resp == nil {
				t.Fatalf("dial with %q: %v", token, err)
			}
			body, _ := io.ReadAll(resp.Body)
			return nil, resp.StatusCode, string(body)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c, http.StatusSwitchingProtocols, ""
	}
	send := func(c *websocket.Conn, id string) error {
		b, _ := json.Marshal(map[string]any{"lines": []relay.Line{{ID: id, Raw: "line " + id}}})
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			return err
		}
		_, msg, err := c.Read(ctx)
		if err == nil && !strings.Contains(string(msg), `"ack":"`+id+`"`) {
			t.Fatalf("after line %s: %s, want its ack", id, msg)
		}
		return err
	}

	l.GrantToken(feed, "own")
	if _, status, body := dial(testToken); status != http.StatusUnauthorized || !strings.Contains(body, "room's feed") {
		t.Fatalf("the server's token on a feed granted its own: %d %q, want 401 naming the room's token", status, body)
	}
	c, status, _ := dial("own")
	if c == nil {
		t.Fatalf("the granted token: status %d", status)
	}
	if err := send(c, "1"); err != nil {
		t.Fatalf("a line with the granted token: %v", err)
	}

	l.GrantToken(feed, "new") // rotated
	err := send(c, "2")
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("a line after the grant changed: %v, want closed with policy violation", err)
	}
	if _, status, _ := dial("own"); status != http.StatusUnauthorized {
		t.Fatalf("the old token after the grant changed: %d, want 401", status)
	}

	l.GrantToken(feed, "")
	for _, tok := range []string{"", testToken, "own", "new"} {
		if _, status, _ := dial(tok); status != http.StatusUnauthorized {
			t.Fatalf("token %q on a feed granted none: %d, want 401", tok, status)
		}
	}

	l.RevokeToken(feed)
	c, status, _ = dial(testToken)
	if c == nil {
		t.Fatalf("the server's token after revoke: status %d", status)
	}
	if err := send(c, "3"); err != nil {
		t.Fatalf("a line after revoke: %v", err)
	}
	if _, status, _ := dial("new"); status != http.StatusUnauthorized {
		t.Fatalf("a revoked token: %d, want 401", status)
	}
}
