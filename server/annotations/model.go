package annotations

// What a reader's notes look like on a page and in a hand-in: Markdown
// rendered in safe mode, checks against the source at the page's tag (never
// against the site's own notes), comments re-anchored to the tag, and the
// worksheet.md built from it all.

import (
	"bytes"
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/annotations/anchor"
)

// markdown renders readers' notes: GFM tables and lists, safe mode (raw
// HTML is omitted and javascript:, vbscript:, file: and data: links are
// dropped; html.WithUnsafe is never set). Readers' notes are someone
// else's text on every other reader's page.
var markdown = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify))

// Render is a note's text as safe HTML: Markdown, or the text itself
// when its shape would make Markdown costly (cost.go).
func Render(text string) string {
	text = CleanText(text)
	if costly(text) {
		return plainHTML(text)
	}
	var b bytes.Buffer
	if err := markdown.Convert([]byte(text), &b); err != nil {
		return ""
	}
	return b.String()
}

// Check is what the source says about an answer.
type Check struct {
	Level string `json:"level"` // "ok", "warn" or "empty"
	Text  string `json:"text"`
}

// View is a note as a page shows it at one tag.
type View struct {
	Note
	HTML   string         `json:"html,omitempty"`
	Checks []Check        `json:"checks,omitempty"`
	Anchor *anchor.Result `json:"anchor,omitempty"` // a comment's lines at this tag
}

// ViewAt renders n for a page at r's tag.
func ViewAt(r *extractor.Reading, n Note) View { return viewAt(r, n, false) }

// viewAt is ViewAt, with the checks quiz mode gives when quiz is set
// (checkQuiz: yes or no, never where).
func viewAt(r *extractor.Reading, n Note, quiz bool) View {
	v := View{Note: n}
	switch Kind(n.ID) {
	case "case", "comment", "sentence", "podworkers":
		v.HTML = Render(n.Text)
	}
	if n.Quote != nil && r != nil {
		res := anchor.Find(r, *n.Quote)
		v.Anchor = &res
	}
	switch {
	case r != nil && quiz:
		v.Checks = checkQuiz(r, n.ID, n.Text)
	case r != nil:
		v.Checks = CheckNote(r, n.ID, n.Text)
	}
	return v
}

// Expected is the ids of the notes a worksheet asks for at r's tag: a note,
// a writer and an exercise that fired it per case, the pod_workers
// question, the two sets, the sentence.
func Expected(r *extractor.Reading) []string {
	var ids []string
	for _, kind := range []string{"case.", "writer.", "exercise."} {
		for _, c := range r.Function.Cases {
			ids = append(ids, kind+c.Key)
		}
	}
	return append(ids, "podworkers", "set.desired", "set.actual", "sentence")
}

// PodWorkersQuestion is the exercise's pod_workers question, as the
// worksheet asks it (the pod_workers note answers it).
const PodWorkersQuestion = "What guarantees that two goroutines never sync the same pod at once?"

// Views is every note of notes at r's tag, with the expected ones not yet
// written as empty notes (Rev 0), so that their checks show.
func Views(r *extractor.Reading, notes []Note) []View { return views(r, notes, false) }

// views is Views, in quiz mode when quiz is set.
func views(r *extractor.Reading, notes []Note, quiz bool) []View {
	return viewsWith(r, notes, quiz, func(n Note) View { return viewAt(r, n, quiz) })
}

// viewsWith is views with each written note's view made by at.
func viewsWith(r *extractor.Reading, notes []Note, quiz bool, at func(Note) View) []View {
	have := map[string]bool{}
	var out []View
	for _, n := range notes {
		have[n.ID] = true
		out = append(out, at(n))
	}
	if r != nil {
		for _, id := range Expected(r) {
			if !have[id] {
				out = append(out, viewAt(r, Note{ID: id}, quiz))
			}
		}
	}
	sortViews(r, out)
	return out
}

// sortViews puts views in the worksheet's order: cases in the function's
// order, then the writers, the sets, the sentence, the comments by line.
func sortViews(r *extractor.Reading, vs []View) {
	order := map[string]int{}
	if r != nil {
		for i, id := range Expected(r) {
			order[id] = i
		}
	}
	// Comments on the same lines are a thread: the first, then its replies
	// in the order they were written.
	rank := func(v View) (int, int, string) {
		if i, ok := order[v.ID]; ok {
			return 0, i, ""
		}
		if Kind(v.ID) == "comment" {
			line := 1 << 30
			if v.Anchor != nil && v.Anchor.Status != anchor.Orphan {
				line = v.Anchor.Start
			} else if v.Quote != nil {
				line = 1<<29 + v.Quote.Start
			}
			return 2, line, v.CreatedAt().UTC().Format(time.RFC3339Nano) + " " + v.ID
		}
		return 1, 0, v.ID
	}
	slices.SortStableFunc(vs, func(a, b View) int {
		a1, a2, a3 := rank(a)
		b1, b2, b3 := rank(b)
		return cmp.Or(cmp.Compare(a1, b1), cmp.Compare(a2, b2), cmp.Compare(a3, b3))
	})
}

var fileLineRE = regexp.MustCompile(`([A-Za-z0-9_./-]+\.go):(\d+)`)

// symbolRE matches a symbol as the notes write them, with or without the
// package path: pkg/kubelet/config.(*PodConfig).Updates, (*PodConfig).Updates,
// podStorage.Merge, results.(*manager).Set.
var symbolRE = regexp.MustCompile(`(?:sym:)?((?:[a-z0-9_./-]+\.)?(?:\(\*?[A-Za-z_][A-Za-z0-9_]*\)|[A-Za-z_][A-Za-z0-9_]*)\.[A-Za-z_][A-Za-z0-9_]*)`)

// CheckNote is what the source at r's tag says about a note's text.
func CheckNote(r *extractor.Reading, id, text string) []Check {
	kind, key, _ := strings.Cut(id, ".")
	text = strings.TrimSpace(text)
	switch kind {
	case "case":
		if _, ok := r.Function.CaseByKey(key); !ok {
			return []Check{{"warn", fmt.Sprintf("The select has no %s case at %s.", key, r.Tag)}}
		}
		if text == "" {
			return []Check{{"empty", "This case is still empty."}}
		}
	case "writer":
		if text == "" {
			return []Check{{"empty", "Who writes this channel?"}}
		}
		return checkWriter(r, key, text)
	case "set":
		name := map[string]string{"desired": "DesiredStateOfWorld", "actual": "ActualStateOfWorld"}[key]
		if text == "" {
			// Not the answer: in quiz mode the page hides the set names
			// until the reader has written theirs.
			return []Check{{"empty", "Which set, declared where? Its type's name and file:line"}}
		}
		return checkSet(r, name, text)
	case "sentence":
		if text == "" {
			return []Check{{"empty", "The sentence is still to write."}}
		}
	case "exercise":
		if _, ok := r.Function.CaseByKey(key); !ok {
			return []Check{{"warn", fmt.Sprintf("The select has no %s case at %s.", key, r.Tag)}}
		}
		if text == "" {
			return []Check{{"empty", "Which exercise fired this channel?"}}
		}
	case "podworkers":
		if text == "" {
			return []Check{{"empty", "The pod_workers question is still to answer."}}
		}
	}
	return nil
}

// checkSet checks a set's answer: the type the reader names (either of
// the two, whichever field it is in), else the field's, at the file:line
// given. A check never names a set the reader has not named. A right
// file:line in the field of its set passes as it is: the field's label
// names the type already, and a hand-in must not carry a warning about a
// right answer. Only an answer that is not right is asked for the type.
func checkSet(r *extractor.Reading, name, text string) []Check {
	named := ""
	for _, n := range []string{"DesiredStateOfWorld", "ActualStateOfWorld"} {
		if strings.Contains(strings.ToLower(text), strings.ToLower(n)) {
			named = n
			break
		}
	}
	it, It := "this set", "This set"
	if named != "" {
		name, it, It = named, named, named
	}
	out := checkSetAt(r, name, it, It, text)
	right := len(out) > 0 && !slices.ContainsFunc(out, func(c Check) bool { return c.Level != "ok" })
	if named == "" && !right {
		out = append(out, Check{"warn", "Name the type too: the worksheet asks for each set's name and its file:line."})
	}
	return out
}

func checkSetAt(r *extractor.Reading, name, it, It, text string) []Check {
	var decls []extractor.SetDecl
	for _, d := range r.TwoSets {
		if d.Name == name {
			decls = append(decls, d)
		}
	}
	if len(decls) == 0 {
		return []Check{{"warn", fmt.Sprintf("At %s %s is declared nowhere under pkg/.", r.Tag, it)}}
	}
	ms := fileLineRE.FindAllStringSubmatch(text, -1)
	if len(ms) == 0 {
		return []Check{{"warn", "Give it as file:line, e.g. some_file.go:123, so it can be checked."}}
	}
	var out []Check
	for _, m := range ms {
		file := m[1]
		line, _ := strconv.Atoi(m[2])
		in := func(d extractor.SetDecl) bool {
			return d.File == file || strings.HasSuffix(d.File, "/"+strings.TrimPrefix(file, "/"))
		}
		// A short path can name several files: the one with that line, if any.
		i := slices.IndexFunc(decls, func(d extractor.SetDecl) bool { return in(d) && d.Line == line })
		if i < 0 {
			i = slices.IndexFunc(decls, in)
		}
		switch {
		case i < 0:
			// Not the answer: how many places to look, not where.
			out = append(out, Check{"warn", fmt.Sprintf("At %s %s is not declared in %s (it is declared in %d files under pkg/).", r.Tag, it, file, len(decls))})
		case decls[i].Line != line:
			out = append(out, Check{"warn", fmt.Sprintf("At %s that is line %d (%s:%d).", r.Tag, decls[i].Line, decls[i].File, decls[i].Line)})
		default:
			out = append(out, Check{"ok", fmt.Sprintf("%s is declared at %s:%d at %s.", It, decls[i].File, decls[i].Line, r.Tag)})
		}
	}
	return out
}

// checkWriter checks the symbols an answer names against the writers of
// the case's channel derived from the source at r's tag (extractor.Case's
// Writers, Upstream, Goroutine): a sender is right; a function that feeds a
// sender, or starts its goroutine, is said to be so; any other symbol that
// exists at the tag "is not a writer of this channel at TAG"; one that does
// not exist "is not found at TAG". Words without a symbol are not checked.
func checkWriter(r *extractor.Reading, key, text string) []Check {
	c, ok := r.Function.CaseByKey(key)
	if !ok {
		return []Check{{"warn", fmt.Sprintf("The select has no %s case at %s.", key, r.Tag)}}
	}
	ticker := len(c.Made) > 0
	for _, m := range c.Made {
		ticker = ticker && strings.Contains(m.Note, "ticker")
	}
	var out []Check
	seen := map[string]bool{}
	for _, m := range symbolRE.FindAllStringSubmatch(text, -1) {
		s := strings.TrimPrefix(m[1], "sym:")
		if seen[s] || strings.HasSuffix(s, ".go") {
			continue
		}
		seen[s] = true
		if ticker {
			out = append(out, Check{"warn", fmt.Sprintf("At %s this channel is a ticker's: no function of the module sends on it, so %s is not its writer.", r.Tag, s)})
			continue
		}
		if w, ok := siteFor(c.Writers, s); ok {
			out = append(out, Check{"ok", fmt.Sprintf("%s sends on this channel at %s (%s:%d).", s, r.Tag, w.File, w.Line)})
			continue
		}
		if w, ok := siteFor(c.Upstream, s); ok {
			out = append(out, Check{"warn", fmt.Sprintf("%s does not send on this channel at %s; it feeds what does (%s:%d).", s, r.Tag, w.File, w.Line)})
			continue
		}
		if w, ok := siteFor(c.Goroutine, s); ok {
			out = append(out, Check{"warn", fmt.Sprintf("%s starts the goroutine that writes this channel at %s (%s:%d), but does not send on it itself.", s, r.Tag, w.File, w.Line)})
			continue
		}
		switch exists(r, s) {
		case yes:
			out = append(out, Check{"warn", fmt.Sprintf("%s is not a writer of this channel at %s.", s, r.Tag)})
		case no:
			out = append(out, Check{"warn", fmt.Sprintf("%s is not found at %s.", s, r.Tag)})
		}
	}
	return out
}

// siteFor finds the site whose function is s, written in full or short
// (podStorage.Merge for pkg/kubelet/config.(*podStorage).Merge).
func siteFor(sites []extractor.Site, s string) (extractor.Site, bool) {
	for _, w := range sites {
		if w.Func == s || shortSym(w.Func) == shortSym(s) {
			return w, true
		}
	}
	return extractor.Site{}, false
}

type tri int

const (
	unknown tri = iota
	yes
	no
)

// exists says whether s is declared at r's tag: by the symbols the notes
// link to, else by every declaration of the kubelet's packages (the
// definitions index), else it cannot be told.
func exists(r *extractor.Reading, s string) tri {
	if _, sym, ok := resolve(r, s); ok {
		if sym.Found {
			return yes
		}
		return no
	}
	if r.Defs == nil {
		return unknown
	}
	if r.Defs.HasDecl(s) {
		return yes
	}
	want := shortSym(s)
	for _, d := range r.Defs.Declared {
		if shortSym(d) == want {
			return yes
		}
	}
	return no
}

// shortSym is the last two parts of a symbol, receiver markers removed:
// pkg/kubelet/config.(*PodConfig).Updates → PodConfig.Updates.
func shortSym(full string) string {
	if i := strings.LastIndex(full, "/"); i >= 0 {
		full = full[i+1:]
	}
	full = strings.NewReplacer("(*", "", "(", "", ")", "").Replace(full)
	parts := strings.Split(full, ".")
	if len(parts) >= 2 {
		return strings.Join(parts[len(parts)-2:], ".")
	}
	return full
}

// resolve finds s among the Reading's symbols: by its full name, or by its
// receiver and name when the package path is left out.
func resolve(r *extractor.Reading, s string) (string, extractor.Symbol, bool) {
	s = strings.TrimPrefix(s, "sym:")
	if sym, ok := r.Symbols[s]; ok {
		return s, sym, true
	}
	short := shortSym
	want := short(s)
	var names []string
	for name := range r.Symbols {
		if short(name) == want {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "", extractor.Symbol{}, false
	}
	slices.Sort(names)
	for _, n := range names {
		if r.Symbols[n].Found {
			return n, r.Symbols[n], true
		}
	}
	return names[0], r.Symbols[names[0]], true
}

// Head is what a worksheet says first: whose it is.
type Head struct {
	// Title names it: a room ("Pair session abc…"), or "My notes". It is
	// Markdown: what a reader typed in it went through Inline.
	Title string
	// Readers are the names given in a room, in the order first given
	// (rooms.Room.Readers); none for one reader's own notes.
	Readers []string
	// Journal reads the lines the pins name, as the hand-in is built
	// (Journal); nil: the pins are listed, not printed.
	Journal JournalFunc
	// Chains reads the chains the chain pins name (ChainJournal); nil:
	// they are not printed.
	Chains ChainJournalFunc
	// Quiz: the hand-in of a reader in quiz mode: headings that name no
	// element type and no set, and checks that say yes or no (checkQuiz).
	Quiz bool
}

// Worksheet is the hand-in built from what readers wrote, at r's tag: a
// section per case with the reader's note and the writer they named, the
// two sets, the sentence, and the comments on lines, each with its author
// and what the source says about it. head says whose it is.
func Worksheet(r *extractor.Reading, head Head, notes []Note) []byte {
	vs := views(r, notes, head.Quiz)
	by := map[string]View{}
	for _, v := range vs {
		by[v.ID] = v
	}
	authors := authorsOf(vs)
	f := &r.Function
	var b bytes.Buffer
	fmt.Fprintf(&b, "# syncloop worksheet: (*Kubelet).%s at %s %s\n\n", f.Name, r.Module, r.Tag)
	fmt.Fprintf(&b, "%s\n\nSource: [%s:%d-%d](%s)\n\n", head.Title, f.File, f.Start, f.End, extractor.UpstreamURL(r.Tag, f.File, f.Start, f.End))
	if len(head.Readers) > 0 {
		fmt.Fprintf(&b, "Readers: %s\n\n", inlineList(head.Readers))
	}
	if len(authors) > 0 {
		fmt.Fprintf(&b, "Written by: %s\n\n", inlineList(authors))
	} else {
		fmt.Fprintf(&b, "Written by: nobody yet\n\n")
	}
	fmt.Fprintf(&b, "## The %d cases of the select\n\n", len(f.Cases))
	for _, c := range f.Cases {
		fmt.Fprintf(&b, "### %s\n\n", c.Key)
		fmt.Fprintf(&b, "[%s:%d](%s): channel `%s`%s\n\n", f.File, c.Start, extractor.UpstreamURL(r.Tag, f.File, c.Start, c.End), c.Channel, elementType(c, head.Quiz))
		w := by["writer."+c.Key]
		fmt.Fprintf(&b, "- Written by: %s%s\n", answer(w.Text), byline(w.Note))
		writeChecks(&b, w.Checks, "  ")
		e := by["exercise."+c.Key]
		fmt.Fprintf(&b, "- Fired by the exercise: %s%s\n", answer(e.Text), byline(e.Note))
		n := by["case."+c.Key]
		if strings.TrimSpace(n.Text) == "" {
			fmt.Fprintf(&b, "- Note: (left empty)\n\n")
			continue
		}
		fmt.Fprintf(&b, "- Note%s:\n\n%s\n\n", byline(n.Note), fenced(n.Text, "text"))
	}
	fmt.Fprintf(&b, "## pod_workers\n\n%s\n\n", PodWorkersQuestion)
	if v := by["podworkers"]; strings.TrimSpace(v.Text) != "" {
		fmt.Fprintf(&b, "%s\n\n— %s\n\n", fenced(v.Text, "text"), strings.TrimPrefix(byline(v.Note), " "))
	} else {
		fmt.Fprintf(&b, "> (left empty)\n\n")
	}
	fmt.Fprintf(&b, "## The two sets\n\n")
	for _, s := range []struct{ id, name string }{{"set.desired", "DesiredStateOfWorld"}, {"set.actual", "ActualStateOfWorld"}} {
		v := by[s.id]
		fmt.Fprintf(&b, "- **%s**: %s%s\n", setHeading(s.name, head.Quiz), answer(v.Text), byline(v.Note))
		writeChecks(&b, v.Checks, "  ")
	}
	fmt.Fprintf(&b, "\n## The pattern, in one sentence\n\n")
	if v := by["sentence"]; strings.TrimSpace(v.Text) != "" {
		fmt.Fprintf(&b, "%s\n\n— %s\n", fenced(v.Text, "text"), strings.TrimPrefix(byline(v.Note), " "))
	} else {
		fmt.Fprintf(&b, "> (left empty)\n")
	}
	var comments []View
	for _, v := range vs {
		if Kind(v.ID) == "comment" {
			comments = append(comments, v)
		}
	}
	if len(comments) > 0 {
		fmt.Fprintf(&b, "\n## Comments on lines\n\n")
		for _, v := range comments {
			fmt.Fprintf(&b, "### %s%s\n\n", where(r, v), byline(v.Note))
			fmt.Fprintf(&b, "%s\n\n%s\n\n", fenced(v.Quote.Exact, "go"), fenced(v.Text, "text"))
		}
	}
	writeFired(&b, vs, head.Journal)
	writeChains(&b, vs, head.Chains)
	return b.Bytes()
}

// authorsOf is everyone credited with a note of vs, sorted.
func authorsOf(vs []View) []string {
	authors := []string{}
	for _, v := range vs {
		for _, a := range []string{v.Author, prevAuthor(v.Note)} {
			if a != "" && !slices.Contains(authors, a) {
				authors = append(authors, a)
			}
		}
	}
	slices.Sort(authors)
	return authors
}

// where says where a comment's lines are at the tag, and what became of them.
func where(r *extractor.Reading, v View) string {
	q, a := v.Quote, v.Anchor
	lines := func(s, e int) string {
		if s == e {
			return fmt.Sprintf("%s:%d", r.Function.File, s)
		}
		return fmt.Sprintf("%s:%d-%d", r.Function.File, s, e)
	}
	switch a.Status {
	case anchor.Same:
		return lines(a.Start, a.End)
	case anchor.Moved:
		if q.Tag == r.Tag {
			return lines(a.Start, a.End)
		}
		return fmt.Sprintf("%s (moved: written at %s on line %d)", lines(a.Start, a.End), q.Tag, q.Start)
	case anchor.Changed:
		return fmt.Sprintf("%s (changed since %s, where it was line %d)", lines(a.Start, a.End), q.Tag, q.Start)
	}
	return fmt.Sprintf("not at %s (written at %s on line %d)", r.Tag, q.Tag, q.Start)
}

func writeChecks(b *bytes.Buffer, cs []Check, indent string) {
	for _, c := range cs {
		if c.Level == "warn" {
			fmt.Fprintf(b, "%s- check: %s\n", indent, Inline(c.Text))
		}
	}
}

// byline credits a note's last author, and the one whose text it replaced
// (a merge keeps both texts under the merger's name).
func byline(n Note) string { return bylineAs(n, Inline) }

// bylineAs is byline with the names written by esc (Inline in Markdown,
// as they are in text set as text).
func bylineAs(n Note, esc func(string) string) string {
	if n.Author == "" {
		return ""
	}
	also := ""
	if p := prevAuthor(n); p != "" {
		also = "; changed from a text by " + esc(p)
	}
	return fmt.Sprintf(" (%s, %s%s)", esc(n.Author), n.At.UTC().Format("2006-01-02 15:04 UTC"), also)
}

func prevAuthor(n Note) string {
	if n.Prev == nil || n.Prev.Author == n.Author {
		return ""
	}
	return n.Prev.Author
}

// answer is a one-line answer as the worksheet writes it: inert text.
func answer(s string) string {
	if s = Inline(s); s == "" {
		return "(left empty)"
	}
	return s
}

// inlineList is names, each inert, comma-separated.
func inlineList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Inline(n)
	}
	return strings.Join(out, ", ")
}
