package site

// writers.go shapes a case's derived writers (extractor.Case's Made,
// Writers, Upstream, Goroutine) for its margin, "Written by (from the source
// at TAG)", and for the worksheet's answer key.

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/syncloop/syncloop/extractor"
)

// writtenView is a case's "Written by" block.
type writtenView struct {
	Tag       string
	Ticker    bool          // every make is a ticker: the runtime writes it
	Writers   []writerGroup // the sends, by function
	Feeders   []writerGroup // one level up: what feeds the writers
	Made      []siteLink
	Goroutine []siteLink
}

// writerGroup is one function's sends: (*podStorage).Merge, six lines.
type writerGroup struct {
	Func  string // the symbol, pkg path included
	Short string // "(*podStorage).Merge"
	Pkg   string // "pkg/kubelet/config"
	Note  string // what every site of the group shares
	Sites []siteLink
}

type siteLink struct {
	extractor.Site
	Short string // "config.go:156"
}

func link(s extractor.Site) siteLink {
	return siteLink{Site: s, Short: fmt.Sprintf("%s:%d", path.Base(s.File), s.Line)}
}

func newWrittenView(tag string, c extractor.Case) writtenView {
	w := writtenView{Tag: tag, Ticker: len(c.Made) > 0}
	for _, m := range c.Made {
		w.Made = append(w.Made, link(m))
		if !strings.Contains(m.Note, "ticker") {
			w.Ticker = false
		}
	}
	for _, g := range c.Goroutine {
		w.Goroutine = append(w.Goroutine, link(g))
	}
	w.Writers = groupSites(c.Writers)
	// The main writers first: those that run whatever the feature gates.
	slices.SortStableFunc(w.Writers, func(a, b writerGroup) int {
		return cmp.Compare(gated(a.Note), gated(b.Note))
	})
	w.Feeders = groupSites(c.Upstream)
	return w
}

func gated(note string) int {
	if strings.Contains(note, "feature gate") {
		return 1
	}
	return 0
}

// groupSites groups sites by function, in order of first appearance.
func groupSites(sites []extractor.Site) []writerGroup {
	var out []writerGroup
	at := map[string]int{}
	for _, s := range sites {
		i, ok := at[s.Func]
		if !ok {
			i = len(out)
			at[s.Func] = i
			pkg, short := splitFunc(s.Func)
			out = append(out, writerGroup{Func: s.Func, Short: short, Pkg: pkg, Note: s.Note})
		} else if out[i].Note != s.Note {
			out[i].Note = sharedNote(out[i].Note, s.Note)
		}
		out[i].Sites = append(out[i].Sites, link(s))
	}
	return out
}

// splitFunc splits "pkg/kubelet/config.(*podStorage).Merge" at the dot that
// ends the package path.
func splitFunc(sym string) (pkg, short string) {
	slash := strings.LastIndex(sym, "/")
	dot := strings.Index(sym[slash+1:], ".")
	if dot < 0 {
		return "", sym
	}
	return sym[:slash+1+dot], sym[slash+1+dot+1:]
}

// sharedNote keeps the parts of two notes both have.
func sharedNote(a, b string) string {
	var out []string
	for part := range strings.SplitSeq(a, "; ") {
		if strings.Contains("; "+b+"; ", "; "+part+"; ") {
			out = append(out, part)
		}
	}
	return strings.Join(out, "; ")
}

// writersAnswer is the worksheet's answer key for a case: the functions
// that send on its channel at the tag, or the ticker.
func writersAnswer(w writtenView) string {
	if w.Ticker {
		var at []string
		for _, m := range w.Made {
			at = append(at, m.Short)
		}
		return "the Go runtime, through a ticker made at " + strings.Join(at, ", ")
	}
	if len(w.Writers) == 0 {
		return ""
	}
	var parts []string
	for _, g := range w.Writers {
		var lines []string
		for _, s := range g.Sites {
			lines = append(lines, s.Short)
		}
		p := fmt.Sprintf("`%s` (%s)", g.Func, strings.Join(lines, ", "))
		if g.Note != "" {
			p += " [" + g.Note + "]"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}
