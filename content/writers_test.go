package content_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

// claimTags are the tags a note's writer claim is held to: the oldest
// served, the container case's first, and the default (newest served).
var claimTags = []string{"v1.20.0", "v1.31.0", extractor.DefaultTag}

// TestNoteWriterClaims holds each case note's hand-written writer claim
// (front matter "writer:", the worksheet's and margin's prose) to the writers
// derived from the source at each tag where the case exists: the claim must
// name the function that sends on the channel (a writer not behind a
// feature gate, when there is one), or, for a ticker's channel, the ticker.
// A claim true at one tag and false at another is flagged here, not shipped.
func TestNoteWriterClaims(t *testing.T) {
	extractortest.NeedNetwork(t)
	extractortest.Prefetch(claimTags...)
	notes, err := content.Notes()
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range claimTags {
		r := extractortest.Reading(t, tag, nil)
		for _, n := range notes {
			if n.Kind != content.KindCase {
				continue
			}
			c, ok := r.Function.CaseByKey(n.Key)
			if !ok {
				continue
			}
			claim := n.Front["writer"]
			if claim == "" {
				t.Errorf("note %s has no writer claim", n.Key)
				continue
			}
			if msg := claimDisagrees(claim, c); msg != "" {
				t.Errorf("note %s at %s: its writer %q %s", n.Key, tag, claim, msg)
			}
		}
	}
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
		if !strings.Contains(w.Note, "feature gate") {
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
	}}
	for _, tc := range []struct {
		claim string
		ok    bool
	}{
		{"the GenericPLEG's Relist goroutine", false},
		{"Relist, through reconcilePodRecord", true},
		{"the EventedPLEG's sendPodLifecycleEvent", false}, // gated: not the main writer
	} {
		if got := claimDisagrees(tc.claim, c) == ""; got != tc.ok {
			t.Errorf("%q agrees = %v, want %v", tc.claim, got, tc.ok)
		}
	}
	tick := &extractor.Case{Made: []extractor.Site{{Note: "ticker: written by the Go runtime every period"}}}
	if claimDisagrees("the syncTicker", tick) != "" || claimDisagrees("getPodsToSync", tick) == "" {
		t.Error("a ticker's case: the claim must name the ticker")
	}
}
