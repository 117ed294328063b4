package site

// The second reading's notes (content/notes/volume), as the volume page
// shows them at a tag: each note's blocks for the tag kept, its sym: links
// resolved against the reading's definitions index (volume.Reading.Decls),
// and the note of a phase found by the phase's name at the tag or one of
// its older names.

import (
	"fmt"
	"strings"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
)

// reconcilerDir is the package of the phases' methods.
const reconcilerDir = "pkg/kubelet/volumemanager/reconciler"

// volumeNotes are the second reading's notes rendered at one tag.
type volumeNotes []noteView

// newVolumeNotes renders every volume note at r's tag.
func newVolumeNotes(r *volume.Reading) (volumeNotes, error) {
	notes, err := content.VolumeNotes()
	if err != nil {
		return nil, err
	}
	resolve := volumeResolver(r)
	var out volumeNotes
	for _, n := range notes {
		at, err := content.ForTag(n, r.Tag)
		if err != nil {
			return nil, err
		}
		h, err := content.Render(at, resolve)
		if err != nil {
			return nil, err
		}
		out = append(out, noteView{Key: n.Key, Title: n.Title, HTML: h, Front: n.Front})
	}
	return out, nil
}

// find is the note for key: the note's own key, or one of its aliases.
func (vn volumeNotes) find(key string) noteView {
	for _, n := range vn {
		if n.Key == key || aliasOf(n, key) {
			return n
		}
	}
	return noteView{}
}

func aliasOf(n noteView, key string) bool {
	return content.Note{Key: n.Key, Front: n.Front}.Names(key)
}

// volumeResolver resolves a volume note's sym: links against r's
// definitions index: the whole declaration upstream; and its reading:
// links as the first reading's notes do.
func volumeResolver(r *volume.Reading) func(string) (string, bool) {
	return func(sym string) (string, bool) {
		if name, ok := strings.CutPrefix(sym, content.ReadingScheme); ok {
			return readingURL(r.Tag, name)
		}
		d, ok := r.DeclOf(sym)
		if !ok {
			return "", false
		}
		return extractor.UpstreamURL(r.Tag, d.File, d.Start, d.End), true
	}
}

// partSym is the symbol of a phase's method, or of the entry's.
func partSym(fn string) string {
	if !strings.HasPrefix(fn, "(") {
		fn = "(*reconciler)." + fn
	}
	return fmt.Sprintf("%s.%s", reconcilerDir, fn)
}

// refsOf are the references in sym's declaration, if the index has it.
func refsOf(r *volume.Reading, sym string) []extractor.Ref {
	if d, ok := r.DeclOf(sym); ok {
		return d.Refs
	}
	return nil
}
