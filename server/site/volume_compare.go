package site

// The second reading between two tags (/k8s/volume-manager/compare/FROM...TO)
// and one of its units across every minor release
// (/k8s/volume-manager/history/KEY), the entry or a phase, followed through
// upstream's file moves and renames (extractor/diff's CompareVolume, given
// the notes' aliases as the phases' older names). Laid out as the first
// reading's compare and history are.

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/diff"
	"github.com/syncloop/syncloop/extractor/volume"
)

// Page names of the second reading's compare and history.
const (
	PageVolumeCompare = "volume-compare"
	PageVolumeHistory = "volume-history"
)

// volumeCompareURL is the second reading's compare of two tags, at a unit.
func volumeCompareURL(from, to, key string) string {
	u := "/k8s/volume-manager/compare/" + url.PathEscape(from) + "..." + url.PathEscape(to)
	if key != "" {
		u += "#part-" + key
	}
	return u
}

// olderNames maps each phase's older names to its name at recent tags, as
// the notes' aliases give them.
func olderNames() map[string]string {
	out := map[string]string{}
	notes, _ := content.VolumeNotes() // a broken note fails the content tests
	for _, n := range notes {
		for _, a := range n.Aliases() {
			out[a] = n.Key
		}
	}
	return out
}

// volumeCompareView is the compare page.
type volumeCompareView struct {
	D        *diff.VolumeDiff
	From, To *volume.Reading
	Units    []volumeUnitView
	Hidden   bool
}

// volumeUnitView is one unit laid out both ways, as compareCase is.
type volumeUnitView struct {
	*diff.UnitDiff
	Title          string // "the entry", or the phase's name
	Note           noteView
	FromURL, ToURL string
	Tables         template.HTML
	Added, Removed int
	Says           []string // the move, the rename, the direction's change, in words
}

func newVolumeCompareView(a, b *volume.Reading, quiz bool) (*volumeCompareView, error) {
	d := diff.CompareVolume(a, b, olderNames())
	v := &volumeCompareView{D: d, From: a, To: b, Hidden: quiz}
	var notes volumeNotes
	if !quiz {
		var err error
		if notes, err = newVolumeNotes(b); err != nil {
			return nil, err
		}
	}
	for i := range d.Units {
		u := &d.Units[i]
		if quiz { // a phase's direction is the worksheet's to find
			u.Changed = slices.DeleteFunc(u.Changed, func(c string) bool { return c == "direction" })
		}
		uv := volumeUnitView{UnitDiff: u, Title: u.Key, Note: notes.find(u.Key), Says: unitSays(u, quiz)}
		if u.Key == diff.VolumeEntry {
			uv.Title = "the entry"
		}
		if u.From != nil {
			uv.FromURL = extractor.UpstreamURL(a.Tag, u.From.File, u.From.Line, u.From.End)
		}
		if u.To != nil {
			uv.ToURL = extractor.UpstreamURL(b.Tag, u.To.File, u.To.Line, u.To.End)
		}
		side, uni, added, removed, err := unitRows(u)
		if err != nil {
			return nil, err
		}
		uv.Added, uv.Removed = added, removed
		uv.Tables = codeTables(a.Tag, b.Tag, side, uni)
		v.Units = append(v.Units, uv)
	}
	return v, nil
}

// unitSays puts a unit's move, rename and turns in words.
func unitSays(u *diff.UnitDiff, quiz bool) []string {
	var out []string
	if u.Moved {
		out = append(out, fmt.Sprintf("moved from %s to %s", u.From.File, u.To.File))
	}
	if u.Renamed {
		how := map[string]string{"alias": "the note's older name", "body": "most of its lines the same", "position": "being the function the pass runs at both tags"}[u.MatchedBy]
		out = append(out, fmt.Sprintf("renamed from %s to %s (matched by %s)", u.From.Func, u.To.Func, how))
	}
	if u.From != nil && u.To != nil && u.From.Guard != u.To.Guard {
		out = append(out, guardSays(u.Key == diff.VolumeEntry, u.From.Guard, u.To.Guard))
	}
	if !quiz && u.From != nil && u.To != nil && u.From.Direction != u.To.Direction {
		out = append(out, fmt.Sprintf("direction: %s → %s", orNone(u.From.Direction), orNone(u.To.Direction)))
	}
	return out
}

// guardSays puts a change of the entry's gate, or of a phase's guard, in
// words.
func guardSays(entry bool, from, to string) string {
	what, subject := "the guard", "the phase"
	if entry {
		what, subject = "the feature gate", "Run"
	}
	switch {
	case from == "":
		return fmt.Sprintf("%s now chooses it by %s %s", subject, what, to)
	case to == "":
		return fmt.Sprintf("%s no longer chooses it by %s (%s)", subject, what, from)
	}
	return fmt.Sprintf("%s: %s → %s", what, from, to)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// unitRows lays out a unit's text at both tags from its highlighted lines.
func unitRows(u *diff.UnitDiff) (side, uni []sideRow, added, removed int, err error) {
	hl := func(x *diff.Unit) (*highlighted, error) {
		if x == nil || x.Text == "" {
			return &highlighted{}, nil
		}
		return highlightRefs(x.Text, x.Line, nil)
	}
	ha, err := hl(u.From)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	hb, err := hl(u.To)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	var fromText, toText string
	fromAt, toAt := 0, 0
	if u.From != nil {
		fromText, fromAt = u.From.Text, u.From.Line
	}
	if u.To != nil {
		toText, toAt = u.To.Text, u.To.Line
	}
	line := func(h *highlighted) func(int) template.HTML {
		return func(n int) template.HTML {
			if i := n - h.first; i >= 0 && i < len(h.lines) {
				return h.lines[i]
			}
			return ""
		}
	}
	c := &diff.Case{FromText: fromText, ToText: toText}
	if u.From != nil {
		c.From = &extractor.Case{Start: fromAt}
	}
	if u.To != nil {
		c.To = &extractor.Case{Start: toAt}
	}
	side, uni, added, removed = clauseRowsBy(c, line(ha), line(hb))
	return side, uni, added, removed, nil
}

// VolumeCompareForm is the volume page's "compare with…" form's target:
// it redirects to the compare of its two tags.
func (s *Site) VolumeCompareForm() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := func(name string) string {
			t := strings.TrimSpace(r.URL.Query().Get(name))
			if t == "" {
				t = s.cfg.DefaultTag
			}
			if !strings.HasPrefix(t, "v") {
				t = "v" + t
			}
			return t
		}
		http.Redirect(w, r, volumeCompareURL(tag("from"), tag("to"), ""), http.StatusSeeOther)
	})
}

// VolumeCompare serves /k8s/volume-manager/compare/FROM...TO.
func (s *Site) VolumeCompare() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from, to, ok := strings.Cut(chi.URLParam(r, "range"), "...")
		if !ok {
			s.statusPage(w, r, http.StatusNotFound, pageData{
				Heading: "Not a compare",
				Message: fmt.Sprintf("%s names no two tags.", r.URL.Path),
				Advice:  "A compare of the volume manager is /k8s/volume-manager/compare/FROM...TO, e.g. " + volumeCompareURL("v1.26.0", "v1.27.0", "") + ".",
			})
			return
		}
		a, ok := s.volumeReady(w, r, from, " for the compare with "+to)
		if !ok {
			return
		}
		b, ok := s.volumeReady(w, r, to, " for the compare with "+from)
		if !ok {
			return
		}
		quiz := s.quiz(r)
		v, err := newVolumeCompareView(a.reading, b.reading, quiz)
		var body []byte
		if err == nil {
			tags, _ := s.readableTags()
			body, err = s.execute("volume-compare.html", pageData{
				Title: fmt.Sprintf("The volume manager's reconciler, %s → %s", from, to), Page: PageVolumeCompare,
				Tag: to, Tags: tags, DefaultTag: s.cfg.DefaultTag, VolumeCompare: v, Quiz: quiz,
			})
		}
		if err != nil {
			s.log.Error("render volume compare", "from", from, "to", to, "err", err)
			s.statusPage(w, r, http.StatusInternalServerError, pageData{Tag: to, Heading: "Could not render the compare", Message: err.Error()})
			return
		}
		writeHTML(w, body)
	})
}
