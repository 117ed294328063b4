package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/internal/wstest"
)

// TestRoomTagSwitchSpendsTheDriversTags: a room's driver switching the
// room to a tag no one has read spends the driver's own new tags an hour
// (the address a trusted proxy names), not a budget every room shares: a
// driver who spent theirs on pages is refused, with why; another room's
// driver switches to the same tag.
func TestRoomTagSwitchSpendsTheDriversTags(t *testing.T) {
	s, ts := newRoomServer(t, "", func(c *Config) {
		c.NewTagsPerHour = 1
		c.TrustedProxies, _ = clients.ParseTrustedProxies("127.0.0.0/8,::1/128")
	})
	ctx := testCtx(t)
	driver := func(room, key, addr string) *roomClient {
		c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/"+room+"/ws"), &websocket.DialOptions{HTTPHeader: http.Header{"X-Forwarded-For": {addr}}})
		if err != nil {
			t.Fatalf("dial room: %v", err)
		}
		t.Cleanup(func() { c.CloseNow() })
		rc := &roomClient{c: c}
		rc.send(t, ctx, map[string]any{"t": "join", "name": "driver", "color": 1, "key": key})
		rc.until(t, ctx, "the welcome", func(m map[string]any) bool { return m["t"] == "welcome" })
		return rc
	}
	id1, key1 := createRoom(t, ts)
	id2, key2 := createRoom(t, ts)

	// 198.51.100.1 spends its one new tag on a page.
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/k8s/v1.30.0/", nil)
	req.Header.Set("X-Forwarded-For", "198.51.100.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		t.Fatalf("the first new tag: %d", resp.StatusCode)
	}

	a := driver(id1, key1, "198.51.100.1")
	a.send(t, ctx, map[string]any{"t": "tag", "tag": "v1.31.0"})
	a.until(t, ctx, "a refusal for the driver's own budget", func(m map[string]any) bool {
		return m["t"] == "error" && strings.Contains(fmt.Sprint(m["error"]), "at most 1 such tags an hour for one address")
	})
	if r, _ := s.rooms.Store().Get(id1); r.Tag == "v1.31.0" {
		t.Errorf("room 1 switched on a spent budget")
	}
	b := driver(id2, key2, "198.51.100.2")
	b.send(t, ctx, map[string]any{"t": "tag", "tag": "v1.31.0"})
	b.until(t, ctx, "reload", func(m map[string]any) bool { return m["t"] == "reload" && m["tag"] == "v1.31.0" })
}
