package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// journaldEntry wraps a kubelet line as `journalctl -o json` does.
func journaldEntry(cursor, msg string) string {
	b, _ := json.Marshal(map[string]string{"__CURSOR": cursor, "__REALTIME_TIMESTAMP": "1764558001000000", "_HOSTNAME": "lab-worker",
		"SYSLOG_IDENTIFIER": "kubelet", "_PID": "4242", "MESSAGE": msg})
	return string(b)
}

// demoSeq reads a room feed's browser socket until a demo line arrives,
// and returns its sequence number.
func demoSeq(t *testing.T, ctx context.Context, c *websocket.Conn) uint64 {
	t.Helper()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("the room's feed: %v", err)
		}
		for part := range strings.SplitSeq(string(b), "\n") {
			var m struct {
				Seq  uint64          `json:"seq"`
				Line json.RawMessage `json:"line"`
				Demo bool            `json:"demo"`
			}
			if json.Unmarshal([]byte(part), &m) == nil && m.Line != nil && m.Demo && m.Seq > 0 {
				return m.Seq
			}
		}
	}
}

// TestRoomPins: a pin names a line of the room's journal and the server
// quotes it from the stream. A made-up sequence, a demo line, a line that
// fired no case, another feed's line and a text that is not the line's are
// refused with 422 and why; the room's hand-in prints the real pin's
// entry as stored, byte for byte, with "line N of the journal, cursor C",
// and its case is among the room's fired cases.
func TestRoomPins(t *testing.T) {
	t.Parallel()
	_, ts := newRoomServer(t, t.TempDir(), func(c *Config) { c.DemoPeriod = 20 * time.Millisecond })
	ctx := testCtx(t)
	id, key := createRoom(t, ts)
	readerIn(t, ts.URL, id, "Ann") // the browser that pins: the room knows it as Ann
	d := dialRoom(t, ctx, ts, id, key, "Ann")
	demo := demoSeq(t, ctx, dialFeed(t, ctx, ts, "room-"+id)) // a reader's pane starts the room's demo

	rl, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/room-"+id+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}},
	})
	if err != nil {
		t.Fatalf("the room's relay: %v", err)
	}
	defer rl.CloseNow()
	add := siteOf(t, fixture.Reading(t), "config", "Tiny ADD")
	entry2 := journaldEntry("s=5eed;i=2b;b=boot", fmt.Sprintf(`I1201 03:00:02.000000    4242 %s:%d] "Tiny ADD" pods=["default/second"]`, path.Base(add.File), add.Line))
	entry := journaldEntry("s=5eed;i=2a;b=boot", fmt.Sprintf(`I1201 03:00:01.000000    4242 %s:%d] "Tiny ADD" pods=["default/probe-me-lab"] `+"```"+` <img src=x onerror=alert(1)>`, path.Base(add.File), add.Line))
	wstest.Send(t, ctx, rl,
		relay.Line{ID: "s=5eed;i=29;b=boot", Raw: journaldEntry("s=5eed;i=29;b=boot", `I1201 03:00:00.000000    4242 fs.go:100] "readlink: permission denied"`)},
		relay.Line{ID: "s=5eed;i=2a;b=boot", Raw: entry},
		relay.Line{ID: "s=5eed;i=2b;b=boot", Raw: entry2})
	var fired struct {
		Cases map[string]struct{ Last struct{ Seq uint64 } } `json:"cases"`
	}
	getJSON(t, ts.URL+"/feeds/room-"+id+"/fired", &fired)
	seq := fired.Cases["config"].Last.Seq - 1 // entry; entry2 is the last
	if seq == 0 || seq <= demo {
		t.Fatalf("the relay's config line is line %d (the demo's %d): %+v", seq, demo, fired)
	}

	pins := ts.URL + "/rooms/" + id + "/pins?tag=" + fixture.Tag
	forged := "case: config\ntime: 2026-12-01T03:00:01Z\npod: default/probe-me\nnode: lab\ncursor: s=deadbeef;i=1\nfeed: room-" + id + ", line 99999\nline: made up"
	for _, tt := range []struct {
		what, method, url string
		body              map[string]any
		why               string
	}{
		{"a made-up sequence", "POST", pins, map[string]any{"seq": 99999, "author": "Ann"}, "not in this room's journal"},
		{"a demo line", "POST", pins, map[string]any{"seq": demo, "author": "Ann"}, "demo line"},
		{"a line that fired no case", "POST", pins, map[string]any{"seq": seq - 1, "author": "Ann"}, "matches no case"},
		{"a made-up line, PUT with its text", "PUT", ts.URL + "/rooms/" + id + "/notes/pin.room-" + id + "-99999", map[string]any{"text": forged, "rev": 0, "author": "Ann"}, "not in this room's journal"},
		{"a real line with other text", "PUT", ts.URL + fmt.Sprintf("/rooms/%s/notes/pin.room-%s-%d", id, id, seq), map[string]any{"text": forged, "rev": 0, "author": "Ann"}, "text given is not line"},
		{"another feed's line", "PUT", ts.URL + fmt.Sprintf("/rooms/%s/notes/pin.default-%d", id, seq), map[string]any{"rev": 0, "author": "Ann"}, "not in this room's journal"},
	} {
		code, v := notesReq(t, tt.method, tt.url, tt.body)
		if msg, _ := v["error"].(string); code != http.StatusUnprocessableEntity || !strings.Contains(msg, tt.why) {
			t.Errorf("%s: %d %v, want 422 saying %q", tt.what, code, v, tt.why)
		}
	}
	code, v := notesReq(t, "POST", pins, map[string]any{"seq": seq, "author": "Ann"})
	if text, _ := v["text"].(string); code != 200 || v["author"] != "Ann" || !strings.Contains(text, "cursor: s=5eed;i=2a;b=boot") || !strings.Contains(text, "pod: default/probe-me-lab") {
		t.Fatalf("POST a real pin: %d %v", code, v)
	}

	// The PUT of a pin's id still pins, with the line's own text or none:
	// the note's text is the server's.
	code, v = notesReq(t, "PUT", ts.URL+fmt.Sprintf("/rooms/%s/notes/pin.room-%s-%d", id, id, seq+1), map[string]any{"text": entry2, "rev": 0, "author": "Ann"})
	if text, _ := v["text"].(string); code != 200 || !strings.HasPrefix(text, "case: config\n") || !strings.Contains(text, "pod: default/second") {
		t.Fatalf("PUT a real pin with its line as text: %d %v", code, v)
	}

	resp, err := http.Get(ts.URL + "/rooms/" + id + "/worksheet.md?tag=" + fixture.Tag)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	md := string(b)
	i := strings.Index(md, "## Fired")
	if i < 0 {
		t.Fatalf("no Fired section:\n%s", md)
	}
	fired2 := md[i:]
	if n := strings.Count(fired2, "\n### "); n != 2 {
		t.Errorf("%d pins handed in, want the two real ones alone:\n%s", n, fired2)
	}
	if !strings.Contains(fired2, "### config at 2025-12-01T03:00:01Z (Ann") ||
		!strings.Contains(fired2, fmt.Sprintf("Line %d of the journal, cursor `s=5eed;i=2a;b=boot`; pod default/probe-me-lab; node lab-worker", seq)) {
		t.Errorf("the pin's heading or place:\n%s", fired2)
	}
	// The entry as stored, byte for byte, between fences no backtick run in
	// it can close.
	_, rest, ok := strings.Cut(fired2, "````text\n")
	got, _, ok2 := strings.Cut(rest, "\n````\n")
	if !ok || !ok2 || got != entry {
		t.Errorf("the hand-in's entry is not the stored one byte for byte:\n got %q\nwant %q", got, entry)
	}
	for _, forgedText := range []string{"deadbeef", "99999", "made up"} {
		if strings.Contains(md, forgedText) {
			t.Errorf("the hand-in holds %q of a forged pin", forgedText)
		}
	}
	for _, tt := range []struct {
		feed string
		code int
	}{{"room-" + id, 200}, {"room-nosuchroom", 404}} {
		resp, err := http.Get(ts.URL + "/feeds/" + tt.feed + "/fired")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("GET /feeds/%s/fired: %s, want %d", tt.feed, resp.Status, tt.code)
		}
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}
