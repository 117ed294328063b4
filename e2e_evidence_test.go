package main

// The proof of issue 21 on a real journal: a kubelet built at v1.33.0 (a
// tag no other test reads) ran in the lab (server/lab/lab.sh) and its
// journal, `journalctl -u kubelet -o json --all`, is committed under
// server/lab/testdata. Its start-up lines cut off (a relay that started
// late), it goes through a real `syncloop relay` to a real `syncloop
// serve` reading v1.37.2, which a second replica joins over NATS.

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
)

// labJournal is the recorded journal of a kubelet at labJournalTag;
// SYNCLOOP_EVIDENCE_JOURNAL and SYNCLOOP_EVIDENCE_TAG run the test on
// another recording (gzipped or not).
var (
	labJournal    = cmp.Or(os.Getenv("SYNCLOOP_EVIDENCE_JOURNAL"), "server/lab/testdata/kubelet-v1.33.0-journal.json.gz")
	labJournalTag = cmp.Or(os.Getenv("SYNCLOOP_EVIDENCE_TAG"), "v1.33.0")
)

// journalWithoutStartup is the recorded journal from its first SyncLoop
// line on, as a relay started after the kubelet would send it: its
// start-up lines, its version line among them, are not there.
func journalWithoutStartup(t *testing.T) []byte {
	t.Helper()
	f, err := os.Open(labJournal)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var zr io.Reader = f
	if strings.HasSuffix(labJournal, ".gz") {
		if zr, err = gzip.NewReader(f); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	seen := false
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	cut := 0
	for sc.Scan() {
		var e struct{ MESSAGE any }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("the recorded journal: %v", err)
		}
		msg, _ := e.MESSAGE.(string)
		if !seen && !strings.Contains(msg, `"SyncLoop `) {
			cut++
			continue
		}
		seen = true
		out.Write(sc.Bytes())
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cut == 0 || !seen {
		t.Fatalf("the recorded journal: %d start-up lines, SyncLoop lines %v", cut, seen)
	}
	t.Logf("%d start-up lines cut", cut)
	return out.Bytes()
}

// classifyCounts runs `syncloop classify --tag TAG --format json` over the
// journal: per case, how many lines, counted apart from the server. It
// fails the test when a line names the kubelet's version.
func classifyCounts(t *testing.T, bin, cache string, journal []byte, tag string) map[string]int {
	t.Helper()
	cmd := exec.Command(bin, "classify", "--tag", tag, "--format", "json", "--cache-dir", cache)
	cmd.Stdin = bytes.NewReader(journal)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("syncloop classify: %v\n%s", err, stderr.Bytes())
	}
	counts := map[string]int{}
	for line := range strings.Lines(string(out)) {
		var r struct {
			Case    *string
			Version string `json:"kubelet_version"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("classify wrote %q: %v", line, err)
		}
		if r.Version != "" {
			t.Fatalf("a line left names the kubelet's version %s", r.Version)
		}
		if r.Case != nil {
			counts[*r.Case]++
		}
	}
	return counts
}

// firedRecord is GET /feeds/{feed}/fired as JSON.
type firedRecord struct {
	KubeletVersion *string `json:"kubelet_version"`
	VersionFrom    *string `json:"version_from"`
	ReadAt         string  `json:"read_at"`
	Cases          map[string]struct {
		Count int `json:"count"`
		First struct {
			Seq    uint64  `json:"seq"`
			Time   *string `json:"time"`
			Raw    string  `json:"raw"`
			Cursor string  `json:"cursor"`
		} `json:"first"`
		Last struct {
			Seq    uint64 `json:"seq"`
			Cursor string `json:"cursor"`
		} `json:"last"`
		Pods []string `json:"pods"`
	} `json:"cases"`
}

func getFired(base, feed string) (firedRecord, error) {
	var rec firedRecord
	resp, err := http.Get(base + "/feeds/" + feed + "/fired")
	if err != nil {
		return rec, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return rec, fmt.Errorf("%s: %s", resp.Status, b)
	}
	return rec, json.NewDecoder(resp.Body).Decode(&rec)
}

func firedCounts(rec firedRecord) map[string]int {
	c := map[string]int{}
	for k, v := range rec.Cases {
		c[k] = v.Count
	}
	return c
}

// TestE2EFiredFromRealJournal: the version is told from log sites, the
// record's counts are classify's, and a second replica serves the same.
func TestE2EFiredFromRealJournal(t *testing.T) {
	t.Parallel() // its own processes, ports and directories
	if _, err := os.Stat(labJournal); err != nil {
		t.Fatalf("the recorded journal: %v", err)
	}
	bin := syncloopBin(t)
	dir := t.TempDir()
	journal := journalWithoutStartup(t)
	trimmed := filepath.Join(dir, "journal.json")
	if err := os.WriteFile(trimmed, journal, 0o644); err != nil {
		t.Fatal(err)
	}
	// The replicas know three tags: the default, the kubelet's, another.
	cache := filepath.Join(dir, "cache")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, tag := range []string{extractor.DefaultTag, labJournalTag, "v1.31.0"} {
		copyReadingCache(cache, tag)
		// With the notes' symbols, as the server asks: a tag cached with
		// others is not "on disk" to it, and it fetches no tag on its own.
		if _, err := extractor.Load(ctx, extractor.Options{Tag: tag, CacheDir: cache, Symbols: content.Symbols()}); err != nil {
			t.Fatalf("the Reading of %s: %v", tag, err)
		}
	}
	want := classifyCounts(t, bin, cache, journal, labJournalTag)
	if want["config"] == 0 || want["housekeeping"] == 0 {
		t.Fatalf("classify counts %v: the journal lacks the lab's scenario", want)
	}

	natsPort := freePort(t)
	addr1, addr2 := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base1, base2 := "http://"+addr1, "http://"+addr2
	s1 := start(t, "serve-1", bin, "serve", "--addr", addr1, "--token", "tok", "--cache-dir", cache,
		"--data-dir", filepath.Join(dir, "data"), "--nats-listen", fmt.Sprintf("127.0.0.1:%d", natsPort))
	waitHealthy(t, base1, s1)
	// The second replica presents the token the first made beside its data.
	s2 := start(t, "serve-2", bin, "serve", "--addr", addr2, "--token", "tok", "--cache-dir", cache,
		"--nats", fmt.Sprintf("nats://127.0.0.1:%d", natsPort), "--nats-token-file", filepath.Join(dir, "data", "nats-token"))
	waitHealthy(t, base2, s2)

	relay := start(t, "relay", bin, "relay", "--server", base1, "--feed", "lab", "--token", "tok",
		"--file", trimmed, "--speed", "0", "--state", filepath.Join(dir, "relay.state"))
	select {
	case err := <-relay.done:
		relay.done <- err
		if err != nil {
			t.Fatalf("relay: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the relay did not finish")
	}

	var rec firedRecord
	var err error
	if !testwait.UntilDone(ctx, func() bool {
		rec, err = getFired(base1, "lab")
		return err == nil && rec.VersionFrom != nil && rec.ReadAt == labJournalTag && reflect.DeepEqual(firedCounts(rec), want)
	}) {
		t.Fatalf("replica 1's record: %+v (%v); want read at %s from log sites, counts %v", rec, err, labJournalTag, want)
	}
	if *rec.KubeletVersion != labJournalTag || *rec.VersionFrom != "log sites" {
		t.Fatalf("kubelet version %s from %s", *rec.KubeletVersion, *rec.VersionFrom)
	}
	c := rec.Cases["config"]
	if c.First.Cursor == "" || c.First.Time == nil || !strings.Contains(c.First.Raw, `SyncLoop ADD`) || len(c.Pods) == 0 {
		t.Errorf("config's first line: %+v, pods %v", c.First, c.Pods)
	}
	t.Logf("counts %v", want)
	var rec2 firedRecord
	if !testwait.UntilDone(ctx, func() bool {
		rec2, err = getFired(base2, "lab")
		return err == nil && reflect.DeepEqual(rec2, rec)
	}) {
		t.Fatalf("replica 2's record:\n%+v (%v)\nreplica 1's:\n%+v", rec2, err, rec)
	}
	// Every config line, read back from the stream by sequence.
	resp, err := http.Get(base2 + "/feeds/lab/fired/config/lines")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var seqs []uint64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			Seq  uint64
			Line struct{ Case string }
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Line.Case != "config" {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		seqs = append(seqs, m.Seq)
	}
	if len(seqs) != c.Count || seqs[0] != c.First.Seq || seqs[len(seqs)-1] != c.Last.Seq {
		t.Fatalf("config's lines at %v; the record says %d from %d to %d", seqs, c.Count, c.First.Seq, c.Last.Seq)
	}
}
