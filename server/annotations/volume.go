package annotations

// The second reading's worksheet, the volume manager's reconciler
// (extractor/volume): what a room that reads it is asked (each phase's
// direction and what it starts, who writes each of the two sets, the
// sentence, the controllers of P4 that share the pattern), the checks
// against the derived model at the room's tag, and the hand-in.

import (
	"bytes"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/rooms"
)

// The second reading's notes that are not per phase.
const (
	VolumeDesired     = "vm.desired"     // who writes DesiredStateOfWorld
	VolumeActual      = "vm.actual"      // who writes ActualStateOfWorld
	VolumeSentence    = "vm.sentence"    // the reconciler and level-triggered reconcile
	VolumeControllers = "vm.controllers" // P4's controllers with the same shape
)

// VolumePhaseID is the note of a phase: its direction and what it starts.
func VolumePhaseID(key string) string { return "vmphase." + key }

// VolumeExpected is the ids of the notes the second reading's worksheet
// asks for at r's tag: each phase, the two sets' writers, the sentence,
// the controllers.
func VolumeExpected(r *volume.Reading) []string {
	var ids []string
	for _, p := range r.Parts {
		ids = append(ids, VolumePhaseID(p.Key))
	}
	return append(ids, VolumeDesired, VolumeActual, VolumeSentence, VolumeControllers)
}

// The worksheet's questions, as the page and the hand-in ask them.
const (
	VolumePhaseQuestion       = "Its direction (does it remove what is extra, or add what is missing? Name it as the model does, by which set it ranges over and which it tests) and what it starts."
	VolumeSetQuestion         = "Who writes it? Name the functions (or their packages) that call its mutating methods."
	VolumeSentenceQuestion    = "Tie the reconciler to level-triggered reconcile in one sentence: why does a missed or repeated event do no harm here?"
	VolumeControllersQuestion = "Name the controllers of P4 (kube-controller-manager's) that reconcile a desired and an actual state the same way."
)

// CheckVolume is what the model at r's tag says about a note of the
// second reading's worksheet; in quiz mode (quiz) only yes or no, never
// which functions or how many.
func CheckVolume(r *volume.Reading, id, text string, quiz bool) []Check {
	text = strings.TrimSpace(text)
	kind, key, _ := strings.Cut(id, ".")
	switch {
	case kind == "vmphase":
		i := slices.IndexFunc(r.Parts, func(p volume.Part) bool { return p.Key == key })
		if i < 0 {
			return []Check{{"warn", fmt.Sprintf("The reconcile pass has no phase %s at %s.", key, r.Tag)}}
		}
		if text == "" {
			return []Check{{"empty", "Which direction, and what does it start?"}}
		}
		return checkPhase(r.Parts[i], text)
	case id == VolumeDesired || id == VolumeActual:
		if text == "" {
			return []Check{{"empty", "Who writes this set?"}}
		}
		name := map[string]string{VolumeDesired: "DesiredStateOfWorld", VolumeActual: "ActualStateOfWorld"}[id]
		for _, s := range r.Sets {
			if s.Name == name {
				return checkSetWriters(r.Tag, s, text, quiz)
			}
		}
		return []Check{{"warn", fmt.Sprintf("No %s was found at %s.", name, r.Tag)}}
	case id == VolumeSentence && text == "":
		return []Check{{"empty", "The sentence is still to write."}}
	case id == VolumeControllers:
		if text == "" {
			return []Check{{"empty", "Which controllers?"}}
		}
		if n := namedControllers(text); n > 0 {
			return []Check{{"ok", "It names a controller of kube-controller-manager."}}
		}
		return []Check{{"warn", "It names no controller of kube-controller-manager (the ReplicaSet controller, say)."}}
	}
	return nil
}

// checkPhase checks the direction a phase's note claims, and that it
// names an operation the phase starts when it starts any.
func checkPhase(p volume.Part, text string) []Check {
	low := strings.ToLower(text)
	remove := strings.Contains(low, "remove-extra") || strings.Contains(low, "remove extra")
	add := strings.Contains(low, "add-missing") || strings.Contains(low, "add missing")
	var out []Check
	switch {
	case p.Direction == "" && (remove || add):
		out = append(out, Check{"warn", "This phase ranges over neither set and tests neither: it has no direction."})
	case remove && add:
		out = append(out, Check{"warn", "It says both remove-extra and add-missing: which one?"})
	case !remove && !add && p.Direction != "":
		out = append(out, Check{"warn", "Say its direction: remove-extra or add-missing."})
	case (remove && p.Direction == volume.RemoveExtra) || (add && p.Direction == volume.AddMissing):
		out = append(out, Check{"ok", "The direction is right."})
	case remove || add:
		out = append(out, Check{"warn", "The direction is not the one the source gives: look at which set its loop ranges over."})
	}
	if len(p.Starts) == 0 {
		return out
	}
	for _, s := range p.Starts {
		if strings.Contains(low, strings.ToLower(s.Call)) {
			return append(out, Check{"ok", "It names an operation the phase starts."})
		}
	}
	return append(out, Check{"warn", "It names no operation the phase starts (the operation executor's calls)."})
}

// checkSetWriters checks that text names at least one of set s's writers:
// a function, its type or its package's last element.
func checkSetWriters(tag string, s volume.Set, text string, quiz bool) []Check {
	low := strings.ToLower(text)
	named := 0
	for _, w := range s.Writers {
		for _, n := range writerNames(w.Func) {
			if len(n) >= 4 && strings.Contains(low, strings.ToLower(n)) {
				named++
				break
			}
		}
	}
	switch {
	case named == 0:
		return []Check{{"warn", fmt.Sprintf("It names none of the functions that write %s at %s.", s.Name, tag)}}
	case quiz:
		return []Check{{"ok", "It names a function that writes this set."}}
	}
	return []Check{{"ok", fmt.Sprintf("It names %d of the %d functions that write %s at %s.", named, len(s.Writers), s.Name, tag)}}
}

// writerNames are the names a reader may give a writer by: for
// "pkg/volume/util/operationexecutor.(*operationGenerator).GenerateMountVolumeFunc",
// the method, the type, and the package ("operationexecutor").
func writerNames(fn string) []string {
	pkg, rest, ok := strings.Cut(fn, ".(")
	if !ok {
		pkg, rest, _ = strings.Cut(fn, ".")
		return []string{rest, path.Base(pkg)}
	}
	typ, method, _ := strings.Cut(rest, ").")
	return []string{method, strings.TrimPrefix(typ, "*"), path.Base(pkg)}
}

// controllers are kube-controller-manager's controllers by the words a
// reader names them with.
var controllers = []string{"replicaset", "replica set", "deployment", "statefulset", "stateful set", "daemonset",
	"daemon set", "job", "endpoint", "namespace", "garbage", "node lifecycle", "nodelifecycle", "attach", "persistentvolume",
	"persistent volume", "serviceaccount", "service account", "resourcequota", "resource quota", "replicationcontroller",
	"replication controller", "horizontal", "hpa", "disruption", "ttl"}

// namedControllers counts the controllers text names.
func namedControllers(text string) int {
	low := strings.ToLower(text)
	n := 0
	for _, c := range controllers {
		if strings.Contains(low, c) {
			n++
		}
	}
	return n
}

// VolumeViews is every note of notes for the second reading's worksheet
// at r's tag, with the expected ones not yet written as empty notes, in
// the worksheet's order; pins and comments follow.
func VolumeViews(r *volume.Reading, notes []Note, quiz bool) []View {
	have := map[string]bool{}
	var out []View
	for _, n := range notes {
		have[n.ID] = true
		out = append(out, volumeView(r, n, quiz))
	}
	for _, id := range VolumeExpected(r) {
		if !have[id] {
			out = append(out, volumeView(r, Note{ID: id}, quiz))
		}
	}
	order := map[string]int{}
	for i, id := range VolumeExpected(r) {
		order[id] = i
	}
	slices.SortStableFunc(out, func(a, b View) int {
		ia, oka := order[a.ID]
		ib, okb := order[b.ID]
		switch {
		case oka && okb:
			return ia - ib
		case oka:
			return -1
		case okb:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func volumeView(r *volume.Reading, n Note, quiz bool) View {
	v := View{Note: n}
	switch Kind(n.ID) {
	case "vm", "vmphase", "comment":
		v.HTML = Render(n.Text)
	}
	v.Checks = CheckVolume(r, n.ID, n.Text, quiz)
	return v
}

// VolumeWorksheet is the hand-in of a room that reads the volume manager:
// a section per phase, the two sets' writers, the sentence and the
// controllers, each with its author and the checks; the pins after.
func VolumeWorksheet(r *volume.Reading, head Head, notes []Note) []byte {
	vs := VolumeViews(r, notes, head.Quiz)
	by := map[string]View{}
	for _, v := range vs {
		by[v.ID] = v
	}
	e := r.Entry
	var b bytes.Buffer
	fmt.Fprintf(&b, "# syncloop worksheet: the volume manager's reconciler, (*reconciler).%s at k8s.io/kubernetes %s\n\n", e.Func, r.Tag)
	fmt.Fprintf(&b, "%s\n\nSource: [%s:%d-%d](%s)\n\n", head.Title, e.File, e.Line, e.End, extractor.UpstreamURL(r.Tag, e.File, e.Line, e.End))
	if len(head.Readers) > 0 {
		fmt.Fprintf(&b, "Readers: %s\n\n", inlineList(head.Readers))
	}
	if authors := authorsOf(vs); len(authors) > 0 {
		fmt.Fprintf(&b, "Written by: %s\n\n", inlineList(authors))
	} else {
		fmt.Fprintf(&b, "Written by: nobody yet\n\n")
	}
	fmt.Fprintf(&b, "## The %d phases of a reconcile pass\n\n%s\n\n", len(r.Parts), VolumePhaseQuestion)
	for _, p := range r.Parts {
		fmt.Fprintf(&b, "### %s\n\n[%s:%d](%s)\n\n", p.Key, p.File, p.Line, extractor.UpstreamURL(r.Tag, p.File, p.Line, p.End))
		writeVolumeAnswer(&b, by[VolumePhaseID(p.Key)])
	}
	fmt.Fprintf(&b, "## The two sets and who writes them\n\n%s\n\n", VolumeSetQuestion)
	for _, s := range []struct{ id, name string }{{VolumeDesired, "DesiredStateOfWorld"}, {VolumeActual, "ActualStateOfWorld"}} {
		fmt.Fprintf(&b, "### %s\n\n", s.name)
		writeVolumeAnswer(&b, by[s.id])
	}
	fmt.Fprintf(&b, "## Level-triggered, in one sentence\n\n%s\n\n", VolumeSentenceQuestion)
	writeVolumeAnswer(&b, by[VolumeSentence])
	fmt.Fprintf(&b, "## The same shape in P4's controllers\n\n%s\n\n", VolumeControllersQuestion)
	writeVolumeAnswer(&b, by[VolumeControllers])
	writeFired(&b, vs, head.Journal)
	return b.Bytes()
}

// writeVolumeAnswer writes one answer (fenced: it is what a reader typed),
// its byline and the checker's warnings.
func writeVolumeAnswer(b *bytes.Buffer, v View) {
	if strings.TrimSpace(v.Text) == "" {
		fmt.Fprintf(b, "> (left empty)\n\n")
		return
	}
	fmt.Fprintf(b, "%s\n\n— %s\n\n", fenced(v.Text, "text"), strings.TrimPrefix(byline(v.Note), " "))
	warned := false
	for _, c := range v.Checks {
		if c.Level == "warn" {
			fmt.Fprintf(b, "- check: %s\n", Inline(c.Text))
			warned = true
		}
	}
	if warned {
		b.WriteString("\n")
	}
}

// volumeHeading is the first line of the second reading's hand-in.
func volumeHeading(r *volume.Reading) string {
	return fmt.Sprintf("syncloop worksheet: the volume manager's reconciler, (*reconciler).%s at k8s.io/kubernetes %s", r.Entry.Func, r.Tag)
}

// volumeRoom is tag's second reading when room id reads it, nil when the
// room reads the first; false when it answered 503 (the reading is still
// being derived).
func (h *Handlers) volumeRoom(w http.ResponseWriter, id, tag string) (*volume.Reading, bool) {
	if h.cfg.RoomReading == nil || h.cfg.VolumeReading == nil || h.cfg.RoomReading(id) != rooms.ReadingVolume {
		return nil, true
	}
	if vr := h.cfg.VolumeReading(tag); vr != nil {
		return vr, true
	}
	w.Header().Set("Retry-After", "2")
	jsonError(w, http.StatusServiceUnavailable, "the volume manager at "+tag+" is still being read: try again in a moment")
	return nil, false
}

// viewAt is the view of note n of room at r's tag: a note of the second
// reading's worksheet is checked against that reading when the room reads
// it (and has no checks while it loads).
func (h *Handlers) viewAt(r *extractor.Reading, room string, n Note, quiz bool) View {
	switch Kind(n.ID) {
	case "vm", "vmphase":
	default:
		return viewAt(r, n, quiz)
	}
	if h.cfg.VolumeReading != nil && r != nil {
		if vr := h.cfg.VolumeReading(r.Tag); vr != nil {
			return volumeView(vr, n, quiz)
		}
	}
	return View{Note: n, HTML: Render(n.Text)}
}

// otherReading says why note is not one room id keeps: an answer of the
// second reading's worksheet in a room that reads the first; "" when it
// is.
func (h *Handlers) otherReading(id, note string) string {
	switch Kind(note) {
	case "vm", "vmphase":
		if h.cfg.RoomReading == nil || h.cfg.RoomReading(id) != rooms.ReadingVolume {
			return "this room reads syncLoopIteration: the volume manager's worksheet is written in a room made to read it (Start a pair session on /k8s/TAG/volume-manager)"
		}
	}
	return ""
}
