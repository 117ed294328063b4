package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// fillAll takes every byte left on the disk at dir, in a file removed by
// the returned func.
func fillAll(t *testing.T, dir string) func() {
	t.Helper()
	name := filepath.Join(dir, "ballast-all")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	return func() { os.Remove(name) }
}

// relayConn is a relay's ingest socket that says when a batch is not
// taken, rather than failing the test.
type relayConn struct {
	c *websocket.Conn
}

func dialRelay(t *testing.T, ctx context.Context, url string) (*relayConn, error) {
	h := http.Header{"Authorization": {"Bearer " + testToken}}
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			return nil, fmt.Errorf("%w: %d %s", err, resp.StatusCode, b)
		}
		return nil, err
	}
	t.Cleanup(func() { c.CloseNow() })
	return &relayConn{c: c}, nil
}

// send sends 10 lines of 1 KB, numbered on from *first (which it
// advances), and waits for their ack.
func (rc *relayConn) send(ctx context.Context, first *int) (string, error) {
	var ls []relay.Line
	for range 10 {
		*first++
		ls = append(ls, relay.Line{ID: fmt.Sprintf("run-%d", *first), Raw: fmt.Sprintf(`I1130 01:02:03.000000 1234 kubelet.go:2407] "line %d" pad=%01000d`, *first, 0)})
	}
	b, _ := json.Marshal(map[string]any{"lines": ls})
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := rc.c.Write(ctx, websocket.MessageText, b); err != nil {
		return "", err
	}
	_, ack, err := rc.c.Read(ctx)
	if err != nil {
		return "", err
	}
	var m struct{ Ack string }
	json.Unmarshal(ack, &m)
	return m.Ack, nil
}

func healthz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDiskFreesServerRecovers: with the data dir on a small disk that
// fills, note writes answer 507 with why, the feed that hits it stops
// storing, and /healthz answers 503 with why; once space is freed, the
// server asks to be restarted (serve exits non-zero), and started again
// on the same data dir it takes note writes and the same feed, with what
// was acknowledged before all there.
func TestDiskFreesServerRecovers(t *testing.T) {
	disk := smallDisk(t, "40")
	data := filepath.Join(disk, "data")
	srv, ts := newRoomServer(t, data, func(c *Config) { c.FeedBytes = 4 << 20 })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id, _ := createRoom(t, ts)
	notes := ts.URL + "/rooms/" + id + "/notes/"
	put := func(note, text string) (int, map[string]any) {
		return notesReq(t, "PUT", notes+note, map[string]any{"text": text, "rev": 0, "author": "Ann"})
	}
	if code, m := put("case.config", "before the disk filled"); code != 200 {
		t.Fatalf("a note: %d %v", code, m)
	}
	feedURL := wstest.URL(ts, "/feeds/lab/ingest")
	rc, err := dialRelay(t, ctx, feedURL)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	acked := ""
	if acked, err = rc.send(ctx, &n); err != nil || acked != "run-10" {
		t.Fatalf("a feed's first batch: %q %v", acked, err)
	}

	// The disk fills: the feed's writes fail, then the notes'.
	free := fillAll(t, disk)
	feedStopped := false
	for range 2000 { // 20 MB of lines: more than any block JetStream holds in hand
		a, err := rc.send(ctx, &n)
		if err != nil {
			feedStopped = true
			t.Logf("the feed stopped after %s: %v", acked, err)
			break
		}
		acked = a
	}
	if !feedStopped {
		t.Fatalf("the feed stored 20 MB on a full disk")
	}
	refused := ""
	for i := range 200 {
		code, m := put(fmt.Sprintf("case.k%d", i), strings.Repeat("x", 4000))
		if code == http.StatusInsufficientStorage {
			refused, _ = m["error"].(string)
			break
		}
		if code != 200 {
			t.Fatalf("a note on a full disk: %d %v, want 200 or 507", code, m)
		}
	}
	if !strings.Contains(refused, "cannot store notes") || !strings.Contains(refused, "space is freed") {
		t.Fatalf("a note on a full disk: %q, want 507 saying why", refused)
	}
	if code, body := healthz(t, ts.URL); code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot store notes or feeds") {
		t.Errorf("/healthz on a full disk: %d %q, want 503 saying why", code, body)
	}

	// Space frees: the server says it must restart, and exits (serve);
	// its supervisor starts it again on the same data dir, which takes
	// notes and the same feed again.
	free()
	select {
	case <-srv.NeedsRestart():
	case <-time.After(60 * time.Second):
		t.Fatal("no restart asked for within 60 s of space freed")
	}
	if code, body := healthz(t, ts.URL); code != http.StatusServiceUnavailable || !strings.Contains(body, "restarts") {
		t.Errorf("/healthz before the restart: %d %q, want 503 saying it restarts", code, body)
	}
	srv.Close()
	ts.Close()
	_, ts = newRoomServer(t, data, func(c *Config) { c.FeedBytes = 4 << 20 })
	notes = ts.URL + "/rooms/" + id + "/notes/"
	feedURL = wstest.URL(ts, "/feeds/lab/ingest")
	if code, body := healthz(t, ts.URL); code != 200 {
		t.Errorf("/healthz after the restart: %d %q", code, body)
	}
	if code, m := put("case.pleg", "after the disk freed"); code != 200 {
		t.Errorf("a note once space freed: %d %v", code, m)
	}
	rc, err = dialRelay(t, ctx, feedURL)
	if err != nil {
		t.Fatalf("the feed once space freed: %v", err)
	}
	from := n
	last, err := rc.send(ctx, &n)
	if err != nil || last != fmt.Sprintf("run-%d", n) {
		t.Fatalf("the feed once space freed: ack %q %v, want run-%d", last, err, n)
	}
	// Nothing acknowledged is lost: the first note, and every line acked.
	code, m := notesReq(t, "GET", ts.URL+"/rooms/"+id+"/notes", nil)
	if code != 200 || !strings.Contains(fmt.Sprint(m), "before the disk filled") || !strings.Contains(fmt.Sprint(m), "after the disk freed") {
		t.Errorf("the room's notes: %d %.300v", code, m)
	}
	resp, err := http.Get(ts.URL + "/feeds/lab/export")
	if err != nil {
		t.Fatal(err)
	}
	export, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, id := range []string{`"line 1"`, `"line ` + strings.TrimPrefix(acked, "run-") + `"`, fmt.Sprintf(`"line %d"`, from+1), fmt.Sprintf(`"line %d"`, n)} {
		if !strings.Contains(string(export), id) {
			t.Errorf("the feed's export has no %s (acked up to %s before, %d after)", id, acked, n)
		}
	}
}
