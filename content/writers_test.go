package content_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/semver"
	"golang.org/x/sync/errgroup"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

// TestNoteWriterClaims holds each case note's hand-written writer claim
// (front matter "writer:", the worksheet's and margin's prose) to the writers
// derived from the source at every minor's newest version from v1.20 to the
// newest the proxy serves (extractortest.NewestPatches), and at each tag a
// claim says a change came in: the claim must name the function that sends
// on the channel (a writer not behind a feature gate nor unreachable, when
// there is one), or, for a ticker's channel, the ticker. A claim whose
// writer changed at a tag says so: "…; from v1.36.0 …" holds the text after
// it from that tag on, the text before it until then, and the derived
// writers must differ on the two sides. A claim true at one tag and false
// at another is flagged here, not shipped.
func TestNoteWriterClaims(t *testing.T) {
	extractortest.NeedNetwork(t)
	notes, err := content.Notes()
	if err != nil {
		t.Fatal(err)
	}
	tags := extractortest.NewestPatches(t, 20)
	for _, n := range notes {
		for _, seg := range claimSegments(n.Front["writer"]) {
			if seg.from != "" && !slices.Contains(tags, seg.from) {
				tags = append(tags, seg.from)
			}
		}
	}
	slices.SortFunc(tags, semver.Compare)
	extractortest.Prefetch(tags...)
	readings := make([]*extractor.Reading, len(tags))
	var g errgroup.Group
	g.SetLimit(2)
	for i, tag := range tags {
		g.Go(func() error { readings[i] = extractortest.Reading(t, tag, nil); return nil })
	}
	g.Wait()
	t.Logf("checked at %s", strings.Join(tags, " "))
	for _, n := range notes {
		if n.Kind != content.KindCase {
			continue
		}
		if n.Front["writer"] == "" {
			t.Errorf("note %s has no writer claim", n.Key)
			continue
		}
		checkClaim(t, n.Key, n.Front["writer"], tags, readings)
	}
}

// checkClaim holds one note's claim to the case's writers at each tag.
func checkClaim(t *testing.T, key, claim string, tags []string, readings []*extractor.Reading) {
	segs := claimSegments(claim)
	writersAt := map[string]string{} // tag → the case's writer functions
	for i, tag := range tags {
		c, ok := readings[i].Function.CaseByKey(key)
		if !ok {
			continue
		}
		writersAt[tag] = writerFuncs(c)
		seg := segs[0]
		for _, s := range segs[1:] {
			if semver.Compare(tag, s.from) >= 0 {
				seg = s
			}
		}
		if msg := claimDisagrees(seg.text, c); msg != "" {
			t.Errorf("note %s at %s: its writer %q %s", key, tag, seg.text, msg)
		}
	}
	for _, s := range segs[1:] {
		i := slices.Index(tags, s.from)
		if i < 1 {
			continue
		}
		before, after := writersAt[tags[i-1]], writersAt[s.from]
		if before == after {
			t.Errorf("note %s says its writer changed at %s, but %s and %s derive the same writers (%s)", key, s.from, tags[i-1], s.from, after)
		}
	}
}

// writerFuncs is the case's writers' functions, one line.
func writerFuncs(c *extractor.Case) string {
	var fs []string
	for _, w := range c.Writers {
		fs = append(fs, w.Func)
	}
	slices.Sort(fs)
	return strings.Join(slices.Compact(fs), " ")
}

// claimSegment is the part of a writer claim that holds from a tag on
// ("" for the first part: from the oldest tag).
type claimSegment struct{ from, text string }

var fromRE = regexp.MustCompile(`;\s*from (v1\.\d+(?:\.\d+(?:-[0-9A-Za-z.]+)?)?),?\s*`)

// claimSegments splits a claim at each "; from vX.Y.Z" ("from v1.37" is
// read as v1.37.0).
func claimSegments(claim string) []claimSegment {
	segs := []claimSegment{{}}
	last := 0
	for _, m := range fromRE.FindAllStringSubmatchIndex(claim, -1) {
		segs[len(segs)-1].text = claim[last:m[0]]
		from := claim[m[2]:m[3]]
		if semver.Canonical(from) != from {
			from += ".0"
		}
		segs = append(segs, claimSegment{from: from})
		last = m[1]
	}
	segs[len(segs)-1].text = claim[last:]
	return segs
}

// claimDisagrees says how a claim disagrees with the case's derived writers,
// "" when it agrees.
func claimDisagrees(claim string, c *extractor.Case) string {
	ticker := len(c.Made) > 0
	for _, m := range c.Made {
		ticker = ticker && strings.Contains(m.Note, "ticker")
	}
	if ticker {
		if !strings.Contains(strings.ToLower(claim), "ticker") {
			return "does not say that a ticker writes the channel"
		}
		return ""
	}
	if len(c.Writers) == 0 {
		return "names a writer, but no send on the channel was derived"
	}
	var want, all []string
	for _, w := range c.Writers {
		name := w.Func[strings.LastIndex(w.Func, ".")+1:]
		all = append(all, name)
		if !strings.Contains(w.Note, "feature gate") && !strings.Contains(w.Note, "unreachable") {
			want = append(want, name)
		}
	}
	if len(want) == 0 {
		want = all
	}
	for _, name := range want {
		if regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(name) + `\b`).MatchString(claim) {
			return ""
		}
	}
	return "names none of the functions that send on the channel: " + strings.Join(want, ", ")
}

// TestClaimDisagrees: the check itself, on made-up cases.
func TestClaimDisagrees(t *testing.T) {
	send := func(fn, note string) extractor.Site { return extractor.Site{Func: fn, Note: note} }
	c := &extractor.Case{Made: []extractor.Site{{Note: ""}}, Writers: []extractor.Site{
		send("pkg/kubelet/pleg.(*GenericPLEG).reconcilePodRecord", ""),
		send("pkg/kubelet/pleg.(*EventedPLEG).sendPodLifecycleEvent", "feature gate EventedPLEG"),
		send("pkg/kubelet/config.(*podStorage).sync", "unreachable: no caller outside tests ((*PodConfig).Sync)"),
	}}
	for _, tc := range []struct {
		claim string
		ok    bool
	}{
		{"the GenericPLEG's Relist goroutine", false},
		{"Relist, through reconcilePodRecord", true},
		{"the EventedPLEG's sendPodLifecycleEvent", false}, // gated: not the main writer
		{"podStorage.sync", false},                         // only tests reach it
	} {
		if got := claimDisagrees(tc.claim, c) == ""; got != tc.ok {
			t.Errorf("%q agrees = %v, want %v", tc.claim, got, tc.ok)
		}
	}
	if got := claimSegments("a; from v1.36 b, c; from v1.38.0-beta.0, d"); !slices.Equal(got, []claimSegment{{"", "a"}, {"v1.36.0", "b, c"}, {"v1.38.0-beta.0", "d"}}) {
		t.Errorf("claimSegments = %q", got)
	}
	tick := &extractor.Case{Made: []extractor.Site{{Note: "ticker: written by the Go runtime every period"}}}
	if claimDisagrees("the syncTicker", tick) != "" || claimDisagrees("getPodsToSync", tick) == "" {
		t.Error("a ticker's case: the claim must name the ticker")
	}
}
