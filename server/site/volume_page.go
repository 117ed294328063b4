package site

// The second reading's page, /k8s/{tag}/volume-manager: the entry's source
// highlighted, a section#part-{key} per phase (its direction, its guard,
// what it starts and the writes those make, its source), and the two
// sets with their writers. Rendered once per tag and list of readable
// tags, like the first reading's pages. In quiz mode the derived answers
// (directions, starts, writers) are left out, as the first reading's are.

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/diff"
	"github.com/syncloop/syncloop/extractor/volume"
)

// PageVolume names the second reading's page.
const PageVolume = "volume-manager"

// volumeView is what volume-manager.html renders.
type volumeView struct {
	R         *volume.Reading
	Entry     template.HTML // the entry's source, highlighted
	EntryNote noteView
	Parts     []partView
	Sets      []setView
	Hidden    bool // quiz mode: the derived answers and the notes are left out
	// Compare is the compare with the minor before, "" before v1.21.
	Compare string
	// StartedBy is the go statement that runs (*reconciler).Run, if found.
	StartedBy *volume.Goroutine
	// Sheet is the worksheet its readers write, PartsJSON the live pane's
	// data-cases (volume_room.go).
	Sheet     volumeSheet
	PartsJSON string
}

type partView struct {
	volume.Part
	Code     template.HTML
	Sentence string // what the direction means, in words
	Note     noteView
}

// setView is one set with its note, and its writers as the margin of
// the first reading lists a case's: each a control that opens it.
type setView struct {
	volume.Set
	Note    noteView
	Callers []callerView
}

// callerView is one writer of a set.
type callerView struct {
	volume.Caller
	Short, Pkg string // "(*operationGenerator).GenerateMountVolumeFunc", "operationexecutor"
	Peek       bool   // the reading's index has it: its name opens it
}

func newCallers(r *volume.Reading, cs []volume.Caller) []callerView {
	var out []callerView
	for _, c := range cs {
		short := extractor.ShortSymbol(c.Func)
		pkg := strings.TrimSuffix(c.Func, "."+short)
		_, peek := r.DeclOf(c.Func)
		out = append(out, callerView{Caller: c, Short: short, Pkg: pkg[strings.LastIndex(pkg, "/")+1:], Peek: peek})
	}
	return out
}

// newVolumeView highlights the entry and each phase; ids are prefixed so
// lines of different files never share one.
func newVolumeView(r *volume.Reading, quiz bool) (*volumeView, error) {
	v := &volumeView{R: r, Hidden: quiz}
	if prev := diff.PreviousMinor(r.Tag); prev != "" {
		v.Compare = volumeCompareURL(prev, r.Tag, "")
	}
	notes, err := newVolumeNotes(r)
	if err != nil {
		return nil, err
	}
	if quiz {
		notes = nil
	}
	v.EntryNote = notes.find(content.VolumeEntry)
	v.Sheet, v.PartsJSON = newVolumeSheet(r), partsJSON(r)
	for i, g := range r.Goroutines {
		if strings.HasSuffix(g.Runs, ".(*reconciler).Run") {
			v.StartedBy = &r.Goroutines[i]
		}
	}
	// In quiz mode the code opens no definitions: a phase's calls, opened,
	// say what it starts, and the entry's which phases they are.
	refs := func(sym string) []extractor.Ref {
		if quiz {
			return nil
		}
		return refsOf(r, sym)
	}
	if v.Entry, err = codeBlock(r.Entry.Text, r.Entry.Line, "entry-", refs(partSym(r.Entry.Func))); err != nil {
		return nil, err
	}
	for _, p := range r.Parts {
		pv := partView{Part: p, Sentence: directionSentence(p), Note: notes.find(p.Key)}
		if pv.Code, err = codeBlock(p.Text, p.Line, "part-"+p.Key+"-", refs(partSym(p.Func))); err != nil {
			return nil, err
		}
		if quiz {
			pv.Direction, pv.Sentence, pv.Starts, pv.Tests = "", "", nil, nil
		}
		v.Parts = append(v.Parts, pv)
	}
	if !quiz {
		for _, set := range r.Sets {
			v.Sets = append(v.Sets, setView{Set: set, Note: notes.find(set.Name), Callers: newCallers(r, set.Writers)})
		}
	}
	return v, nil
}

// codeBlock highlights text (first line first) as a <pre> whose lines have
// ids prefix+"L<n>".
func codeBlock(text string, first int, prefix string, refs []extractor.Ref) (template.HTML, error) {
	if text == "" {
		return "", nil
	}
	h, err := highlightRefs(text, first, refs)
	if err != nil {
		return "", err
	}
	var w bytes.Buffer
	w.WriteString(`<pre class="chroma code">`)
	for i, line := range h.lines {
		n := first + i
		fmt.Fprintf(&w, `<span class="line" id="%sL%d"><a class="ln" href="#%sL%d">%d</a><span class="cl">%s`+"\n"+`</span></span>`,
			prefix, n, prefix, n, n, line)
	}
	w.WriteString(`</pre>`)
	return template.HTML(w.String()), nil
}

// directionSentence says in words what the phase's direction was derived
// from.
func directionSentence(p volume.Part) string {
	over := "the actual state of the world"
	if p.RangesSet == "DesiredStateOfWorld" {
		over = "the desired state of the world"
	} else if p.RangesSet == "" && p.Ranges != "" {
		over = p.Ranges + ", not a set"
	}
	switch p.Direction {
	case volume.RemoveExtra:
		return "For each entry of " + over + " that the desired state lacks, it removes: remove-extra."
	case volume.AddMissing:
		if p.RangesSet == "DesiredStateOfWorld" {
			return "For each volume the desired state wants, it looks the actual state up and adds what is missing: add-missing."
		}
		return "It ranges over " + over + " and tests only the actual state, adding what it lacks: add-missing."
	}
	if p.Ranges != "" {
		return "It ranges over " + over + " and tests neither set: bookkeeping, no direction."
	}
	return "No loop over either set: bookkeeping, no direction."
}

// volumeHTML is st's page, rendered for the current list of readable tags;
// in quiz mode (asked per request) it is rendered anew each time, without
// the derived answers, and not kept.
func (s *Site) volumeHTML(st *volState, tag string, quiz bool) (*page, error) {
	tags, gen := s.readableTags()
	if quiz {
		v, err := newVolumeView(st.reading, true)
		if err != nil {
			return nil, err
		}
		return s.renderVolume(tag, tags, v)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.html != nil && st.gen == gen {
		return st.html, nil
	}
	if st.view == nil {
		v, err := newVolumeView(st.reading, false)
		if err != nil {
			return nil, err
		}
		st.view = v
	}
	p, err := s.renderVolume(tag, tags, st.view)
	if err != nil {
		return nil, err
	}
	st.html, st.gen = p, gen
	return st.html, nil
}

// renderVolume renders the second reading's page of view at tag.
func (s *Site) renderVolume(tag string, tags []string, view *volumeView) (*page, error) {
	body, err := s.execute("volume-manager.html", pageData{
		Title: "The volume manager's reconciler at " + tag, Page: PageVolume, Tag: tag,
		Tags: tags, DefaultTag: s.cfg.DefaultTag, Volume: view,
	})
	if err != nil {
		return nil, err
	}
	return newPage("text/html; charset=utf-8", body, "no-cache"), nil
}

// volumeWithoutAnswers is r as the JSON serves it in quiz mode: the
// entry, the phases' source and the log sites (not the functions they are
// in), without the directions, what each phase starts, nor the sets'
// writers and readers.
func volumeWithoutAnswers(r *volume.Reading) *volume.Reading {
	c := *r
	c.Parts = slices.Clone(r.Parts)
	for i := range c.Parts {
		c.Parts[i].Direction, c.Parts[i].Starts, c.Parts[i].Tests = "", nil, nil
	}
	c.Sets = slices.Clone(r.Sets)
	for i := range c.Sets {
		c.Sets[i].Writers, c.Sets[i].Readers, c.Sets[i].Mutating = []volume.Caller{}, []volume.Caller{}, []string{}
	}
	// A log site's function would name the generator's writers of the
	// actual state: its file:line and literal are what the live pane needs.
	c.LogSites = slices.Clone(r.LogSites)
	for i := range c.LogSites {
		c.LogSites[i].Func = ""
	}
	return &c
}

// VolumePage serves /k8s/{tag}/volume-manager.
func (s *Site) VolumePage() http.Handler { return s.volumeHandler(true) }
