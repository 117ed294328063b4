package site

// A readingView is what the templates render for one tag: built once, when
// the tag's Reading arrives, from the Reading and the notes. Nothing in it
// knows a line number that the Reading did not give.

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
)

type readingView struct {
	R *extractor.Reading

	Intro, PodWorkersNote, TwoSetsNote noteView

	Doc       template.HTML // the doc comment's lines, highlighted
	DocLines  string        // "2709–2745"
	Segments  []segment     // the function, split at its cases
	Cases     []*caseView
	Helpers   []helperView
	Absent    []noteView // case notes whose case is not at this tag
	Reconcile reconcileView
	CasesJSON string // data-cases for the live pane: [{key,start,end,hue}]
	Upstream  string // the whole function upstream
	Verified  string // the footer's sentence: where the source came from, how it was checked
	TwoSets   []setGroup
	// Hidden: the site's notes and answers were left out (withoutNotes).
	Hidden bool

	code *highlighted // the function's lines, for the compare page (compare.go)
}

// withoutNotes is v without the site's notes and answers: the cases'
// notes, who writes each channel and its element type, the intro, the two
// sets' note and where they are declared, the pod_workers note, the notes
// of cases not at the tag. The source stays. Hidden is set, so the page
// says why they are missing.
func (v *readingView) withoutNotes() *readingView {
	c := *v
	c.Hidden = true
	c.Intro, c.PodWorkersNote, c.TwoSetsNote = noteView{}, noteView{}, noteView{}
	c.Absent, c.TwoSets = nil, nil
	byOld := make(map[*caseView]*caseView, len(v.Cases))
	c.Cases = make([]*caseView, len(v.Cases))
	for i, cv := range v.Cases {
		n := *cv
		n.Note = noteView{Key: cv.Note.Key}
		n.Written = writtenView{} // who writes the channel is the students' to answer
		n.Type = ""               // and what flows on it
		c.Cases[i], byOld[cv] = &n, &n
	}
	c.Segments = make([]segment, len(v.Segments))
	for i, sg := range v.Segments {
		if sg.Case != nil {
			sg.Case = byOld[sg.Case]
		}
		c.Segments[i] = sg
	}
	return &c
}

// withoutAnswers is r as reading.json serves it in quiz mode: without
// what the worksheet asks the reader to find, each case's writers (who
// makes, writes, feeds the channel and from which goroutine) and element
// type, and where the two sets are declared; without the symbols the
// site's notes link to either (the page shows no note, and among them are
// the writers and the sets). The source, cases and log sites stay.
func withoutAnswers(r *extractor.Reading) *extractor.Reading {
	c := *r
	c.TwoSets = []extractor.SetDecl{}
	c.Symbols = nil
	c.Function.Cases = slices.Clone(r.Function.Cases)
	for i := range c.Function.Cases {
		cs := &c.Function.Cases[i]
		cs.Made, cs.Writers, cs.Upstream, cs.Goroutine = []extractor.Site{}, []extractor.Site{}, []extractor.Site{}, []extractor.Site{}
		cs.Type = ""
	}
	return &c
}

// noteView is one rendered note; HTML is empty when there is no such note.
type noteView struct {
	Key, Title string
	HTML       template.HTML
	Front      map[string]string
}

// segment is a run of the function's lines: one case, or the lines between.
type segment struct {
	Case       *caseView // nil between cases
	Start, End int
	Code       template.HTML
}

type caseView struct {
	extractor.Case
	Upstream string
	Note     noteView
	Helpers  []string // helpers the case calls, shown beside it
	HelperAt map[string]int
	Hue      string // the case's colour slot on the page (data-hue)
	Written  writtenView
}

// hueOf is a case key's colour slot as the page names it: "0"…"7" for the
// keys extractor.CaseKeys knows, "other" for a key a later tag adds.
func hueOf(key string) string {
	if i := extractor.CaseHue(key); i >= 0 {
		return fmt.Sprint(i)
	}
	return "other"
}

type helperView struct {
	extractor.Helper
	Code template.HTML
}

type setGroup struct {
	Name  string
	Decls []extractor.SetDecl
}

// provenance says, in one sentence for the footer, where the Reading's source
// came from and exactly how it was checked (Reading.Source and Verified).
func provenance(r *extractor.Reading) string {
	from := map[string]string{
		"proxy":    "from the Go module proxy",
		"modcache": "from the local Go module cache",
		"dir":      "from a local checkout (--source-dir)",
	}[r.Source]
	if from == "" {
		from = "from an unrecorded source"
	}
	how := map[string]string{
		extractor.VerifiedPinnedSumDB: "verified against the hash pinned in syncloop and the Go checksum database",
		extractor.VerifiedSumDB:       "verified against the Go checksum database",
		extractor.VerifiedPinned:      "verified against the hash pinned in syncloop, with no checksum database lookup",
		extractor.VerifiedZiphash:     "verified against the .ziphash the go command wrote when it checked the zip",
	}[r.Verified]
	switch {
	case how != "":
	case r.Verified == extractor.VerifiedNone && r.Source == "dir":
		how = "which has no checksum: not verified"
	case r.Verified == extractor.VerifiedNone:
		how = "not verified: GOSUMDB=off, GONOSUMDB or GOPRIVATE turned the checksum database off"
	default:
		how = "with no record of how it was verified"
	}
	return fmt.Sprintf("syncloop read %s@%s %s, %s.", extractor.Module, r.Tag, from, how)
}

// resolver resolves a note's sym: links against the Reading's Symbols.
func resolver(r *extractor.Reading) func(string) (string, bool) {
	return func(sym string) (string, bool) {
		if name, ok := strings.CutPrefix(sym, content.ReadingScheme); ok {
			return readingURL(r.Tag, name)
		}
		s, ok := r.Symbols[sym]
		if !ok || !s.Found {
			return "", false
		}
		if s.Upstream != "" {
			return s.Upstream, true
		}
		return extractor.UpstreamURL(r.Tag, s.File, s.Line, s.Line), true
	}
}

// readingURL is the page of the site's reading name at tag: the second
// reading's, "volume-manager".
func readingURL(tag, name string) (string, bool) {
	if name != PageVolume {
		return "", false
	}
	return "/k8s/" + url.PathEscape(tag) + "/" + PageVolume, true
}

// newReadingView is what a tag's pages show of its Reading: the notes
// rendered, the function highlighted and cut into its cases, the helpers,
// the doc comment beside the select, and the two sets.
func newReadingView(r *extractor.Reading) (*readingView, error) {
	f := &r.Function
	if f.Text == "" || len(f.Cases) == 0 {
		return nil, fmt.Errorf("reading for %s has no function text or no cases", r.Tag)
	}
	v := &readingView{
		R:        r,
		Upstream: extractor.UpstreamURL(r.Tag, f.File, f.DocStart, f.End),
		Verified: provenance(r),
	}
	caseNotes, err := v.addNotes(r)
	if err != nil {
		return nil, err
	}
	var loopRefs []extractor.Ref
	if r.Defs != nil {
		loopRefs = r.Defs.Loop
	}
	toks, err := tokenise(f.Text)
	if err != nil {
		return nil, err
	}
	code := toks.render(f.DocStart, loopRefs)
	// The compare page shows the lines without controls (it loads no
	// peek.js).
	v.code = toks.render(f.DocStart, nil)
	if f.DocStart < f.Start {
		v.Doc = code.block(f.DocStart, f.Start-1)
		v.DocLines = fmt.Sprintf("%d–%d", f.DocStart, f.Start-1)
	}
	helperAt := map[string]int{}
	for _, h := range f.Helpers {
		hc, err := highlightRefs(h.Text, h.DocStart, loopRefs)
		if err != nil {
			return nil, err
		}
		v.Helpers = append(v.Helpers, helperView{Helper: h, Code: hc.block(h.DocStart, h.End)})
		helperAt[h.Name] = h.Start
	}
	if err := v.addCases(r, code, caseNotes, helperAt); err != nil {
		return nil, err
	}
	v.Reconcile = reconcile(f)
	v.TwoSets = groupTwoSets(r.TwoSets)
	return v, nil
}

// addNotes renders the site's notes against r's symbols: the intro and
// the pages' notes into v, a case's note into the map it returns (by case
// key), and a note on a case r lacks into v.Absent.
func (v *readingView) addNotes(r *extractor.Reading) (caseNotes map[string]noteView, err error) {
	notes, err := content.Notes()
	if err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	resolve := resolver(r)
	caseNotes = map[string]noteView{}
	for _, n := range notes {
		h, err := content.Render(n, resolve)
		if err != nil {
			return nil, fmt.Errorf("note %s: %w", n.Key, err)
		}
		nv := noteView{Key: n.Key, Title: n.Title, HTML: h, Front: n.Front}
		switch {
		case n.Kind == "case":
			caseNotes[n.Key] = nv
			if _, ok := r.Function.CaseByKey(n.Key); !ok {
				v.Absent = append(v.Absent, nv)
			}
		case n.Key == "intro":
			v.Intro = nv
		case n.Key == "pod-workers":
			v.PodWorkersNote = nv
		case n.Key == "two-sets":
			v.TwoSetsNote = nv
		}
	}
	return caseNotes, nil
}

// addCases cuts the highlighted function into segments, in source order:
// each case with its note, helpers and writers, and the lines between
// them; CasesJSON gives the cases' lines and hues to the page's scripts.
func (v *readingView) addCases(r *extractor.Reading, code *highlighted, caseNotes map[string]noteView, helperAt map[string]int) error {
	f := &r.Function
	cases := slices.Clone(f.Cases)
	slices.SortFunc(cases, func(a, b extractor.Case) int { return a.Start - b.Start })
	type jsonCase struct {
		Key   string `json:"key"`
		Start int    `json:"start"`
		End   int    `json:"end"`
		Hue   string `json:"hue"`
	}
	var jc []jsonCase
	at := f.Start
	for _, c := range cases {
		cv := &caseView{
			Case:     c,
			Upstream: extractor.UpstreamURL(r.Tag, f.File, c.Start, max(c.End, c.Start)),
			Note:     caseNotes[c.Key],
			HelperAt: helperAt,
			Hue:      hueOf(c.Key),
			Written:  newWrittenView(r.Tag, c),
		}
		for _, h := range f.Helpers {
			if slices.Contains(h.Cases, c.Key) {
				cv.Helpers = append(cv.Helpers, h.Name)
			}
		}
		end := max(c.End, c.Start)
		if c.Start > at {
			v.Segments = append(v.Segments, segment{Start: at, End: c.Start - 1, Code: code.block(at, c.Start-1)})
		}
		v.Segments = append(v.Segments, segment{Case: cv, Start: c.Start, End: end, Code: code.block(c.Start, end)})
		v.Cases = append(v.Cases, cv)
		jc = append(jc, jsonCase{c.Key, c.Start, end, cv.Hue})
		at = end + 1
	}
	if at <= f.End {
		v.Segments = append(v.Segments, segment{Start: at, End: f.End, Code: code.block(at, f.End)})
	}
	b, err := json.Marshal(jc)
	if err != nil {
		return err
	}
	v.CasesJSON = string(b)
	return nil
}

// groupTwoSets groups the two sets' declarations by set, in first-seen order.
func groupTwoSets(decls []extractor.SetDecl) []setGroup {
	var groups []setGroup
	for _, d := range decls {
		i := slices.IndexFunc(groups, func(g setGroup) bool { return g.Name == d.Name })
		if i < 0 {
			groups = append(groups, setGroup{Name: d.Name})
			i = len(groups) - 1
		}
		groups[i].Decls = append(groups[i].Decls, d)
	}
	return groups
}

// reconcileView sets the channels the function's doc comment names beside
// the cases its select actually has.
type reconcileView struct {
	Doc       []docChannel
	Unnamed   []extractor.Case // cases no doc comment line accounts for
	Cases     int
	Explained []string // one sentence per difference
}

type docChannel struct {
	Name, Says string
	Keys       []string // the cases at this tag the line stands for
}

// docBullet is one "- configCh: dispatch …" (or "* configCh: …") line.
var docBullet = regexp.MustCompile(`^\s*[-*]\s+([^:]{1,40}):\s*(.*)$`)

// reconcile reads the bulleted channel list of the doc comment ("the
// different channels are handled as follows") and maps each to cases.
func reconcile(f *extractor.Function) reconcileView {
	rv := reconcileView{Cases: len(f.Cases)}
	claimed := map[string]bool{}
	lines := strings.Split(f.Doc, "\n")
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "handled as follows") }); i >= 0 {
		lines = lines[i+1:]
	}
	for _, l := range lines {
		if m := docBullet.FindStringSubmatch(l); m != nil {
			rv.Doc = append(rv.Doc, docChannel{Name: strings.TrimSpace(m[1]), Says: strings.TrimSpace(m[2])})
			continue
		}
		if n := len(rv.Doc); n > 0 && strings.TrimSpace(l) != "" {
			rv.Doc[n-1].Says += " " + strings.TrimSpace(l)
		}
	}
	for i := range rv.Doc {
		d := &rv.Doc[i]
		for _, c := range f.Cases {
			if docNames(d.Name, c) {
				d.Keys = append(d.Keys, c.Key)
				claimed[c.Key] = true
			}
		}
		if len(d.Keys) > 1 {
			rv.Explained = append(rv.Explained, fmt.Sprintf(
				"The doc comment's one “%s” is %d cases here, one per manager that publishes results: %s.",
				d.Name, len(d.Keys), strings.Join(d.Keys, ", ")))
		}
		if len(d.Keys) == 0 {
			rv.Explained = append(rv.Explained, fmt.Sprintf("The doc comment names “%s”, but no case reads it here.", d.Name))
		}
	}
	for _, c := range f.Cases {
		if !claimed[c.Key] {
			rv.Unnamed = append(rv.Unnamed, c)
			rv.Explained = append(rv.Explained, fmt.Sprintf(
				"The %s case (%s) came later than the doc comment, which does not mention it.", c.Key, c.Channel))
		}
	}
	return rv
}

// docNames reports whether the doc comment's channel name stands for c:
// "plegCh" for the case on plegCh, "liveness manager" or "health manager"
// for the cases on the prober managers' Updates().
func docNames(name string, c extractor.Case) bool {
	if strings.HasSuffix(name, "Ch") {
		return c.Channel == name
	}
	if !strings.Contains(name, "manager") {
		return false
	}
	// At v1.20 the line says "liveness manager"; later ones, with three
	// prober managers, "health manager". Either stands for every prober case.
	return extractor.IsProbeKey(c.Key)
}
