package feeds

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// casePage is one page of a case's lines: their seqs, the body's size
// and the next page's address from the Link header ("" for none).
func casePage(t *testing.T, ctx context.Context, ts *httptest.Server, path string) (seqs []uint64, size int, next string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s", path, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		size += len(sc.Bytes()) + 1
		var m browserMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Line == nil {
			t.Fatalf("%s: not a line message: %.200q (%v)", path, sc.Text(), err)
		}
		seqs = append(seqs, m.Seq)
	}
	if l := resp.Header.Get("Link"); l != "" {
		m := regexp.MustCompile(`^<([^>]+)>; rel="next"$`).FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("%s: Link %q, want <…>; rel=\"next\"", path, l)
		}
		next = m[1]
	}
	return seqs, size, next
}

// TestCaseLinesPaged: a case's lines come a page at a time (500 by
// default, at most 2,000 and about 4 MB), newest first chosen, and the
// Link header walks back through all of them, each once, in order.
func TestCaseLinesPaged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, ts := newLiveServer(t, Config{RingSize: 16})
	in := dialIngest(t, ctx, ts, "lab")
	const small, big = 2600, 120
	n := 0
	var ls []relay.Line
	for i := range small {
		n++
		ls = append(ls, relay.Line{ID: fmt.Sprintf("run-%d", n), Raw: klogAdd(i, "default/p")})
		if len(ls) == 500 || i == small-1 {
			wstest.Send(t, ctx, in, ls...)
			ls = nil
		}
	}
	// Lines of 60 KB: 120 of them are 7 MB, past a page's bytes.
	pad := strings.Repeat("x", 60<<10)
	for i := range big {
		n++
		ls = append(ls, relay.Line{ID: fmt.Sprintf("run-%d", n), Raw: fmt.Sprintf(`I1130 01:02:03.000000    1234 kubelet.go:2407] "SyncLoop ADD" source="file" pods=["default/big-%d"] pad=%q`, i, pad)})
		if len(ls) == 10 {
			wstest.Send(t, ctx, in, ls...)
			ls = nil
		}
	}
	testwait.For(t, 30*time.Second, "every config line recorded", func() bool {
		return getFired(t, ctx, ts, "lab").Cases["config"].Count == small+big
	})

	seqs, size, next := casePage(t, ctx, ts, "/feeds/lab/fired/config/lines")
	if len(seqs) >= big || size > maxCaseBytes || next == "" {
		t.Fatalf("first page: %d lines, %d bytes, next %q; want fewer than the %d big ones, at most %d bytes, and a next page", len(seqs), size, next, big, maxCaseBytes)
	}
	if seqs[len(seqs)-1] != uint64(n) {
		t.Fatalf("first page ends at %d, want the newest line, %d", seqs[len(seqs)-1], n)
	}
	all := seqs
	pages := 1
	for next != "" {
		if pages++; pages > 20 {
			t.Fatalf("more than 20 pages")
		}
		var s []uint64
		s, size, next = casePage(t, ctx, ts, next)
		if len(s) == 0 || len(s) > defaultCaseLines || size > maxCaseBytes {
			t.Fatalf("page %d: %d lines, %d bytes", pages, len(s), size)
		}
		all = append(s, all...)
	}
	if len(all) != small+big || !slices.IsSorted(all) || all[0] != 1 || len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Fatalf("the pages hold %d lines from %d (sorted %v), want each of %d once", len(all), all[0], slices.IsSorted(all), small+big)
	}
	// limit is bounded: 5,000 asked, 2,000 sent.
	if s, _, next := casePage(t, ctx, ts, fmt.Sprintf("/feeds/lab/fired/config/lines?before=%d&limit=5000", small+1)); len(s) != maxCaseLines || s[len(s)-1] != small || next == "" {
		t.Fatalf("limit 5000: %d lines ending at %d (next %q), want %d ending at %d", len(s), s[len(s)-1], next, maxCaseLines, small)
	}
}
