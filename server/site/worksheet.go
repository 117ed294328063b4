package site

import (
	"bytes"
	"cmp"
	"fmt"

	"github.com/syncloop/syncloop/extractor"
)

// answerKey is the site's own answers to the worksheet at the tag, as
// Markdown: a line per case with its channel, element type and writer (the
// sends derived from the source at the tag; blank when none was found), the
// two sets with file:line, and the sentence's question. It is what the site
// knows, not a reader's hand-in (annotations.Worksheet builds that from what
// readers wrote), and says so.
func answerKey(v *readingView) []byte {
	r, f := v.R, &v.R.Function
	var b bytes.Buffer
	fmt.Fprintf(&b, "# syncloop answer key: (*Kubelet).%s at %s %s\n\n", f.Name, r.Module, r.Tag)
	fmt.Fprintf(&b, "Source: [%s:%d-%d](%s)\n\n", f.File, f.Start, f.End, extractor.UpstreamURL(r.Tag, f.File, f.Start, f.End))
	fmt.Fprintf(&b, "The site's own answers, from its notes and the source at %s: for an instructor, or to check a worksheet after handing it in. Not a hand-in: a reader's worksheet is what they wrote (\"Your worksheet\" on the reading page).\n\n", r.Tag)
	fmt.Fprintf(&b, "## The %d cases of the select\n\n", len(v.Cases))
	fmt.Fprintf(&b, "One line per case: the channel it reads, the element type that flows on it, and who writes to it (the sends on it, from the source at %s).\n\n", r.Tag)
	for _, c := range v.Cases {
		writer := writersAnswer(c.Written)
		if writer == "" {
			writer = "____________________"
		}
		fmt.Fprintf(&b, "- **%s** (%s:%d): channel `%s`, element type `%s`, written by %s\n",
			c.Key, f.File, c.Start, c.Channel, cmp.Or(c.Type, "(none)"), writer)
	}
	fmt.Fprintf(&b, "\n## The two sets\n\n")
	if len(v.TwoSets) == 0 {
		fmt.Fprintf(&b, "No DesiredStateOfWorld or ActualStateOfWorld type was found under pkg/ at %s.\n", r.Tag)
	}
	for _, g := range v.TwoSets {
		fmt.Fprintf(&b, "- **%s**:\n", g.Name)
		for _, d := range g.Decls {
			fmt.Fprintf(&b, "  - [%s:%d](%s) (%s)\n", d.File, d.Line, upstreamOr(d.Upstream, r.Tag, d.File, d.Line), d.Kind)
		}
	}
	fmt.Fprintf(&b, "\n## The pattern, in one sentence\n\n")
	fmt.Fprintf(&b, "Connect the loop to level-triggered reconcile: how does each case turn an event into \"compare the desired state with the actual state and close the gap\", so that a missed or repeated event does no harm?\n\n")
	fmt.Fprintf(&b, "> ____________________________________________________________\n")
	return b.Bytes()
}

func upstreamOr(u, tag, file string, line int) string {
	if u != "" {
		return u
	}
	return extractor.UpstreamURL(tag, file, line, line)
}
