package classify

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestClassifyTextIsClassify: ClassifyText gives what Classify gives but
// the pods, line for line over every fixture and the lab's journal, at a
// Reading's tag, at another and with none; and AppendText writes the two
// the same.
func TestClassifyTextIsClassify(t *testing.T) {
	var lines []string
	for _, f := range []string{"klog-v1.20.0.txt", "klog-v1.31.0.txt", "klog-v1.37.2.txt", "journal-json.txt", "journal-short.txt", "journal-short-iso.txt", "journal-short-precise.txt", "kubelet-json.txt"} {
		lines = append(lines, fixtureLines(t, f)...)
	}
	lines = append(lines, strings.Split(strings.TrimSuffix(string(labKlog(t, 5000)), "\n"), "\n")...)
	pods := 0
	for _, tag := range []string{"v1.31.0", "v1.37.2", ""} {
		c := New(nil)
		if tag != "" {
			c = New(readingFor(t, tag))
		}
		c.now = func() time.Time { return time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC) }
		full, text := c.Stream(), c.Stream()
		for _, raw := range lines {
			want, got := full.Classify([]byte(raw)), text.ClassifyText([]byte(raw))
			if len(want.Pods) > 0 {
				pods++
			}
			if got.Pods != nil {
				t.Fatalf("ClassifyText(%q) has pods %q", raw, got.Pods)
			}
			want.Pods = nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("at %q, %q:\nClassifyText %+v\nClassify     %+v", tag, raw, got, want)
			}
			for _, color := range []bool{false, true} {
				if a, b := AppendText(nil, &got, color), AppendText(nil, &want, color); !bytes.Equal(a, b) {
					t.Fatalf("AppendText %q, want %q", a, b)
				}
			}
		}
	}
	if pods == 0 {
		t.Fatal("no line named a pod: the test proves nothing")
	}
}

// labKlog is the kubelet's own lines (the journald entries' MESSAGE) of the
// lab's recorded v1.33.0 journal, repeated to n lines, one a line.
func labKlog(tb testing.TB, n int) []byte {
	tb.Helper()
	f, err := os.Open(filepath.Join("..", "lab", "testdata", "kubelet-v1.33.0-journal.json.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var msgs []string
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct{ MESSAGE any }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			tb.Fatal(err)
		}
		if m, ok := e.MESSAGE.(string); ok && !strings.Contains(m, "\n") {
			msgs = append(msgs, m)
		}
	}
	if err := sc.Err(); err != nil || len(msgs) == 0 {
		tb.Fatalf("the lab's journal: %d lines, %v", len(msgs), err)
	}
	var b bytes.Buffer
	for i := range n {
		b.WriteString(msgs[i%len(msgs)])
		b.WriteByte('\n')
	}
	return b.Bytes()
}
