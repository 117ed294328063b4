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

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// goldenVolumeAt loads the golden v1.31.0 volume reading as any tag's (the
// literals are stable from v1.24 on).
func goldenVolumeAt(_ context.Context, o extractor.Options) (*volume.Reading, error) {
	b, err := os.ReadFile(filepath.Join("..", "extractor", "volume", "testdata", "golden", "v1.31.0.json"))
	if err != nil {
		return nil, err
	}
	var v volume.Reading
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	v.Tag = o.Tag
	return &v, nil
}

// TestRoomChainPins: a pin of a volume's chain names it by its first line,
// and the server writes it from the stream. A made-up line, a demo line, a
// line that begins no chain, another feed's chain and a text that is not
// the chain's are refused with 422 and why; the room's hand-in prints the
// chain under "Volume chains", its lines as stored.
func TestRoomChainPins(t *testing.T) {
	t.Parallel()
	_, ts := newRoomServer(t, t.TempDir(), func(c *Config) { c.DemoPeriod = 20 * time.Millisecond; c.LoadVolume = goldenVolumeAt })
	ctx := testCtx(t)
	id, key := createRoom(t, ts)
	readerIn(t, ts.URL, id, "Ann")
	d := dialRoom(t, ctx, ts, id, key, "Ann")
	demo := demoSeq(t, ctx, dialFeed(t, ctx, ts, "room-"+id))
	var vr struct{ Tag string }
	if !testwait.Until(20*time.Second, func() bool {
		res, err := http.Get(ts.URL + "/k8s/" + fixture.Tag + "/volume-manager.json")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return res.StatusCode == 200 && json.NewDecoder(res.Body).Decode(&vr) == nil
	}) {
		t.Fatal("the volume reading did not load")
	}

	rl, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/room-"+id+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}},
	})
	if err != nil {
		t.Fatalf("the room's relay: %v", err)
	}
	defer rl.CloseNow()
	var sent []relay.Line
	for _, l := range scratchJournalLines(t) {
		if strings.Contains(l.Raw, "olume") && strings.Contains(l.Raw, "5c01") || strings.Contains(l.Raw, "Added volume to desired state") && len(sent) < 3 {
			sent = append(sent, l)
		}
	}
	wstest.Send(t, ctx, rl, sent...)
	var rec struct {
		Chains []struct {
			ID   uint64 `json:"id"`
			Path string `json:"path"`
		} `json:"chains"`
	}
	const path = "desired → verifying → mounting → mounted → removing → unmounting → torn down → detached"
	if !testwait.Until(20*time.Second, func() bool {
		getJSON(t, ts.URL+"/feeds/room-"+id+"/chains", &rec)
		return len(rec.Chains) == 1 && rec.Chains[0].Path == path
	}) {
		t.Fatalf("the room's chains: %+v", rec)
	}
	chain := rec.Chains[0].ID

	pins := ts.URL + "/rooms/" + id + "/pins?tag=" + fixture.Tag
	forged := "chain: desired → mounted\nvolume: made up"
	for _, tt := range []struct {
		what, method, url string
		body              map[string]any
		why               string
	}{
		{"a made-up line", "POST", pins, map[string]any{"chain": 99999, "author": "Ann"}, "not in this room's journal"},
		{"a demo line", "POST", pins, map[string]any{"chain": demo, "author": "Ann"}, "demo line"},
		{"a line that begins no chain", "POST", pins, map[string]any{"chain": chain + 1, "author": "Ann"}, "begins no chain"},
		{"both a line and a chain", "POST", pins, map[string]any{"chain": chain, "seq": chain, "author": "Ann"}, `{"chain":N}`},
		{"a real chain with other text", "PUT", ts.URL + fmt.Sprintf("/rooms/%s/notes/pin.room-%s-chain%d", id, id, chain), map[string]any{"text": forged, "rev": 0, "author": "Ann"}, "text given is not chain"},
		{"another feed's chain", "PUT", ts.URL + fmt.Sprintf("/rooms/%s/notes/pin.default-chain%d", id, chain), map[string]any{"rev": 0, "author": "Ann"}, "not in this room's journal"},
	} {
		code, v := notesReq(t, tt.method, tt.url, tt.body)
		want := http.StatusUnprocessableEntity
		if tt.what == "both a line and a chain" {
			want = http.StatusBadRequest
		}
		if msg, _ := v["error"].(string); code != want || !strings.Contains(msg, tt.why) {
			t.Errorf("%s: %d %v, want %d saying %q", tt.what, code, v, want, tt.why)
		}
	}
	code, v := notesReq(t, "POST", pins, map[string]any{"chain": chain, "author": "Ann"})
	if text, _ := v["text"].(string); code != 200 || v["author"] != "Ann" || !strings.HasPrefix(text, "chain: "+path+"\n") ||
		!strings.Contains(text, "pod: default/scratch-lab, uid 5f0c3a52-1d7e-4c1b-9a44-7e2b7c9d5c01") || !strings.Contains(text, "step: mounted at 2026-12-04T21:41:03.280") {
		t.Fatalf("POST a real chain pin: %d %v", code, v)
	}

	resp, err := http.Get(ts.URL + "/rooms/" + id + "/worksheet.md?tag=" + fixture.Tag)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	md := string(b)
	i := strings.Index(md, "## Volume chains")
	if i < 0 {
		t.Fatalf("no Volume chains section:\n%s", md)
	}
	section := md[i:]
	if !strings.Contains(section, "### `"+path+"` (Ann") || !strings.Contains(section, "- mounted at 2026-12-04T21:41:03.280") {
		t.Errorf("the chain's heading or steps:\n%s", section)
	}
	// Its first line as stored, byte for byte.
	if !strings.Contains(section, "```text\n"+sent[0].Raw+"\n") {
		t.Errorf("the hand-in does not print the chain's first line as stored:\n%s", section)
	}
	if strings.Contains(md, "made up") || strings.Contains(md, "## Fired") {
		t.Errorf("the hand-in holds a forged chain, or lists the chain pin as a line pin:\n%s", md)
	}
}
