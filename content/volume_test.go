package content_test

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/extractor/volume"
)

func TestForTag(t *testing.T) {
	body := "all\n::: since v1.27.0\nnew\n:::\n::: until v1.27.0\nold\n:::\n::: since v1.27.0 until v1.31.0\nmiddle\n:::\nend\n"
	n := content.Note{Key: "k", Body: []byte(body)}
	for _, tc := range []struct{ tag, want string }{
		{"v1.20.0", "all\nold\nend\n"},
		{"v1.27.0", "all\nnew\nmiddle\nend\n"},
		{"v1.30.14", "all\nnew\nmiddle\nend\n"},
		{"v1.31.0", "all\nnew\nend\n"},
		{"v1.27.0-beta.0", "all\nold\nend\n"}, // a pre-release is before its release
	} {
		got, err := content.ForTag(n, tc.tag)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Body) != tc.want {
			t.Errorf("at %s: %q, want %q", tc.tag, got.Body, tc.want)
		}
	}
	for _, bad := range []string{"::: since v1.27.0\nx\n", ":::\n", "::: since v1.27.0\n::: until v1.30.0\n:::\n", "::: after v1.2.0\n:::\n", "::: since 1.27\n:::\n"} {
		if _, err := content.ForTag(content.Note{Key: "k", Body: []byte(bad)}, "v1.30.0"); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	if string(n.Body) != body {
		t.Error("ForTag changed the note it was given")
	}
}

// volumeNoteKeys are the notes the volume page needs at one tag or another.
var volumeNoteKeys = []string{"entry", "unmountVolumes", "mountOrAttachVolumes", "unmountDetachDevices", "processReconstructedVolumes",
	"cleanOrphanVolumes", "updateReconstructedFromNodeStatus", "updateLastSyncTime", "DesiredStateOfWorld", "ActualStateOfWorld"}

func TestVolumeNotes(t *testing.T) {
	notes, err := content.VolumeNotes()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, n := range notes {
		keys = append(keys, n.Key)
		for _, tag := range []string{"v1.20.0", "v1.38.0-beta.0"} {
			at, err := content.ForTag(n, tag)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(at.Body), ":::") {
				t.Errorf("note %s at %s keeps a fence", n.Key, tag)
			}
			if _, err := content.Render(at, nil); err != nil {
				t.Fatal(err)
			}
		}
		if len(content.NoteSymbols(n)) == 0 {
			t.Errorf("note %s links no symbol", n.Key)
		}
	}
	if !slices.Equal(keys, volumeNoteKeys) {
		t.Errorf("volume notes %v, want %v", keys, volumeNoteKeys)
	}
	if n := notes[slices.IndexFunc(notes, func(n content.Note) bool { return n.Key == "mountOrAttachVolumes" })]; !n.Names("mountAttachVolumes") {
		t.Error("mountOrAttachVolumes' note does not answer to its old name")
	}
}

// volumeTags are the tags the volume notes are held to: the golden tags
// of extractor/volume, every minor's first release and the newest patch
// of each minor the module proxy lists.
var volumeTags = []string{
	"v1.20.0", "v1.21.0", "v1.22.0", "v1.23.0", "v1.24.0", "v1.25.0", "v1.26.0", "v1.27.0", "v1.28.0",
	"v1.29.0", "v1.29.6", "v1.30.0", "v1.30.14", "v1.31.0", "v1.31.14", "v1.32.0", "v1.32.13", "v1.33.0", "v1.33.13",
	"v1.34.0", "v1.34.4", "v1.35.0", "v1.35.4", "v1.36.0", "v1.36.3", "v1.37.0", "v1.37.2", "v1.38.0-beta.0",
}

// TestVolumeNotesAtTags holds each volume note, as shown at each tag (its
// blocks for the tag kept), to the reading derived from the source there:
// every sym: link resolves; every phase has a note; the entry's note links
// the function that runs and names the gate that chooses it; a phase's
// note says its direction, says readyToUnmount exactly when the phase is
// under it, links the phase's method, names what it starts, and links a
// set's mutating method or any interface method only when the phase calls
// it; a set's note names a writer from every package that writes the set;
// a message a shown note quotes is one a log site writes at the tag.
func TestVolumeNotesAtTags(t *testing.T) {
	extractortest.NeedNetwork(t)
	extractortest.Prefetch(volumeTags...)
	notes, err := content.VolumeNotes()
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range volumeTags {
		t.Run(tag, func(t *testing.T) {
			r, err := volume.Derive(extractortest.FS(t, tag), tag)
			if err != nil {
				t.Fatal(err)
			}
			at := map[string]content.Note{}
			for _, n := range notes {
				if at[n.Key], err = content.ForTag(n, tag); err != nil {
					t.Fatal(err)
				}
			}
			checkQuotes(t, r, at["entry"])
			checkSyms(t, r, at["entry"])
			checkEntry(t, r, at["entry"])
			for _, p := range r.Parts {
				n, ok := noteNaming(notes, p.Key)
				if !ok {
					t.Errorf("phase %s has no note", p.Key)
					continue
				}
				checkSyms(t, r, at[n.Key])
				checkQuotes(t, r, at[n.Key])
				checkPart(t, r, p, at[n.Key])
			}
			for _, s := range r.Sets {
				checkSyms(t, r, at[s.Name])
				checkQuotes(t, r, at[s.Name])
				checkSet(t, s, at[s.Name])
			}
		})
	}
}

func noteNaming(notes []content.Note, key string) (content.Note, bool) {
	for _, n := range notes {
		if n.Names(key) {
			return n, true
		}
	}
	return content.Note{}, false
}

func checkSyms(t *testing.T, r *volume.Reading, n content.Note) {
	t.Helper()
	for _, s := range content.NoteSymbols(n) {
		if _, ok := r.DeclOf(s); !ok {
			t.Errorf("note %s links %s, not declared at %s: bound the sentence with ::: since/until", n.Key, s, r.Tag)
		}
	}
}

// quoteRE is a log message a note quotes: "MountVolume.SetUp succeeded".
var quoteRE = regexp.MustCompile(`"([A-Za-z][^"\n]{6,})"`)

// checkQuotes: every message a note quotes is one a log site derived at
// the tag writes (its literal, or the literal a helper is given).
func checkQuotes(t *testing.T, r *volume.Reading, n content.Note) {
	t.Helper()
	for _, m := range quoteRE.FindAllStringSubmatch(string(n.Body), -1) {
		if !slices.ContainsFunc(r.LogSites, func(l volume.LogSite) bool { return strings.Contains(l.Literal, m[1]) }) {
			t.Errorf("note %s quotes %q, which no log site writes at %s", n.Key, m[1], r.Tag)
		}
	}
}

// guardRE is a note's Guard paragraph naming readyToUnmount.
var guardRE = regexp.MustCompile(`\*\*Guard\.\*\*[^\n]*readyToUnmount`)

const recv = "pkg/kubelet/volumemanager/reconciler.(*reconciler)."

func checkEntry(t *testing.T, r *volume.Reading, n content.Note) {
	t.Helper()
	if !slices.Contains(content.NoteSymbols(n), recv+r.Entry.Func) {
		t.Errorf("the entry's note does not link %s, which runs at %s", r.Entry.Func, r.Tag)
	}
	if r.Entry.Gate != "" && !strings.Contains(string(n.Body), "`"+r.Entry.Gate+"`") {
		t.Errorf("the entry's note does not name the gate %s, which chooses it at %s", r.Entry.Gate, r.Tag)
	}
}

func checkPart(t *testing.T, r *volume.Reading, p volume.Part, n content.Note) {
	t.Helper()
	body, syms := string(n.Body), content.NoteSymbols(n)
	word := map[string]string{volume.RemoveExtra: "Direction: remove-extra", volume.AddMissing: "Direction: add-missing", "": "No direction"}[p.Direction]
	if !strings.Contains(body, word) {
		t.Errorf("note %s does not say %q (the direction derived at %s)", n.Key, word, r.Tag)
	}
	if under := guardRE.MatchString(body); under != p.ReadyToUnmount {
		t.Errorf("note %s: its Guard puts the phase under readyToUnmount: %v; derived at %s: %v", n.Key, under, r.Tag, p.ReadyToUnmount)
	}
	if !slices.Contains(syms, recv+p.Key) {
		t.Errorf("note %s does not link %s at %s", n.Key, p.Key, r.Tag)
	}
	for _, s := range p.Starts {
		if !strings.Contains(body, s.Call) {
			t.Errorf("note %s does not name %s, which the phase starts at %s", n.Key, s.Call, r.Tag)
		}
	}
	// An interface method the note links (a set's, the executor's) is one
	// the phase calls, itself or in a reconciler method it calls.
	called := map[string]bool{}
	if d, ok := r.DeclOf(recv + p.Key); ok {
		for _, ref := range d.Refs {
			called[ref.Sym] = true
			if h, ok := r.DeclOf(ref.Sym); ok && strings.HasPrefix(ref.Sym, recv) {
				for _, hr := range h.Refs {
					called[hr.Sym] = true
				}
			}
		}
	}
	for _, sym := range syms {
		if d, ok := r.DeclOf(sym); ok && d.Kind == "interface method" && !called[sym] {
			t.Errorf("note %s links %s as a call of the phase; %s does not call it at %s", n.Key, sym, p.Key, r.Tag)
		}
	}
	for _, sym := range syms {
		for _, set := range r.Sets {
			m, ok := strings.CutPrefix(sym, "pkg/kubelet/volumemanager/cache."+set.Name+".")
			if !ok || !slices.Contains(set.Mutating, m) {
				continue
			}
			if !slices.ContainsFunc(set.Writers, func(c volume.Caller) bool {
				return c.Func == recv+p.Key && slices.ContainsFunc(c.Calls, func(call volume.Call) bool { return call.Method == m })
			}) {
				t.Errorf("note %s links %s.%s as a write of the phase; %s does not call it at %s", n.Key, set.Name, m, p.Key, r.Tag)
			}
		}
	}
}

func checkSet(t *testing.T, s volume.Set, n content.Note) {
	t.Helper()
	byPkg := map[string][]string{}
	for _, w := range s.Writers {
		dir := w.Func[:strings.LastIndex(w.Func, ".")]
		if i := strings.Index(w.Func, ".("); i >= 0 {
			dir = w.Func[:i]
		}
		byPkg[dir] = append(byPkg[dir], w.Func[strings.LastIndex(w.Func, ".")+1:])
	}
	body := string(n.Body)
	for dir, names := range byPkg {
		if !slices.ContainsFunc(names, func(name string) bool { return strings.Contains(body, name) }) {
			t.Errorf("note %s names no writer of package %s: %v", n.Key, path.Base(dir), names)
		}
	}
}

// TestRenderReadingLinks: a reading: link is pointed where the resolver
// says, a site path only; unresolved, it is its text. The two-sets note
// links its volume manager sighting to the second reading.
func TestRenderReadingLinks(t *testing.T) {
	resolve := func(dest string) (string, bool) {
		switch dest {
		case "reading:volume-manager":
			return "/k8s/v1.31.0/volume-manager", true
		case "reading:evil":
			return "javascript:alert(1)", true
		}
		return "", false
	}
	got, err := content.Render(content.Note{Key: "k", Kind: content.KindPage, Body: []byte("[the *second* reading](reading:volume-manager), [x](reading:evil), [y](reading:nope).")}, resolve)
	if err != nil {
		t.Fatal(err)
	}
	if want := `<p><a href="/k8s/v1.31.0/volume-manager">the <em>second</em> reading</a>, x, y.</p>`; strings.TrimSpace(string(got)) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	notes, err := content.Notes()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(notes, func(n content.Note) bool { return n.Key == "two-sets" })
	h, err := content.Render(notes[i], resolve)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), `<a href="/k8s/v1.31.0/volume-manager">`) {
		t.Errorf("the two-sets note does not link the second reading:\n%s", h)
	}
}
