package static_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/rooms"
)

// modules reads the page's scripts, their comments blanked (line numbers
// kept), by file name.
func modules(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.js")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %v: the test looks in the wrong place", files)
	}
	comments := regexp.MustCompile(`(?s)/\*.*?\*/|(^|[^:])//[^\n]*`)
	code := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code[f] = comments.ReplaceAllStringFunc(string(b), func(c string) string {
			return strings.Repeat("\n", strings.Count(c, "\n"))
		})
	}
	return code
}

// lineOf is the line number of byte offset i in s.
func lineOf(s string, i int) int {
	return strings.Count(s[:i], "\n") + 1
}

// TestCloseCodesAreTheServers (issue 24): the close codes after which a
// page stops reconnecting are named once, in codes.js, with the server's
// values; no other module writes one as a number (the server's refusals
// are 4000 + an HTTP status: 4404, 4410, 4429).
func TestCloseCodesAreTheServers(t *testing.T) {
	want := map[string]websocket.StatusCode{
		"FEED_GONE": feeds.CloseFeedGone,
		"ROOM_GONE": rooms.CloseGone,
		"ROOM_FULL": rooms.CloseFull,
	}
	code := modules(t)
	got := map[string]websocket.StatusCode{}
	for _, m := range regexp.MustCompile(`export const (\w+) = (\d+);`).FindAllStringSubmatch(code["codes.js"], -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatal(err)
		}
		got[m[1]] = websocket.StatusCode(n)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("codes.js: %s = %d, the server's is %d", name, got[name], w)
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("codes.js: %s = %d is no close code the server sends (or this test does not know it)", name, g)
		}
	}
	literal := regexp.MustCompile(`\b44\d\d\b`)
	for f, s := range code {
		if f == "codes.js" {
			continue
		}
		for _, loc := range literal.FindAllStringIndex(s, -1) {
			t.Errorf("%s:%d writes the close code %s: import it from codes.js", f, lineOf(s, loc[0]), s[loc[0]:loc[1]])
		}
	}
}

// TestOneSelectionNoSideEvents (issue 24): the page's modules share the
// selection through selection.js and the notes through notes-store.js;
// none tells another anything through events of its own on document.
func TestOneSelectionNoSideEvents(t *testing.T) {
	side := regexp.MustCompile(`CustomEvent|dispatchEvent\(|['"]syncloop:`)
	for f, s := range modules(t) {
		for _, loc := range side.FindAllStringIndex(s, -1) {
			t.Errorf("%s:%d: %s: modules subscribe to selection.js (or use the notes' store), not to events of their own", f, lineOf(s, loc[0]), s[loc[0]:loc[1]])
		}
	}
}

// TestWrittenOnce (issue 24): what every module needs is written in one
// module: sockets (socket.js), the notes' events (notes-store.js), a source
// line's element and the element builder (dom.js), storage (dom.js; the
// classic quiz-early.js, which runs before any module, reads it itself).
func TestWrittenOnce(t *testing.T) {
	once := []struct {
		pattern, home string
		except        []string
	}{
		{`new WebSocket\(`, "socket.js", nil},
		{`new EventSource\(`, "notes-store.js", nil},
		{`function lineEl\(`, "dom.js", nil},
		{`function el\(`, "dom.js", nil},
		{`class Backoff\b`, "dom.js", nil},
		{`localStorage\.`, "dom.js", []string{"quiz-early.js"}},
		{`sessionStorage\.`, "dom.js", nil},
	}
	code := modules(t)
	for _, o := range once {
		re := regexp.MustCompile(o.pattern)
		if !re.MatchString(code[o.home]) {
			t.Errorf("%s: no %s: the test looks for the wrong thing", o.home, o.pattern)
		}
		for f, s := range code {
			if f == o.home || slices.Contains(o.except, f) {
				continue
			}
			for _, loc := range re.FindAllStringIndex(s, -1) {
				t.Errorf("%s:%d: %s is %s's: import it from there", f, lineOf(s, loc[0]), s[loc[0]:loc[1]], o.home)
			}
		}
	}
}

// TestReaderIdentityInOneModule (issue 40): the reader's name and colour
// are read and written in identity.js alone, with one default colour and
// one count of colours; no other module names their storage keys, nor
// counts the colours itself.
func TestReaderIdentityInOneModule(t *testing.T) {
	code := modules(t)
	if !strings.Contains(code["identity.js"], "'syncloop-name'") || !strings.Contains(code["identity.js"], "'syncloop-color'") {
		t.Fatal("identity.js does not keep the reader's name and colour: the test looks at the wrong module")
	}
	keys := regexp.MustCompile(`'syncloop-(name|color)'|const COLORS\s*=`)
	for f, src := range code {
		if f == "identity.js" {
			continue
		}
		for _, at := range keys.FindAllStringIndex(src, -1) {
			t.Errorf("%s:%d: %s: the reader's identity belongs to identity.js", f, lineOf(src, at[0]), src[at[0]:at[1]])
		}
	}
}
