package classify

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

func TestVersionTag(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"v1.31.0", "v1.31.0"},
		{"v1.31.0+k3s1", "v1.31.0"},
		{"v1.38.0-beta.0", "v1.38.0-beta.0"},
		{"v1.38.0-rc.1+abc", "v1.38.0-rc.1"},
		{"v1.19.0", ""}, // before MinTag: not served
		{"v1.31", ""},
		{"1.31.0", ""},
		{"v1.31.0 <script>", ""},
		{"", ""},
	} {
		if got := VersionTag(tt.in); got != tt.want {
			t.Errorf("VersionTag(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// guessOrder ranks a tag's log sites by how soon a kubelet at -v=4 logs
// them in a journal joined late: housekeeping every 2 s (two lines), the
// periodic sync, PLEG events, probe results; the rest (pod changes) last.
var guessOrder = []string{"SyncLoop (housekeeping)", "SyncLoop (housekeeping) end", "SyncLoop (SYNC)", "SyncLoop (PLEG)", "SyncLoop (probe)"}

// journalOf is the lines a kubelet at r's tag logs from its loop's log
// sites, in guessOrder, each site once, as classify reads them.
func journalOf(r *extractor.Reading) []Line {
	type at struct {
		ls   extractor.LogSite
		key  string
		rank int
	}
	var sites []at
	seen := map[string]bool{}
	for _, c := range r.Function.Cases {
		for _, ls := range c.Logs {
			if k := fmt.Sprint(ls.Line, ls.Message); seen[k] || ls.Severity != "info" {
				continue
			} else {
				seen[k] = true
			}
			rank := len(guessOrder)
			for i, p := range guessOrder {
				if ls.Message == p || (p != "SyncLoop (housekeeping)" && strings.HasPrefix(ls.Message, p)) {
					rank = i
					break
				}
			}
			sites = append(sites, at{ls, c.Key, rank})
		}
	}
	slices.SortStableFunc(sites, func(a, b at) int { return a.rank - b.rank })
	c := New(nil)
	var out []Line
	for _, s := range sites {
		out = append(out, c.ClassifyString(siteLine(s.ls, s.key)))
	}
	return out
}

// TestGuessFixtureReadings: lines at the log sites of each tag of the
// committed Readings tell that tag, and prefer the one the feed reads at
// when several fit; lines of a tag not indexed name none.
func TestGuessFixtureReadings(t *testing.T) {
	tags := []string{"v1.20.0", "v1.25.0", "v1.31.0", "v1.37.2"}
	var rs []*extractor.Reading
	for _, tag := range tags {
		rs = append(rs, readingFor(t, tag))
	}
	sites := NewSites(rs)
	if !slices.Equal(sites.Tags(), tags) {
		t.Fatalf("indexed %v", sites.Tags())
	}
	for i, tag := range tags {
		g := sites.NewGuess()
		if _, ok := g.Tag(""); ok {
			t.Fatal("a guess before any line")
		}
		for _, l := range journalOf(rs[i]) {
			g.Observe(&l)
		}
		if got, ok := g.Tag("v1.99.0"); !ok || got != tag || len(g.Candidates()) != 1 {
			t.Errorf("%s's lines: guess %q %v, candidates %v", tag, got, ok, g.Candidates())
		}
	}
	// Without v1.31.0 indexed, its lines fit no tag (its kubelet.go lines
	// are its own): no guess rather than a wrong one.
	g := NewSites([]*extractor.Reading{rs[0], rs[1], rs[3]}).NewGuess()
	for _, l := range journalOf(rs[2]) {
		g.Observe(&l)
	}
	if got, ok := g.Tag(""); ok {
		t.Errorf("v1.31.0's lines, v1.31.0 not indexed: guessed %s", got)
	}
	// Lines at no log site (noise) say nothing.
	g = sites.NewGuess()
	for range 10 {
		l := New(nil).ClassifyString(`I1130 01:02:03.000000    1234 fs.go:100] "readlink /proc/1/fd/7: permission denied"`)
		if g.Observe(&l) {
			t.Fatal("noise narrowed the guess")
		}
	}
	if g.Lines() != 0 {
		t.Fatalf("noise counted: %d", g.Lines())
	}
}

// TestVersionLinesTable measures, over the real Readings of every minor
// release from v1.20.0 (sweepTags) and the tags in SYNCLOOP_GUESS_TAGS
// (space-separated, e.g. patch releases and pre-releases), how many lines
// at log sites it takes to tell each tag from the others, in the order a
// kubelet at -v=4 logs them (guessOrder), and which tags log every site
// alike (those no line can tell apart). Run with -v to see the table.
func TestVersionLinesTable(t *testing.T) {
	tags := sweepTags(t)
	for _, tag := range strings.Fields(os.Getenv("SYNCLOOP_GUESS_TAGS")) {
		if !slices.Contains(tags, tag) {
			tags = append(tags, tag)
		}
	}
	extractortest.NeedNetwork(t)
	var rs []*extractor.Reading
	for _, tag := range tags {
		// From the user's cache of Readings (syncloop extract fills it),
		// else extracted from the module proxy's zip.
		r, err := extractor.Load(t.Context(), extractor.Options{Tag: tag})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	sites := NewSites(rs)
	var table strings.Builder
	fmt.Fprintf(&table, "%-16s %6s %6s  %s\n", "tag", "lines", "guess", "told apart from all but")
	for _, r := range rs {
		lines := journalOf(r)
		final := sites.NewGuess()
		for _, l := range lines {
			final.Observe(&l)
		}
		want := final.Candidates()
		if !slices.Contains(want, r.Tag) {
			t.Errorf("%s: its own lines leave %v", r.Tag, want)
			continue
		}
		// lines: how many it takes to narrow the candidates to the final
		// set; guess: to name the tag (at least minGuessLines).
		g := sites.NewGuess()
		n, named := 0, 0
		for _, l := range lines {
			if n == 0 && slices.Equal(g.Candidates(), want) {
				n = g.Lines()
			}
			if _, ok := g.Tag(r.Tag); ok && slices.Equal(g.Candidates(), want) {
				named = g.Lines()
				break
			}
			g.Observe(&l)
		}
		if n == 0 {
			n = g.Lines()
		}
		if named == 0 {
			named = g.Lines()
		}
		peers := slices.DeleteFunc(slices.Clone(want), func(s string) bool { return s == r.Tag })
		fmt.Fprintf(&table, "%-16s %6d %6d  %v\n", r.Tag, n, named, peers)
		if got, ok := g.Tag(r.Tag); !ok || got != r.Tag {
			t.Errorf("%s: guess %q %v", r.Tag, got, ok)
		}
	}
	t.Logf("lines at log sites to tell each tag (kubelet -v=4 order: %q …):\n%s", guessOrder, table.String())
}
