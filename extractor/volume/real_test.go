package volume

// Tests against the real module zips of eight tags, as every package's
// tests get them (extractortest: the module cache, else the proxy, kept
// for later runs).

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/syncloop/syncloop/extractor/extractortest"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the derivation")

// goldenTags are the tags the issue names, and the newest the proxy serves.
var goldenTags = []string{"v1.20.0", "v1.24.0", "v1.26.0", "v1.27.0", "v1.30.0", "v1.31.0", "v1.37.2", "v1.38.0-beta.0"}

var derived sync.Map // tag → *derivedResult

type derivedResult struct {
	once sync.Once
	r    *Reading
	err  error
}

// deriveAt derives the reading at tag once per test binary, from the zip
// extractortest finds or fetches (the module cache, else the proxy).
func deriveAt(t *testing.T, tag string) *Reading {
	t.Helper()
	extractortest.NeedNetwork(t)
	fsys := extractortest.FS(t, tag)
	v, _ := derived.LoadOrStore(tag, &derivedResult{})
	res := v.(*derivedResult)
	res.once.Do(func() { res.r, res.err = Derive(fsys, tag) })
	if res.err != nil {
		t.Fatalf("derive at %s: %v", tag, res.err)
	}
	return res.r
}

// TestGolden compares the derivation at every golden tag with
// testdata/golden/TAG.json, and checks that TAG.how.md, written by reading
// the source at the tag, names the entry and the parts derived.
func TestGolden(t *testing.T) {
	for _, tag := range goldenTags {
		t.Run(tag, func(t *testing.T) {
			r := deriveAt(t, tag)
			got, err := json.MarshalIndent(r.WithoutDecls(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", tag+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v; run go test -run TestGolden -update to write it", err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs from the derivation; diff it with go test -run TestGolden/%s -update and git diff", path, tag)
			}
			checkHow(t, tag, r)
		})
	}
}

// checkHow checks the "checked:" lines of TAG.how.md against r: the
// entry as "entry: FUNC FILE:LINE" and the parts as "parts: KEY:DIRECTION …".
func checkHow(t *testing.T, tag string, r *Reading) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "golden", tag+".how.md"))
	if err != nil {
		t.Fatalf("every golden tag needs a how-found note: %v", err)
	}
	entry := "entry: " + r.Entry.Func + " " + r.Entry.File + ":" + itoa(r.Entry.Line)
	var parts []string
	for _, p := range r.Parts {
		parts = append(parts, p.Key+":"+orDash(p.Direction))
	}
	want := []string{entry, "parts: " + strings.Join(parts, " ")}
	for _, w := range want {
		if !strings.Contains(string(data), "\n"+w+"\n") {
			t.Errorf("%s.how.md does not say %q: re-read the source at %s and correct the note or the derivation", tag, w, tag)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
