package feeds

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// TestOwnedToken: an owned feed takes only the token its owner says;
// one its owner rotates closes a relay holding the old at its next
// batch; an empty token opens nothing; a feed its owner never had is
// 404, one it closed takes no lines (410), one it let go is 410 for any
// token, in the owner's words.
func TestOwnedToken(t *testing.T) {
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

	var mu sync.Mutex
	own := Owned{Token: "own", WrongToken: "missing or wrong token for this room's feed"}
	var ownErr error
	l.Own("room-", func(name string) (Owned, error) {
		mu.Lock()
		defer mu.Unlock()
		if name != feed {
			return Owned{}, errors.New("no such room")
		}
		return own, ownErr
	})
	set := func(f func()) { mu.Lock(); f(); mu.Unlock() }

	if _, status, body := dial(testToken); status != http.StatusUnauthorized || !strings.Contains(body, "room's feed") {
		t.Fatalf("the server's token on an owned feed: %d %q, want 401 in its owner's words", status, body)
	}
	c, status, _ := dial("own")
	if c == nil {
		t.Fatalf("the owner's token: status %d", status)
	}
	if err := send(c, "1"); err != nil {
		t.Fatalf("a line with the owner's token: %v", err)
	}

	set(func() { own.Token = "new" }) // rotated
	err := send(c, "2")
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("a line after the token changed: %v, want closed with policy violation", err)
	}
	if _, status, _ := dial("own"); status != http.StatusUnauthorized {
		t.Fatalf("the old token after it changed: %d, want 401", status)
	}

	set(func() { own.Token = "" })
	for _, tok := range []string{"", testToken, "own", "new"} {
		if _, status, _ := dial(tok); status != http.StatusUnauthorized {
			t.Fatalf("token %q on a feed whose owner gives none: %d, want 401", tok, status)
		}
	}

	if resp, err := http.Get(ts.URL + "/feeds/room-other/fired"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a feed its owner never had: %v %v, want 404", resp, err)
	}
	set(func() { own.Token, own.Closed = "new", "this room was ended" })
	if _, status, body := dial("new"); status != http.StatusGone || !strings.Contains(body, "was ended") {
		t.Fatalf("a relay to a closed feed: %d %q, want 410 in its owner's words", status, body)
	}
	set(func() { ownErr = Gone("this room expired") })
	for _, tok := range []string{testToken, "new"} {
		if _, status, body := dial(tok); status != http.StatusGone || !strings.Contains(body, "expired") {
			t.Fatalf("token %q on a feed let go: %d %q, want 410", tok, status, body)
		}
	}
	b, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/"+feed+"/ws"), nil)
	if err != nil {
		t.Fatalf("a browser's socket to a feed let go: %v, want an upgrade and a close code", err)
	}
	defer b.CloseNow()
	if _, _, err := b.Read(ctx); websocket.CloseStatus(err) != CloseGone {
		t.Errorf("a browser's socket to a feed let go: %v, want close %d", err, CloseGone)
	}
}
