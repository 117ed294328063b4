package site

// What changed between two tags, case by case (/k8s/compare/FROM...TO), and
// one case across every minor release (/k8s/history/KEY). The differences
// are the extractor/diff package's; this file only fetches the tags as the
// reading pages do and lays the differences out, with each tag's
// highlighted lines from its readingView.

import (
	"cmp"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/diff"
)

// compareView is the compare page.
type compareView struct {
	D                        *diff.Diff
	From, To                 *readingView
	FromUpstream, ToUpstream string // the whole function at each tag
	Cases                    []compareCase
	Sets                     []diff.Set
	Types                    []diff.Type // pod_workers types that differ
	SameTypes                int
	// Hidden: quiz mode; no notes, element types nor the two sets.
	Hidden bool
}

// compareCase is one case key, laid out both ways: side by side (wide
// screens) and unified (narrow ones); CSS shows one.
type compareCase struct {
	*diff.Case
	Note           noteView
	FromURL, ToURL string        // the clause upstream at each tag
	Tables         template.HTML // the clause in both layouts (codeTables)
	Added, Removed int           // lines, white space aside
	ChangedLogs    int
}

// sideRow is one row of a clause's lines: Kind is same, del, add or chg (a
// line on each side that differ). A unified row has one side, or both when
// the line is the same.
type sideRow struct {
	Kind       string
	FromN, ToN int
	From, To   template.HTML
}

// clauseRows lays out a case's clause at both tags from their highlighted
// lines.
func clauseRows(c *diff.Case, from, to *readingView) (side, uni []sideRow, added, removed int) {
	line := func(v *readingView) func(int) template.HTML {
		return func(n int) template.HTML {
			if v == nil || v.code == nil || n < v.code.first || n > v.code.last() {
				return ""
			}
			return v.code.lines[n-v.code.first]
		}
	}
	return clauseRowsBy(c, line(from), line(to))
}

// clauseRowsBy lays out c's texts, line n of either side highlighted by
// fromLine or toLine.
func clauseRowsBy(c *diff.Case, fromLine, toLine func(n int) template.HTML) (side, uni []sideRow, added, removed int) {
	fromAt, toAt := 0, 0
	if c.From != nil {
		fromAt = c.From.Start
	}
	if c.To != nil {
		toAt = c.To.Start
	}
	ops := diff.Lines(c.FromText, c.ToText)
	for k := 0; k < len(ops); {
		op := ops[k]
		if op.Kind == '=' {
			r := sideRow{Kind: "same", FromN: fromAt + op.From, ToN: toAt + op.To}
			r.From, r.To = fromLine(r.FromN), toLine(r.ToN)
			side = append(side, r)
			uni = append(uni, r)
			k++
			continue
		}
		var dels, adds []sideRow
		for ; k < len(ops) && ops[k].Kind != '='; k++ {
			if op := ops[k]; op.Kind == '-' {
				n := fromAt + op.From
				dels = append(dels, sideRow{Kind: "del", FromN: n, From: fromLine(n)})
			} else {
				n := toAt + op.To
				adds = append(adds, sideRow{Kind: "add", ToN: n, To: toLine(n)})
			}
		}
		removed += len(dels)
		added += len(adds)
		uni = append(append(uni, dels...), adds...)
		for i := range max(len(dels), len(adds)) {
			switch {
			case i < len(dels) && i < len(adds):
				side = append(side, sideRow{Kind: "chg", FromN: dels[i].FromN, From: dels[i].From, ToN: adds[i].ToN, To: adds[i].To})
			case i < len(dels):
				side = append(side, dels[i])
			default:
				side = append(side, adds[i])
			}
		}
	}
	return side, uni, added, removed
}

// codeTables writes a clause's two tables: side by side, and unified.
// Written here rather than in the template, where a few hundred rows of
// already-highlighted lines cost most of the compare's time.
func codeTables(from, to string, side, uni []sideRow) template.HTML {
	var b strings.Builder
	esc := template.HTMLEscapeString
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	b.WriteString(`<table class="sbs"><colgroup><col class="ln"><col><col class="ln"><col></colgroup>`)
	b.WriteString(`<thead><tr><th colspan="2" scope="col">` + esc(from) + `</th><th colspan="2" scope="col">` + esc(to) + `</th></tr></thead><tbody>`)
	for _, r := range side {
		b.WriteString("\n<tr class=\"" + r.Kind + `"><td class="ln">` + num(r.FromN) + `</td><td class="src">` + string(r.From) +
			`</td><td class="ln">` + num(r.ToN) + `</td><td class="src">` + string(r.To) + `</td></tr>`)
	}
	b.WriteString("\n</tbody></table>\n")
	b.WriteString(`<table class="uni"><caption><span class="mk-del">−</span> ` + esc(from) + ` <span class="mk-add">+</span> ` + esc(to) + `</caption>`)
	b.WriteString(`<colgroup><col class="ln"><col class="ln"><col class="mk"><col></colgroup><tbody>`)
	for _, r := range uni {
		mk, line := "", r.To
		switch r.Kind {
		case "del":
			mk, line = "−", r.From
		case "add":
			mk = "+"
		}
		b.WriteString("\n<tr class=\"" + r.Kind + `"><td class="ln">` + num(r.FromN) + `</td><td class="ln">` + num(r.ToN) +
			`</td><td class="mk">` + mk + `</td><td class="src">` + string(line) + `</td></tr>`)
	}
	b.WriteString("\n</tbody></table>")
	return template.HTML(b.String())
}

// noteFor is the note of a case key, as either tag's view rendered it
// (the newer tag's first: its symbols resolve there).
func noteFor(key string, views ...*readingView) noteView {
	for _, v := range views {
		for _, c := range v.Cases {
			if c.Key == key && c.Note.HTML != "" {
				return c.Note
			}
		}
		for _, n := range v.Absent {
			if n.Key == key {
				return n
			}
		}
	}
	return noteView{}
}

// newCompareView is the compare of a and b; hide leaves the site's notes
// and what is derived from them out (quiz mode): the notes, the element
// types, the two sets.
func newCompareView(a, b *tagState, hide bool) *compareView {
	d := diff.Compare(a.reading, b.reading)
	fa, fb := &a.reading.Function, &b.reading.Function
	v := &compareView{
		D: d, From: a.view, To: b.view,
		FromUpstream: extractor.UpstreamURL(a.tag, fa.File, fa.DocStart, fa.End),
		ToUpstream:   extractor.UpstreamURL(b.tag, fb.File, fb.DocStart, fb.End),
		Sets:         d.TwoSets,
		Hidden:       hide,
	}
	if hide {
		v.Sets = nil
	}
	for i := range d.Cases {
		c := &d.Cases[i]
		cc := compareCase{Case: c}
		if !hide {
			cc.Note = noteFor(c.Key, b.view, a.view)
		}
		if c.From != nil {
			cc.FromURL = extractor.UpstreamURL(a.tag, fa.File, c.From.Start, max(c.From.End, c.From.Start))
		}
		if c.To != nil {
			cc.ToURL = extractor.UpstreamURL(b.tag, fb.File, c.To.Start, max(c.To.End, c.To.Start))
		}
		for _, l := range c.Logs {
			if l.Status != diff.Same {
				cc.ChangedLogs++
			}
		}
		var side, uni []sideRow
		side, uni, cc.Added, cc.Removed = clauseRows(c, a.view, b.view)
		cc.Tables = codeTables(a.tag, b.tag, side, uni)
		v.Cases = append(v.Cases, cc)
	}
	for _, t := range d.PodWorkers {
		if t.Status == diff.Same {
			v.SameTypes++
		} else {
			v.Types = append(v.Types, t)
		}
	}
	return v
}

// diffLine is one line of a unified diff, classed by its first character.
type diffLine struct {
	Class, Text string
}

// diffLines splits a unified diff for the template.
func diffLines(u string) []diffLine {
	var out []diffLine
	for _, l := range strings.Split(strings.TrimSuffix(u, "\n"), "\n") {
		cls := "same"
		switch {
		case strings.HasPrefix(l, "@@"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
			cls = "hunk"
		case strings.HasPrefix(l, "+"):
			cls = "add"
		case strings.HasPrefix(l, "-"):
			cls = "del"
		}
		out = append(out, diffLine{cls, l})
	}
	return out
}

// compareURL is the compare page of two tags, optionally at one case.
func compareURL(from, to, key string) string {
	u := "/k8s/compare/" + url.PathEscape(from) + "..." + url.PathEscape(to)
	if key != "" {
		u += "#case-" + key
	}
	return u
}

// arrivalURL is the compare of the minor before since and since: where a
// note's case arrived ("" when the note gives no since).
func arrivalURL(key, since string) string {
	prev := diff.PreviousMinor(since)
	if prev == "" || extractor.CheckTag(since) != nil {
		return ""
	}
	return compareURL(prev, since, key)
}

// CompareForm is the "compare with…" form's target: it redirects to
// the compare page.
func (s *Site) CompareForm() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := func(name, def string) string {
			t := strings.TrimSpace(r.URL.Query().Get(name))
			if t == "" {
				t = def
			}
			if !strings.HasPrefix(t, "v") {
				t = "v" + t
			}
			return t
		}
		http.Redirect(w, r, compareURL(tag("from", s.cfg.DefaultTag), tag("to", s.cfg.DefaultTag), ""), http.StatusSeeOther)
	})
}

// Compare serves /k8s/compare/FROM...TO, fetching either tag as the
// reading pages do.
func (s *Site) Compare() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from, to, ok := strings.Cut(chi.URLParam(r, "range"), "...")
		if !ok {
			s.statusPage(w, r, http.StatusNotFound, pageData{
				Heading: "Not a compare",
				Message: fmt.Sprintf("%s names no two tags.", r.URL.Path),
				Advice:  "A compare is /k8s/compare/FROM...TO, e.g. /k8s/compare/v1.30.0..." + s.cfg.DefaultTag + ".",
			})
			return
		}
		for _, tag := range []string{from, to} {
			if err := extractor.CheckTag(tag); err != nil {
				s.loadFailed(w, r, tag, err)
				return
			}
		}
		s.fetch(s.client(r), to) // both fetch at once: the 202 for from returns before to is asked for
		a, ok := s.loaded(w, r, from, " for the compare with "+to)
		if !ok {
			return
		}
		b, ok := s.loaded(w, r, to, " for the compare with "+from)
		if !ok {
			return
		}
		body, err := s.renderCompare(a, b, s.quiz(r))
		if err != nil {
			s.log.Error("render compare", "from", from, "to", to, "err", err)
			s.statusPage(w, r, http.StatusInternalServerError, pageData{Tag: to, Heading: "Could not render the compare", Message: err.Error()})
			return
		}
		writeHTML(w, body)
	})
}

func (s *Site) renderCompare(a, b *tagState, quiz bool) ([]byte, error) {
	tags, _ := s.readableTags()
	return s.execute("compare.html", pageData{
		Title:      fmt.Sprintf("syncLoopIteration, %s → %s", a.tag, b.tag),
		Page:       "compare",
		Tag:        b.tag,
		Tags:       tags,
		DefaultTag: s.cfg.DefaultTag,
		Compare:    newCompareView(a, b, quiz),
		Quiz:       quiz,
	})
}

func writeHTML(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(body)
}

// historyView is a case's history page.
type historyView struct {
	H     *diff.History
	Note  noteView
	Steps []historyStep
	Keys  []string // the other keys, for links
	Facts []string // one sentence per turn in the case's history
	// Hidden: quiz mode; no note and no element types.
	Hidden bool
}

type historyStep struct {
	diff.Step
	Prev    string // the tag before
	Compare string // the compare with the tag before, at this case
}

var caseKeyRE = regexp.MustCompile(extractor.CaseKeyPattern)

// caseKeyList names the known case keys for a message, from the one list
// of them (an upstream rename is one edit there).
var caseKeyList = strings.Join(extractor.CaseKeys[:], ", ")

// History serves /k8s/history/KEY: the case at every minor release
// from extractor.MinTag to the default tag's minor, fetched on demand.
func (s *Site) History() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := chi.URLParam(r, "key")
		if !caseKeyRE.MatchString(key) { // what a room may select, too
			s.statusPage(w, r, http.StatusNotFound, pageData{
				Heading: fmt.Sprintf("%q is not a case key", key),
				Message: "Case keys are " + caseKeyList + ".",
				Advice:  "Pick a case on a reading page and follow its history link.",
			})
			return
		}
		tags := diff.MinorTags(s.cfg.DefaultTag)
		rs, last, ok := s.historyReadings(w, r, key, tags)
		if !ok {
			return
		}
		h := diff.NewHistory(key, rs)
		if !slices.ContainsFunc(h.Tags, func(st diff.Step) bool { return st.Present }) {
			s.statusPage(w, r, http.StatusNotFound, pageData{
				Heading: "No case " + key,
				Message: fmt.Sprintf("No minor release from %s to %s has a case %q in syncLoopIteration's select.", tags[0], tags[len(tags)-1], key),
				Advice:  "Case keys are named for their channel: " + caseKeyList + ".",
			})
			return
		}
		quiz := s.quiz(r)
		v := newHistoryView(h, key, last, quiz)
		tagsList, _ := s.readableTags()
		body, err := s.execute("history.html", pageData{
			Title:      "The " + key + " case, minor by minor",
			Page:       "history",
			Tag:        s.cfg.DefaultTag,
			Tags:       tagsList,
			DefaultTag: s.cfg.DefaultTag,
			History:    v,
			Quiz:       quiz,
		})
		if err != nil {
			s.log.Error("render history", "key", key, "err", err)
			s.statusPage(w, r, http.StatusInternalServerError, pageData{Heading: "Could not render the history", Message: err.Error()})
			return
		}
		writeHTML(w, body)
	})
}

// historyReadings are the Readings of tags, oldest first, and the newest
// tag's view, once all are loaded (ok). Until then it answers itself: the
// newest waits as a reading page does, then the page says how far along
// the others are and reloads.
func (s *Site) historyReadings(w http.ResponseWriter, r *http.Request, key string, tags []string) (rs []*extractor.Reading, last *readingView, ok bool) {
	// The newest first: the page waits for it. Those past the history's
	// share of the load places wait their turn (nil), started by a reload.
	states := make([]*tagState, len(tags))
	for i := len(tags) - 1; i >= 0; i-- {
		st, no := s.fetchAs(historyClient, tags[i], false)
		if no != nil && !no.busy {
			s.refuseTag(w, r, tags[i], no)
			return nil, nil, false
		}
		states[i] = st
	}
	ready := 0
	for i, st := range states {
		if st == nil {
			continue
		}
		select {
		case <-st.done:
			if st.err != nil {
				s.loadFailed(w, r, tags[i], st.err)
				return nil, nil, false
			}
			ready++
			rs = append(rs, st.reading)
		default:
		}
	}
	if ready < len(tags) {
		// The last one waits as a reading page does, then says how far along.
		if states[len(tags)-1] != nil {
			if _, ok := s.loaded(w, r, tags[len(tags)-1], fmt.Sprintf(" and %d other minor releases (%d of %d ready)", len(tags)-1, ready, len(tags))); !ok {
				return nil, nil, false
			}
		}
		// It came in time; the others may not have.
		s.statusPage(w, r, http.StatusAccepted, pageData{
			Refresh: true,
			Heading: fmt.Sprintf("Fetching the minor releases for the history of %s…", key),
			Message: fmt.Sprintf("%d of %d minor releases (%s to %s) are ready; each first reading downloads a module zip through the Go module proxy.", ready, len(tags), tags[0], tags[len(tags)-1]),
			Advice:  "This page reloads itself every two seconds until they are.",
		})
		return nil, nil, false
	}
	return rs, states[len(states)-1].view, true
}

// newHistoryView is case key's history page: its note and the other cases
// as of the newest tag (last), each minor release linked to the compare
// with the one before, and a sentence for each turn in its history.
func newHistoryView(h *diff.History, key string, last *readingView, quiz bool) *historyView {
	v := &historyView{H: h, Hidden: quiz}
	if !quiz {
		v.Note = noteFor(key, last)
	}
	for _, c := range last.Cases {
		if c.Key != key {
			v.Keys = append(v.Keys, c.Key)
		}
	}
	prevStyles := ""
	for i, st := range h.Tags {
		hs := historyStep{Step: st}
		if i > 0 {
			hs.Prev = h.Tags[i-1].Tag
			hs.Compare = compareURL(hs.Prev, st.Tag, key)
		}
		styles := strings.Join(st.Styles, ", ")
		switch {
		case i == 0 && st.Present:
			v.Facts = append(v.Facts, fmt.Sprintf("At %s the case is there, logging in %s style.", st.Tag, cmp.Or(styles, "no")))
		case st.Status == diff.Added:
			v.Facts = append(v.Facts, fmt.Sprintf("The case arrived in %s.", st.Tag))
		case st.Status == diff.Removed:
			v.Facts = append(v.Facts, fmt.Sprintf("The case is gone in %s.", st.Tag))
		case st.Present && styles != prevStyles && prevStyles != "":
			v.Facts = append(v.Facts, fmt.Sprintf("Its logging became %s in %s (it was %s).", styles, st.Tag, prevStyles))
		}
		if st.Present {
			prevStyles = styles
		}
		v.Steps = append(v.Steps, hs)
	}
	return v
}
