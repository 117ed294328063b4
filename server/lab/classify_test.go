package lab

// The end-to-end test's classify step (issue 7, step 5): real kubelet lines, run
// through `syncloop classify`, must each get the case that can log them at the tag
// the kubelet runs. It runs on the committed excerpts everywhere, and on the whole
// journal of a live run in TestLab and TestLabJSON.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/browsertest"
)

const labTag = "v1.31.0"

// binDir holds the syncloop command built for this test binary; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "syncloop-lab-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	browsertest.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncloop builds the syncloop command once per test binary.
var syncloop = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "syncloop")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{err, out}
	}
	return bin, nil
})

// fakeJournalctl builds testdata/fakejournalctl (the repository's) once per
// test binary, named journalctl: the relay resumes a command by that name
// after its last cursor, as it does the real one.
var fakeJournalctl = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "fake", "journalctl")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/fakejournalctl")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{err, out}
	}
	return bin, nil
})

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string {
	return "go build: " + e.err.Error() + "\n" + string(e.out)
}

// logLines returns, per case key, the lines of kubelet.go whose log calls the case
// can reach at tag (in its clause or a helper it calls).
func logLines(t *testing.T, tag string) map[string]map[int]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := extractor.Load(ctx, extractor.Options{Tag: tag})
	if err != nil {
		t.Fatalf("the Reading for %s: %v", tag, err)
	}
	m := map[string]map[int]bool{}
	for _, c := range r.Function.Cases {
		m[c.Key] = map[int]bool{}
		for _, l := range c.Logs {
			if l.File == r.Function.File {
				m[c.Key][l.Line] = true
			}
		}
	}
	return m
}

// probeKind reads which probe manager a "SyncLoop (probe)" line came from, in klog
// text (probe="liveness") or kubelet JSON ("probe":"liveness").
var probeKind = regexp.MustCompile(`probe\\?"?[=:]\\?"(\w+)\\?"`)

// checkClassified runs data through syncloop classify and checks every SyncLoop
// line; it returns how many lines each case got.
func checkClassified(t *testing.T, data []byte, logs map[string]map[int]bool) map[string]int {
	t.Helper()
	return checkClassifiedAt(t, data, logs, labTag)
}

// checkClassifiedAt is checkClassified for a kubelet that runs tag.
func checkClassifiedAt(t *testing.T, data []byte, logs map[string]map[int]bool, labTag string) map[string]int {
	t.Helper()
	bin, err := syncloop()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "classify", "--tag", labTag, "--format", "json")
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("syncloop classify: %v\n%s", err, stderr.Bytes())
	}
	counts := map[string]int{}
	n := 0
	for line := range strings.Lines(string(out)) {
		var r struct {
			Case       *string
			Match      string
			Caller     string
			SourceLine int `json:"source_line"`
			Message    string
			Raw        string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("classify wrote %q: %v", line, err)
		}
		n++
		if !strings.HasPrefix(r.Message, "SyncLoop") {
			continue
		}
		if r.Case == nil {
			t.Errorf("no case for %q (caller %s)", r.Message, r.Caller)
			continue
		}
		counts[*r.Case]++
		if r.Match != "exact" {
			t.Errorf("%q: match %q, want exact (the kubelet runs %s)", r.Message, r.Match, labTag)
		}
		if !logs[*r.Case][r.SourceLine] {
			t.Errorf("%q from kubelet.go:%d classified %s, whose clause logs at no such line at %s", r.Message, r.SourceLine, *r.Case, labTag)
		}
		if r.Message == "SyncLoop (probe)" {
			if m := probeKind.FindStringSubmatch(r.Raw); m == nil || m[1] != *r.Case {
				t.Errorf("probe line classified %s: %.200s", *r.Case, r.Raw)
			}
		}
	}
	if in := bytes.Count(data, []byte("\n")); n != in {
		t.Errorf("classify wrote %d records for %d lines", n, in)
	}
	return counts
}

func TestClassifyExcerpts(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: builds syncloop and loads the v1.31.0 Reading")
	}
	logs := logLines(t, labTag)
	tests := []struct {
		file string
		want []string // cases that must have lines
	}{
		{"kubelet-journal-excerpt.json", []string{"config", "pleg", "sync", "housekeeping", "liveness", "readiness", "startup"}},
		{"kubelet-jsonformat-excerpt.txt", []string{"config", "pleg", "housekeeping", "liveness", "readiness", "startup"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			counts := checkClassified(t, data, logs)
			for _, c := range tt.want {
				if counts[c] == 0 {
					t.Errorf("no line classified %s (got %v)", c, counts)
				}
			}
		})
	}
}
