package content

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestParseFrontMatter(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		front   map[string]string
		body    string
		wantErr string
	}{
		{
			name:  "fields, comments, quotes",
			in:    "---\ntitle: \"The PLEG: events\"\n# a comment\n\nkind: case   # trailing comment\ncase: 'pleg'\n---\nBody *here*.\n",
			front: map[string]string{"title": "The PLEG: events", "kind": "case", "case": "pleg"},
			body:  "Body *here*.\n",
		},
		{
			name:  "CRLF line ends",
			in:    "---\r\ntitle: T\r\nkind: page\r\nkey: intro\r\n---\r\nText\r\n",
			front: map[string]string{"title": "T", "kind": "page", "key": "intro"},
			body:  "Text\r\n",
		},
		{
			name:  "empty body",
			in:    "---\ntitle: T\n---",
			front: map[string]string{"title": "T"},
			body:  "",
		},
		{name: "no opening line", in: "title: T\n---\n", wantErr: "must start with a --- line"},
		{name: "empty file", in: "", wantErr: "must start with a --- line"},
		{name: "no closing line", in: "---\ntitle: T\nkind: case\n", wantErr: "no closing --- line"},
		{name: "line without colon", in: "---\ntitle T\n---\n", wantErr: `line 2: want "field: value"`},
		{name: "field with a space", in: "---\nthe title: T\n---\n", wantErr: `want "field: value"`},
		{name: "field given twice", in: "---\ntitle: A\ntitle: B\n---\n", wantErr: `line 3: field "title" given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			front, body, err := parseFrontMatter([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalMaps(front, tt.front) {
				t.Errorf("front = %v, want %v", front, tt.front)
			}
			if string(body) != tt.body {
				t.Errorf("body = %q, want %q", body, tt.body)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestParseNote(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		key      string
		kind     string
		wantErr  string
		wantBody string
	}{
		{name: "case note", in: "---\ntitle: T\nkind: case\ncase: pleg\n---\nx", key: "pleg", kind: KindCase, wantBody: "x"},
		{name: "page note", in: "---\ntitle: T\nkind: page\nkey: intro\norder: 2\n---\n", key: "intro", kind: KindPage},
		{name: "case note with key only", in: "---\ntitle: T\nkind: case\nkey: pleg\n---\n", wantErr: "needs a case field"},
		{name: "page note with case only", in: "---\ntitle: T\nkind: page\ncase: pleg\n---\n", wantErr: "needs a key field"},
		{name: "no title", in: "---\nkind: case\ncase: pleg\n---\n", wantErr: "missing title"},
		{name: "no kind", in: "---\ntitle: T\ncase: pleg\n---\n", wantErr: "missing kind"},
		{name: "bad kind", in: "---\ntitle: T\nkind: note\ncase: pleg\n---\n", wantErr: `kind "note"`},
		{name: "bad order", in: "---\ntitle: T\nkind: page\nkey: a\norder: first\n---\n", wantErr: `order "first"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseNote([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.Key != tt.key || n.Kind != tt.kind || n.Title != "T" || string(n.Body) != tt.wantBody {
				t.Errorf("got key=%q kind=%q title=%q body=%q", n.Key, n.Kind, n.Title, n.Body)
			}
		})
	}
}

func note(kind, key string, extra ...string) *fstest.MapFile {
	field := "case"
	if kind == KindPage {
		field = "key"
	}
	s := "---\ntitle: " + key + "\nkind: " + kind + "\n" + field + ": " + key + "\n" + strings.Join(extra, "\n") + "\n---\nText.\n"
	return &fstest.MapFile{Data: []byte(s)}
}

func TestParseNotes(t *testing.T) {
	t.Run("order", func(t *testing.T) {
		fsys := fstest.MapFS{
			"n/housekeeping.md": note(KindCase, "housekeeping"),
			"n/zeta.md":         note(KindCase, "zeta"), // not a case at recent tags: listed after the known ones
			"n/alpha.md":        note(KindCase, "alpha"),
			"n/pleg.md":         note(KindCase, "pleg"),
			"n/config.md":       note(KindCase, "config"),
			"n/two-sets.md":     note(KindPage, "two-sets", "order: 3"),
			"n/intro.md":        note(KindPage, "intro", "order: 1"),
			"n/b.md":            note(KindPage, "b"), // order 0 comes first
			"n/ignored.txt":     {Data: []byte("not a note")},
		}
		notes, err := parseNotes(fsys, "n")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"b", "intro", "two-sets", "config", "pleg", "housekeeping", "alpha", "zeta"}
		if got := keys(notes); !slices.Equal(got, want) {
			t.Errorf("order = %v, want %v", got, want)
		}
	})
	t.Run("duplicate key", func(t *testing.T) {
		fsys := fstest.MapFS{
			"n/pleg.md":  note(KindCase, "pleg"),
			"n/pleg2.md": note(KindCase, "pleg"),
		}
		_, err := parseNotes(fsys, "n")
		if err == nil || !strings.Contains(err.Error(), `duplicate key "pleg"`) {
			t.Fatalf("err = %v, want a duplicate key error", err)
		}
	})
	t.Run("duplicate key across kinds", func(t *testing.T) {
		fsys := fstest.MapFS{
			"n/a.md": note(KindCase, "sync"),
			"n/b.md": note(KindPage, "sync"),
		}
		if _, err := parseNotes(fsys, "n"); err == nil {
			t.Fatal("want a duplicate key error")
		}
	})
	t.Run("broken note names its file", func(t *testing.T) {
		fsys := fstest.MapFS{"n/bad.md": {Data: []byte("no front matter")}}
		_, err := parseNotes(fsys, "n")
		if err == nil || !strings.Contains(err.Error(), "n/bad.md") {
			t.Fatalf("err = %v, want it to name n/bad.md", err)
		}
	})
}

func keys(notes []Note) []string {
	var out []string
	for _, n := range notes {
		out = append(out, n.Key)
	}
	return out
}

// TestNotes checks the embedded notes themselves: they parse, come in the
// documented order, and every case key of recent tags has a note with the
// sections readers look for.
func TestNotes(t *testing.T) {
	notes, err := Notes()
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"intro", "pod-workers", "two-sets"}, CaseOrder...)
	if got := keys(notes); !slices.Equal(got, want) {
		t.Fatalf("notes = %v, want %v", got, want)
	}
	links := regexp.MustCompile(`\]\((sym:)?[^)\s]*(\([^)\s]*\)[^)\s]*)*\)`)
	for _, n := range notes {
		t.Run(n.Key, func(t *testing.T) {
			if n.Title == "" || len(n.Body) == 0 {
				t.Fatalf("empty title or body")
			}
			if strings.Contains(string(n.Body), "<") && strings.Contains(string(n.Body), "</") {
				t.Errorf("note has raw HTML; it would be dropped in safe mode")
			}
			if _, err := Render(n, func(string) (string, bool) { return "https://example.com/x", true }); err != nil {
				t.Fatal(err)
			}
			if len(NoteSymbols(n)) == 0 {
				t.Errorf("note links no symbol; link to the code by sym:")
			}
			if n.Kind != KindCase {
				return
			}
			for _, h := range []string{"\n### Fire it\n", "\n### Expect at -v=4\n"} {
				if !strings.Contains(string(n.Body), h) {
					t.Errorf("case note lacks the section %q", strings.TrimSpace(h))
				}
			}
			// Readable in a margin: 150–300 words, not counting link targets.
			words := len(strings.Fields(links.ReplaceAllString(string(n.Body), "]")))
			if words < 150 || words > 320 {
				t.Errorf("case note has %d words, want 150–300", words)
			}
		})
	}
	// Notes returns copies: changing one does not change the next call's.
	notes[0].Front["title"] = "changed"
	notes[0].Body[0] = '!'
	again, _ := Notes()
	if again[0].Front["title"] == "changed" || again[0].Body[0] == '!' {
		t.Error("Notes shares its maps or bodies between calls")
	}
}

func render(t *testing.T, body string, resolve func(string) (string, bool)) string {
	t.Helper()
	h, err := Render(Note{Key: "k", Kind: KindCase, Body: []byte(body)}, resolve)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func TestRenderSafeMode(t *testing.T) {
	body := "Hello <script>alert(1)</script> and <img src=x onerror=alert(2)>.\n\n" +
		"<div onclick=\"alert(3)\">block</div>\n\n" +
		"[click](javascript:alert(4)) <iframe src=\"https://evil.example\"></iframe>\n\n" +
		"```\n<script>in code is text</script>\n```\n"
	got := render(t, body, nil)
	for _, bad := range []string{"<script", "<img", "onerror=", "<div", "onclick", "javascript:", "<iframe"} {
		if strings.Contains(got, bad) {
			t.Errorf("output contains %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "&lt;script&gt;in code is text&lt;/script&gt;") {
		t.Errorf("code block not escaped as text:\n%s", got)
	}
	if !strings.Contains(got, "raw HTML omitted") {
		t.Errorf("raw HTML not reported as omitted:\n%s", got)
	}
}

// fakeResolver resolves the symbols in the map, nothing else.
func fakeResolver(known map[string]string) func(string) (string, bool) {
	return func(sym string) (string, bool) {
		href, ok := known[sym]
		return href, ok
	}
}

func TestRenderSymLinks(t *testing.T) {
	resolve := fakeResolver(map[string]string{
		"pkg/kubelet/prober/results.(*manager).Set": "https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/prober/results/results_manager.go#L113",
		"pkg/kubelet.handleProbeSync":               "https://example.com/h?a=1&b=\"2\"",
		"pkg/evil.Link":                             "javascript:alert(1)",
	})
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "resolved, parentheses in the destination",
			in:   "[results manager](sym:pkg/kubelet/prober/results.(*manager).Set)",
			want: `<p><a href="https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/prober/results/results_manager.go#L113" class="sym" title="pkg/kubelet/prober/results.(*manager).Set">results manager</a></p>`,
		},
		{
			name: "resolved, angle-bracket destination",
			in:   "[`Set`](<sym:pkg/kubelet/prober/results.(*manager).Set>)",
			want: `<p><a href="https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/prober/results/results_manager.go#L113" class="sym" title="pkg/kubelet/prober/results.(*manager).Set"><code>Set</code></a></p>`,
		},
		{
			name: "unresolved stays visible",
			in:   "See [the *old* helper](sym:pkg/kubelet.(*Kubelet).gone).",
			want: `<p>See <span class="sym-unresolved" title="pkg/kubelet.(*Kubelet).gone does not resolve at this tag">the <em>old</em> helper</span>.</p>`,
		},
		{
			name: "href and title are escaped",
			in:   "[h](sym:pkg/kubelet.handleProbeSync)",
			want: `<p><a href="https://example.com/h?a=1&amp;b=&#34;2&#34;" class="sym" title="pkg/kubelet.handleProbeSync">h</a></p>`,
		},
		{
			name: "a dangerous URL from the resolver is not linked",
			in:   "[e](sym:pkg/evil.Link)",
			want: `<p><span class="sym-unresolved" title="pkg/evil.Link does not resolve at this tag">e</span></p>`,
		},
		{
			name: "autolink shows the symbol",
			in:   "<sym:pkg/kubelet.handleProbeSync>",
			want: `<p><a href="https://example.com/h?a=1&amp;b=&#34;2&#34;" class="sym" title="pkg/kubelet.handleProbeSync">pkg/kubelet.handleProbeSync</a></p>`,
		},
		{
			name: "ordinary links are untouched",
			in:   "[Go](https://go.dev/)",
			want: `<p><a href="https://go.dev/">Go</a></p>`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.TrimSpace(render(t, tt.in, resolve)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	t.Run("nil resolver leaves every symbol unresolved", func(t *testing.T) {
		got := render(t, "[a](sym:pkg/a.B)", nil)
		if !strings.Contains(got, `class="sym-unresolved"`) || strings.Contains(got, "<a ") {
			t.Errorf("got %s", got)
		}
	})
}

// TestRenderGolden renders a whole fixture note: GFM tables, heading ids,
// resolved and unresolved symbols. Refresh with go test -update.
func TestRenderGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "fixture.md"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := parseNote(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Render(n, fakeResolver(map[string]string{
		"pkg/kubelet.(*Kubelet).syncLoopIteration":  "https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/kubelet.go#L2746",
		"pkg/kubelet/prober/results.(*manager).Set": "https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/prober/results/results_manager.go#L113",
	}))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "fixture.golden.html")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("render differs from %s (run go test -update to refresh):\n%s", golden, got)
	}
	for _, id := range []string{`id="note-fixture-fire-it"`, `id="note-fixture-fire-it-1"`, `id="note-fixture-expect-at--v4"`} {
		if !strings.Contains(string(got), id) {
			t.Errorf("missing heading %s", id)
		}
	}
}

func TestNoteSymbols(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "fixture.md"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := parseNote(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pkg/kubelet.(*Kubelet).syncLoopIteration",
		"pkg/kubelet/prober/results.(*manager).Set",
		"pkg/kubelet.(*Kubelet).gone",
		"pkg/kubelet/prober/results.(*manager).Set",
		"pkg/kubelet/types.PodUpdate",
	}
	if got := NoteSymbols(n); !slices.Equal(got, want) {
		t.Errorf("NoteSymbols = %q\nwant %q", got, want)
	}
}

func TestSymbols(t *testing.T) {
	syms := Symbols()
	if !slices.IsSorted(syms) || len(slices.Compact(slices.Clone(syms))) != len(syms) {
		t.Errorf("Symbols is not sorted and deduplicated: %q", syms)
	}
	notes, err := Notes()
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, n := range notes {
		all = append(all, NoteSymbols(n)...)
	}
	slices.Sort(all)
	if want := slices.Compact(all); !slices.Equal(syms, want) {
		t.Errorf("Symbols = %q\nwant %q", syms, want)
	}
	for _, s := range []string{
		"pkg/kubelet/prober/results.(*manager).Set", // parentheses kept whole
		"pkg/kubelet.(*podWorkers).UpdatePod",
		"pkg/kubelet/volumemanager/cache.DesiredStateOfWorld",
	} {
		if !slices.Contains(syms, s) {
			t.Errorf("Symbols lacks %s", s)
		}
	}
	// Every target looks like a symbol the extractor can look up.
	shape := regexp.MustCompile(`^(pkg|cmd|staging)/[a-z0-9_/.-]*[a-z0-9]\.(\(\*?[A-Za-z_]\w*\)\.|[A-Za-z_]\w*\.)?[A-Za-z_]\w*$`)
	for _, s := range syms {
		if !shape.MatchString(s) {
			t.Errorf("symbol %q is not written pkg/dir.Name, pkg/dir.(*Recv).Method or pkg/dir.Type.Method", s)
		}
	}
	syms[0] = "changed"
	if Symbols()[0] == "changed" {
		t.Error("Symbols shares its slice between calls")
	}
}

func TestHeadingIDs(t *testing.T) {
	ids := newIDs("note-x-")
	ids.Put([]byte("note-x-taken"))
	for _, tt := range []struct{ in, want string }{
		{"Fire it", "note-x-fire-it"},
		{"Fire it", "note-x-fire-it-1"},
		{"Expect at -v=4", "note-x-expect-at--v4"},
		{"Taken", "note-x-taken-1"},
		{"¿¡", "note-x-heading"},
	} {
		if got := string(ids.Generate([]byte(tt.in), 0)); got != tt.want {
			t.Errorf("Generate(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
