package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A server killed mid-write leaves a torn last record: the store cuts it
// off, so the next record is not glued to it (and lost with it).
func TestFeedStoreCutsTornRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lab.jsonl")
	good := string(appendRecord(nil, storedLine{Seq: 1, ID: "a", Raw: "one"})) + string(appendRecord(nil, storedLine{Seq: 2, ID: "b", Raw: `two "quoted"`, Version: "v1.31.0"}))
	if err := os.WriteFile(path, []byte(good+`{"seq":3,"id":"c","ra`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, recs, version, err := openFeedStore(dir, "lab", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Raw != `two "quoted"` || version != "v1.31.0" {
		t.Fatalf("restored %+v, version %q", recs, version)
	}
	if err := s.add(storedLine{Seq: 3, ID: "c", Raw: "three"}); err != nil {
		t.Fatal(err)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	s, recs, _, err = openFeedStore(dir, "lab", 10)
	if err != nil {
		t.Fatal(err)
	}
	s.close()
	if len(recs) != 3 || recs[2].Raw != "three" {
		t.Fatalf("after a torn record and a new one: %+v", recs)
	}
}

// Compaction copies the last records as they are and carries the version
// the dropped ones revealed; the store reads the same records before and
// after, and goes on appending at the right offsets.
func TestFeedStoreCompacts(t *testing.T) {
	dir := t.TempDir()
	s, _, _, err := openFeedStore(dir, "lab", 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 40; i++ {
		r := storedLine{Seq: uint64(i), ID: fmt.Sprint("id", i), Raw: strings.Repeat("é\"<", i%5)}
		if i == 2 {
			r.Version = "v1.31.0"
		}
		if err := s.add(r); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := s.flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "lab.jsonl"))
	if n := strings.Count(string(b), "\n"); n > 4*3+2 {
		t.Fatalf("%d lines in the file: not compacted\n%s", n, b)
	}
	s, recs, version, err := openFeedStore(dir, "lab", 3)
	if err != nil {
		t.Fatal(err)
	}
	s.close()
	if version != "v1.31.0" || len(recs) != 3 || recs[0].Seq != 38 || recs[2].Seq != 40 || recs[2].ID != "id40" || recs[1].Raw != strings.Repeat("é\"<", 39%5) {
		t.Fatalf("after compaction: version %q, records %+v\n%s", version, recs, b)
	}
}
