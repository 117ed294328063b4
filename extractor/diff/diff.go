// Package diff says what changed in the kubelet's main loop between two
// tags, case by case: it compares two extractor.Readings by case key, never
// by line number, and reports each case's code, log calls, element type and
// calls, the function's doc comment and helpers, the pod_workers.go type
// comments and the two-set sightings. It knows Readings, nothing of HTTP.
//
// # JSON contract
//
// A Diff encodes as below. Field names are a public contract, as the
// Reading's are: fields may be added, never renamed. Empty lists and
// strings are left out.
//
//	{
//	  "from": "v1.30.0", "to": "v1.31.0",       // the two tags
//	  "cases": [{
//	    "key": "config",                          // the case key (extractor.Case.Key)
//	    "status": "changed",                      // added | removed | changed | same
//	    "changed": ["code", "logs"],              // which of code, channel, type, logs, calls differ
//	    "from": {…}, "to": {…},                   // the extractor.Case at each tag (absent when not there)
//	    "code": "--- v1.35.4 …\n+++ …\n@@ …",     // unified diff of the clause, white space ignored
//	                                              // ("" when the same; all "+" lines when added, "-" when removed)
//	    "type": {"from": "…", "to": "…"},         // the element type, when it changed
//	    "channel": {"from": "…", "to": "…"},      // the channel expression, when it changed
//	    "logs": [{                                // every log call of either side, paired
//	      "status": "changed",                    // added | removed | changed | same
//	      "changed": ["style", "message"],        // which of message, verbosity, severity, style, func (the function it is in) differ
//	      "from": {…}, "to": {…}                  // the extractor.LogSite at each tag
//	    }],
//	    "calls": {"added": ["…"], "removed": ["…"]} // calls of the clause (extractor.Case.Calls)
//	  }],
//	  "doc": {"status": "same", "diff": ""},      // the function's doc comment
//	  "helpers": [{"name", "status", "diff"}],    // same-file helpers the cases call
//	  "pod_workers": [{"name", "status", "changed", "doc", "from", "to"}], // type comments; "doc" is a unified diff
//	  "two_sets": [{"name", "status", "from", "to"}], // same | changed (doc) | moved (file) | added | gone
//	  "summary": {"added": 1, "removed": 0, "changed": 2, "same": 5} // case counts
//	}
package diff

import (
	"fmt"
	"path"
	"slices"

	"github.com/syncloop/syncloop/extractor"
)

// Status is how one thing differs between the two tags.
type Status string

// The statuses. Two-set sightings use Moved and Gone as well.
const (
	Added   Status = "added"
	Removed Status = "removed"
	Changed Status = "changed"
	Same    Status = "same"
	Moved   Status = "moved"
	Gone    Status = "gone"
)

// Diff is what changed in the loop from one tag to another.
type Diff struct {
	From       string   `json:"from"`
	To         string   `json:"to"`
	Cases      []Case   `json:"cases"`
	Doc        Text     `json:"doc"`
	Helpers    []Helper `json:"helpers,omitempty"`
	PodWorkers []Type   `json:"pod_workers"`
	TwoSets    []Set    `json:"two_sets"`
	Summary    Summary  `json:"summary"`
}

// Summary counts the cases by status.
type Summary struct {
	Added   int `json:"added"`
	Removed int `json:"removed"`
	Changed int `json:"changed"`
	Same    int `json:"same"`
}

// Case is one case key's difference.
type Case struct {
	Key     string          `json:"key"`
	Status  Status          `json:"status"`
	Changed []string        `json:"changed,omitempty"` // code, channel, type, logs, calls
	From    *extractor.Case `json:"from,omitempty"`
	To      *extractor.Case `json:"to,omitempty"`
	Code    string          `json:"code,omitempty"` // unified diff of the clause's source
	Type    *Change         `json:"type,omitempty"`
	Channel *Change         `json:"channel,omitempty"`
	Logs    []Log           `json:"logs,omitempty"`
	Calls   Calls           `json:"calls"`

	// FromText and ToText are the clause's source at each tag (lines
	// From.Start..From.End), for a page that shows it side by side.
	FromText, ToText string `json:"-"`
}

// Change is a value at each tag.
type Change struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Calls are the calls a clause gained and lost.
type Calls struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Log is one log call of a case at either tag, paired with its counterpart.
type Log struct {
	Status  Status             `json:"status"`
	Changed []string           `json:"changed,omitempty"` // message, verbosity, severity, style, func
	From    *extractor.LogSite `json:"from,omitempty"`
	To      *extractor.LogSite `json:"to,omitempty"`
}

// Text is a piece of prose (a doc comment) at both tags.
type Text struct {
	Status Status `json:"status"`
	Diff   string `json:"diff,omitempty"`
}

// Helper is one same-file helper function of the loop.
type Helper struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Diff   string `json:"diff,omitempty"`
}

// Type is one pod_workers.go type declaration.
type Type struct {
	Name    string              `json:"name"`
	Status  Status              `json:"status"`
	Changed []string            `json:"changed,omitempty"` // doc, kind
	Doc     string              `json:"doc,omitempty"`     // unified diff of the doc comment
	From    *extractor.TypeDecl `json:"from,omitempty"`
	To      *extractor.TypeDecl `json:"to,omitempty"`
}

// Set is one sighting of a DesiredStateOfWorld or ActualStateOfWorld type.
type Set struct {
	Name   string             `json:"name"`
	Status Status             `json:"status"`
	From   *extractor.SetDecl `json:"from,omitempty"`
	To     *extractor.SetDecl `json:"to,omitempty"`
}

// Compare says what changed from a to b.
func Compare(a, b *extractor.Reading) *Diff {
	d := &Diff{From: a.Tag, To: b.Tag}
	for _, key := range caseOrder(a.Function.Cases, b.Function.Cases) {
		ca, _ := a.Function.CaseByKey(key)
		cb, _ := b.Function.CaseByKey(key)
		c := compareCase(a, b, ca, cb)
		c.Key = key
		switch c.Status {
		case Added:
			d.Summary.Added++
		case Removed:
			d.Summary.Removed++
		case Changed:
			d.Summary.Changed++
		default:
			d.Summary.Same++
		}
		d.Cases = append(d.Cases, c)
	}
	d.Doc = compareText(a.Function.Doc, b.Function.Doc, a.Tag+" doc comment", b.Tag+" doc comment")
	d.Helpers = compareHelpers(a, b)
	d.PodWorkers = compareTypes(a, b)
	d.TwoSets = compareSets(a.TwoSets, b.TwoSets)
	return d
}

// Case returns the difference of the case with the key, if either tag has it.
func (d *Diff) Case(key string) (*Case, bool) {
	for i := range d.Cases {
		if d.Cases[i].Key == key {
			return &d.Cases[i], true
		}
	}
	return nil, false
}

// caseOrder lists the keys of both sides in the new side's order, each
// removed key after the key it followed in the old.
func caseOrder(a, b []extractor.Case) []string {
	var keys []string
	for _, c := range b {
		keys = append(keys, c.Key)
	}
	prev := -1
	for _, c := range a {
		if i := slices.Index(keys, c.Key); i >= 0 {
			prev = i
			continue
		}
		keys = slices.Insert(keys, prev+1, c.Key)
		prev++
	}
	return keys
}

// clauseText is the case's lines of the function's source.
func clauseText(f *extractor.Function, c *extractor.Case) string {
	lines := splitLines(f.Text)
	a, b := c.Start-f.DocStart, max(c.End, c.Start)-f.DocStart
	if a < 0 || b >= len(lines) || a > b {
		return ""
	}
	return joinLines(lines[a : b+1])
}

func joinLines(lines []string) string {
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	buf := make([]byte, 0, n)
	for _, l := range lines {
		buf = append(append(buf, l...), '\n')
	}
	return string(buf)
}

func compareCase(ra, rb *extractor.Reading, a, b *extractor.Case) Case {
	c := Case{From: a, To: b}
	if a != nil {
		c.FromText = clauseText(&ra.Function, a)
	}
	if b != nil {
		c.ToText = clauseText(&rb.Function, b)
	}
	// An added clause is all "+" lines, after the line before it at a; a
	// removed one all "-".
	fromName, toName := ra.Tag+" (none)", rb.Tag+" (none)"
	fromAt, toAt := 1, 1
	if a != nil {
		fromName, fromAt = fmt.Sprintf("%s %s:%d-%d", ra.Tag, ra.Function.File, a.Start, a.End), a.Start
	}
	if b != nil {
		toName, toAt = fmt.Sprintf("%s %s:%d-%d", rb.Tag, rb.Function.File, b.Start, b.End), b.Start
	}
	c.Code = unified(fromName, toName, c.FromText, c.ToText, fromAt, toAt)
	switch {
	case a == nil:
		c.Status = Added
		c.Logs = compareLogs(nil, b.Logs)
		c.Calls.Added = b.Calls
		return c
	case b == nil:
		c.Status = Removed
		c.Logs = compareLogs(a.Logs, nil)
		c.Calls.Removed = a.Calls
		return c
	}
	if c.Code != "" {
		c.Changed = append(c.Changed, "code")
	}
	if a.Channel != b.Channel {
		c.Channel = &Change{a.Channel, b.Channel}
		c.Changed = append(c.Changed, "channel")
	}
	if a.Type != b.Type {
		c.Type = &Change{a.Type, b.Type}
		c.Changed = append(c.Changed, "type")
	}
	c.Logs = compareLogs(a.Logs, b.Logs)
	for _, l := range c.Logs {
		if l.Status != Same {
			c.Changed = append(c.Changed, "logs")
			break
		}
	}
	for _, name := range b.Calls {
		if !slices.Contains(a.Calls, name) {
			c.Calls.Added = append(c.Calls.Added, name)
		}
	}
	for _, name := range a.Calls {
		if !slices.Contains(b.Calls, name) {
			c.Calls.Removed = append(c.Calls.Removed, name)
		}
	}
	if len(c.Calls.Added)+len(c.Calls.Removed) > 0 {
		c.Changed = append(c.Changed, "calls")
	}
	c.Status = Same
	if len(c.Changed) > 0 {
		c.Status = Changed
	}
	return c
}

// compareLogs pairs the log calls of a case at two tags, in source order
// (the clause's, then its helpers'): calls with the same message and
// severity pair first; the unpaired calls between two pairs pair in order
// (a message reworded, "SyncLoop (ADD, %q): %q" → "SyncLoop ADD", or a call
// moved into a helper); what is left was added or removed.
func compareLogs(a, b []extractor.LogSite) []Log {
	var out []Log
	ops := align(a, b, func(x, y extractor.LogSite) bool {
		return x.Message == y.Message && x.Severity == y.Severity
	})
	for k := 0; k < len(ops); {
		if ops[k].Kind == '=' {
			out = append(out, compareLog(&a[ops[k].From], &b[ops[k].To]))
			k++
			continue
		}
		// A run of differences: the old calls, then the new ones.
		var dels, adds []*extractor.LogSite
		for ; k < len(ops) && ops[k].Kind != '='; k++ {
			if ops[k].Kind == '-' {
				dels = append(dels, &a[ops[k].From])
			} else {
				adds = append(adds, &b[ops[k].To])
			}
		}
		for i := range max(len(dels), len(adds)) {
			switch {
			case i < len(dels) && i < len(adds):
				out = append(out, compareLog(dels[i], adds[i]))
			case i < len(dels):
				out = append(out, Log{Status: Removed, From: dels[i]})
			default:
				out = append(out, Log{Status: Added, To: adds[i]})
			}
		}
	}
	return out
}

func compareLog(a, b *extractor.LogSite) Log {
	l := Log{From: a, To: b, Status: Same}
	if a.Message != b.Message {
		l.Changed = append(l.Changed, "message")
	}
	if a.Verbosity != b.Verbosity {
		l.Changed = append(l.Changed, "verbosity")
	}
	if a.Severity != b.Severity {
		l.Changed = append(l.Changed, "severity")
	}
	if a.Style != b.Style {
		l.Changed = append(l.Changed, "style")
	}
	if a.Func != b.Func {
		l.Changed = append(l.Changed, "func")
	}
	if len(l.Changed) > 0 {
		l.Status = Changed
	}
	return l
}

func compareText(a, b, nameA, nameB string) Text {
	switch {
	case a == "" && b == "":
		return Text{Status: Same}
	case a == "":
		return Text{Status: Added, Diff: unified(nameA, nameB, a, b, 1, 1)}
	case b == "":
		return Text{Status: Removed, Diff: unified(nameA, nameB, a, b, 1, 1)}
	}
	if u := unified(nameA, nameB, a, b, 1, 1); u != "" {
		return Text{Status: Changed, Diff: u}
	}
	return Text{Status: Same}
}

func compareHelpers(a, b *extractor.Reading) []Helper {
	var out []Helper
	find := func(hs []extractor.Helper, name string) *extractor.Helper {
		for i := range hs {
			if hs[i].Name == name {
				return &hs[i]
			}
		}
		return nil
	}
	for _, h := range b.Function.Helpers {
		old := find(a.Function.Helpers, h.Name)
		if old == nil {
			out = append(out, Helper{Name: h.Name, Status: Added})
			continue
		}
		u := unified(fmt.Sprintf("%s %s:%d", a.Tag, a.Function.File, old.DocStart), fmt.Sprintf("%s %s:%d", b.Tag, b.Function.File, h.DocStart),
			old.Text, h.Text, old.DocStart, h.DocStart)
		if u == "" {
			out = append(out, Helper{Name: h.Name, Status: Same})
		} else {
			out = append(out, Helper{Name: h.Name, Status: Changed, Diff: u})
		}
	}
	for _, h := range a.Function.Helpers {
		if find(b.Function.Helpers, h.Name) == nil {
			out = append(out, Helper{Name: h.Name, Status: Removed})
		}
	}
	return out
}

func compareTypes(a, b *extractor.Reading) []Type {
	var out []Type
	find := func(ts []extractor.TypeDecl, name string) *extractor.TypeDecl {
		for i := range ts {
			if ts[i].Name == name {
				return &ts[i]
			}
		}
		return nil
	}
	for i := range b.PodWorkers.Types {
		tb := &b.PodWorkers.Types[i]
		ta := find(a.PodWorkers.Types, tb.Name)
		if ta == nil {
			out = append(out, Type{Name: tb.Name, Status: Added, To: tb})
			continue
		}
		t := Type{Name: tb.Name, Status: Same, From: ta, To: tb}
		if t.Doc = unified(a.Tag+" "+tb.Name, b.Tag+" "+tb.Name, ta.Doc, tb.Doc, 1, 1); t.Doc != "" {
			t.Changed = append(t.Changed, "doc")
		}
		if ta.Kind != tb.Kind {
			t.Changed = append(t.Changed, "kind")
		}
		if len(t.Changed) > 0 {
			t.Status = Changed
		}
		out = append(out, t)
	}
	for i := range a.PodWorkers.Types {
		if ta := &a.PodWorkers.Types[i]; find(b.PodWorkers.Types, ta.Name) == nil {
			out = append(out, Type{Name: ta.Name, Status: Removed, From: ta})
		}
	}
	return out
}

// compareSets pairs the sightings by name and file (same, or changed when
// the doc comment differs), then what is left by name and file name (moved
// to another package); the rest were added or are gone.
func compareSets(a, b []extractor.SetDecl) []Set {
	var out []Set
	usedA := make([]bool, len(a))
	matched := make([]int, len(b))
	for j := range b {
		matched[j] = -1
		for i := range a {
			if !usedA[i] && a[i].Name == b[j].Name && a[i].File == b[j].File {
				usedA[i], matched[j] = true, i
				break
			}
		}
	}
	for j := range b {
		if matched[j] >= 0 {
			continue
		}
		for i := range a {
			if !usedA[i] && a[i].Name == b[j].Name && path.Base(a[i].File) == path.Base(b[j].File) {
				usedA[i], matched[j] = true, i
				break
			}
		}
	}
	for j := range b {
		s := Set{Name: b[j].Name, To: &b[j]}
		switch i := matched[j]; {
		case i < 0:
			s.Status = Added
		case a[i].File != b[j].File:
			s.Status, s.From = Moved, &a[i]
		case normalize(a[i].Doc) != normalize(b[j].Doc):
			s.Status, s.From = Changed, &a[i]
		default:
			s.Status, s.From = Same, &a[i]
		}
		out = append(out, s)
	}
	for i := range a {
		if !usedA[i] {
			out = append(out, Set{Name: a[i].Name, Status: Gone, From: &a[i]})
		}
	}
	return out
}
