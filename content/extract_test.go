package content_test

import (
	"testing"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

// TestNotesAtDefaultTag extracts the default tag from its real module zip and
// checks the notes against it: every sym: target resolves, and every case of
// syncLoopIteration has a note.
func TestNotesAtDefaultTag(t *testing.T) {
	tag := extractor.DefaultTag
	syms := content.Symbols()
	r := extractortest.Reading(t, tag, syms)

	t.Run("every symbol resolves", func(t *testing.T) {
		if len(syms) == 0 {
			t.Fatal("the notes link no symbol")
		}
		for _, s := range syms {
			if got, ok := r.Symbols[s]; !ok || !got.Found {
				t.Errorf("%s does not resolve at %s; fix the note that links it", s, tag)
			}
		}
	})

	t.Run("every case has a note", func(t *testing.T) {
		notes, err := content.Notes()
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, n := range notes {
			if n.Kind == content.KindCase {
				have[n.Key] = true
			}
		}
		if len(r.Function.Cases) < 8 {
			t.Fatalf("extracted %d cases at %s, want 8", len(r.Function.Cases), tag)
		}
		for _, c := range r.Function.Cases {
			if !have[c.Key] {
				t.Errorf("case %q (%s) at %s has no note", c.Key, c.Comm, tag)
			}
		}
	})
}
