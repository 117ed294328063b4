package feeds

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// getChains reads the feed's record of the volume reading.
func getChains(t *testing.T, ctx context.Context, ts *httptest.Server, feed string) ChainsRecord {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/feeds/"+feed+"/chains", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chains: %s", resp.Status)
	}
	var rec ChainsRecord
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// scratchJournal is the lab's recorded v1.31.0 journal (the scratch pod's
// emptyDir mounted, torn down, mounted anew): its volume manager's entries
// and every 25th other one, as the relay sends them.
func scratchJournal(t *testing.T) []relay.Line {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "lab", "testdata", "kubelet-v1.31.0-scratch-journal.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []relay.Line
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 1<<20)
	for i := 0; sc.Scan(); i++ {
		var e struct {
			Cursor  string `json:"__CURSOR"`
			Message any    `json:"MESSAGE"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		m, _ := e.Message.(string)
		if i%25 == 0 || strings.Contains(m, "olume") {
			out = append(out, relay.Line{ID: e.Cursor, Raw: sc.Text()})
		}
	}
	if len(out) < 100 {
		t.Fatalf("the recorded journal: %d entries", len(out))
	}
	return out
}

func goldenVolume(t *testing.T, tag string) *volume.Reading {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "extractor", "volume", "testdata", "golden", tag+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r volume.Reading
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestChainsRecord: a feed's record of the volume reading, from the lab's
// real journal: nothing is labelled before the tag's volume Reading is
// loaded; once it is, the stored lines are labelled anew from the stream
// (the pod's two emptyDir volumes, in order, per part); a chain's lines
// are read back from the stream by its id, and an id that begins no
// chain, or names no stored line, is refused; a restart rebuilds the
// same record.
func TestChainsRecord(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var vr atomic.Pointer[volume.Reading]
	cfg := Config{VolumeReading: func(tag string) *volume.Reading {
		if tag != "v1.31.0" {
			return nil
		}
		return vr.Load()
	}}
	l1, ts1 := newStoredLiveServer(t, dir, cfg)
	in := dialIngest(t, ctx, ts1, "lab")
	sent := scratchJournal(t)
	wstest.Send(t, ctx, in, sent...)
	if !testwait.Until(20*time.Second, func() bool { return len(getFired(t, ctx, ts1, "lab").Cases) > 0 }) {
		t.Fatal("the journal's lines were not recorded")
	}
	if rec := getChains(t, ctx, ts1, "lab"); rec.Reading || len(rec.Chains) != 0 || len(rec.Parts) != 0 {
		t.Fatalf("without the volume Reading: %+v", rec)
	}

	vr.Store(goldenVolume(t, "v1.31.0"))
	f, err := l1.feed("lab")
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.volsAsked = time.Time{} // not volRecheck later
	f.mu.Unlock()
	const uid1, uid2 = "5f0c3a52-1d7e-4c1b-9a44-7e2b7c9d5c01", "5f0c3a52-1d7e-4c1b-9a44-7e2b7c9d5c02"
	want := map[string]string{
		uid1: "desired → verifying → mounting → mounted → removing → unmounting → torn down → detached",
		uid2: "desired → verifying → mounting → mounted",
	}
	var rec ChainsRecord
	if !testwait.Until(20*time.Second, func() bool {
		rec = getChains(t, ctx, ts1, "lab")
		return len(rec.Chains) == 2 && rec.Chains[1].Path == want[uid2]
	}) {
		t.Fatalf("the record once the Reading is loaded: %+v", rec)
	}
	for _, c := range rec.Chains {
		if c.Path != want[c.UID] || c.Pod != "default/scratch-lab" || c.Spec != "cache" {
			t.Errorf("chain %d: %s of %s (%s), want %s", c.ID, c.Path, c.Pod, c.UID, want[c.UID])
		}
		if c.ID != c.Steps[0].First.Seq || !strings.Contains(c.Steps[0].First.Text, "Added volume to desired state") {
			t.Errorf("chain %d begins with line %d: %q", c.ID, c.Steps[0].First.Seq, c.Steps[0].First.Text)
		}
	}
	for part, n := range map[string]int{"populator": 10, "mountOrAttachVolumes": 6, "unmountVolumes": 2, "unmountDetachDevices": 1} {
		// The unmount's lines name the pod by its UID only (pod "…" (UID: "…")), with no pod=.
		if p := rec.Parts[part]; p.Count < n || p.First.Seq == 0 || (len(p.Pods) == 0) != (part == "unmountVolumes" || part == "unmountDetachDevices") {
			t.Errorf("part %s: %+v, want ≥ %d lines", part, p, n)
		}
	}

	// A chain read back from the stream by its id.
	c := rec.Chains[0]
	sc, err := l1.Chain(ctx, "lab", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Chain.Path() != c.Path || sc.Lines[0].Seq != c.ID || !strings.Contains(sc.Lines[0].Text, "Added volume") ||
		sc.Lines[0].Raw != sent[c.ID-1].Raw {
		t.Errorf("chain %d read back: %s, first line %d %q", c.ID, sc.Chain.Path(), sc.Lines[0].Seq, sc.Lines[0].Text)
	}
	if len(sc.Lines) < len(c.Steps) {
		t.Errorf("chain %d read back with %d lines for %d steps", c.ID, len(sc.Lines), len(c.Steps))
	}
	if _, err := l1.Chain(ctx, "lab", c.ID+1); !errors.Is(err, ErrNoChain) {
		t.Errorf("a line that begins no chain: %v, want ErrNoChain", err)
	}
	if _, err := l1.Chain(ctx, "lab", 1<<40); !errors.Is(err, ErrNoLine) {
		t.Errorf("a line never stored: %v, want ErrNoLine", err)
	}
	// The demo's lines never count, volume lines or not.
	if _, err := f.ingest([]relay.Line{{Raw: sent[c.ID-1].Raw}}, true); err != nil {
		t.Fatal(err)
	}
	demoSeq := f.queue.storedTo.Load() - 1
	if got := getChains(t, ctx, ts1, "lab"); got.Parts["populator"].Count != rec.Parts["populator"].Count {
		t.Errorf("a demo line counted: populator %d, was %d", got.Parts["populator"].Count, rec.Parts["populator"].Count)
	}
	if _, err := l1.Chain(ctx, "lab", demoSeq); !errors.Is(err, ErrDemoLine) && !errors.Is(err, ErrNoLine) {
		t.Errorf("the demo's line as a chain: %v", err)
	}
	in.CloseNow()
	ts1.Close()
	l1.Close()

	_, ts2 := newStoredLiveServer(t, dir, cfg)
	var got ChainsRecord
	if !testwait.Until(20*time.Second, func() bool { got = getChains(t, ctx, ts2, "lab"); return reflect.DeepEqual(got.Chains, rec.Chains) }) {
		t.Fatalf("after a restart the chains are\n%+v\nwant\n%+v", got.Chains, rec.Chains)
	}
}

// TestChainsPrune: lines the stream no longer holds leave the volume
// record: a part's first line is to be read back anew, a chain whose first
// line went is forgotten.
func TestChainsPrune(t *testing.T) {
	r := firedRecord{vol: volRecord{by: classify.NewVolumes(goldenVolume(t, "v1.31.0"))}}
	msgs := []string{
		`"Added volume to desired state" pod="default/a" volumeName="cache" volumeSpecName="cache"`,
		`"operationExecutor.VerifyControllerAttachedVolume started for volume \"cache\" (UniqueName: \"u-a\") pod \"a\" (UID: \"1\") " pod="default/a"`,
		`"Added volume to desired state" pod="default/b" volumeName="cache" volumeSpecName="cache"`,
		`"operationExecutor.VerifyControllerAttachedVolume started for volume \"cache\" (UniqueName: \"u-b\") pod \"b\" (UID: \"2\") " pod="default/b"`,
	}
	cls := classify.New(nil)
	for i, m := range msgs {
		line := cls.ClassifyString(fmt.Sprintf(`I1204 21:41:0%d.000000    7475 x.go:1] %s`, i, m))
		r.add(uint64(i+1), 100+uint64(i), &line, m)
	}
	if got := r.vol.chains.List(); len(got) != 2 || got[0].Path() != "desired → verifying" {
		t.Fatalf("before the prune: %+v", got)
	}
	refirst := r.dropBefore(2)
	if got := r.vol.chains.List(); len(got) != 1 || got[0].ID != 3 {
		t.Errorf("after dropBefore(2) the chains are %+v, want b's alone", got)
	}
	if refirst[volKey+"populator"] != (firedAt{3, 102}) || len(r.vol.parts["populator"].at) != 1 {
		t.Errorf("refirst %v, populator at %v", refirst, r.vol.parts["populator"].at)
	}
	if r.dropBefore(5); len(r.vol.parts) != 0 || len(r.vol.chains.List()) != 0 {
		t.Errorf("after every line went: %v %v", r.vol.parts, r.vol.chains.List())
	}
}
