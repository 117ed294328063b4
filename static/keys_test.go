package static_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor"
)

// TestNoCaseKeyInPageCode (issue 11): the case keys are defined once, in
// extractor.CaseKeys; the page learns them from the server (data-case
// attributes, the colour slot in data-hue), so the scripts, styles and
// templates name none of them outside comments. An upstream rename is then
// one edit, not eight.
func TestNoCaseKeyInPageCode(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.js", "*.css", "../templates/*.html"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("found only %v: the test looks in the wrong place", files)
	}
	var alts []string
	for _, k := range extractor.CaseKeys {
		alts = append(alts, regexp.QuoteMeta(k))
	}
	keys := strings.Join(alts, "|")
	// A key as a string, a class, an id or an attribute value.
	named := regexp.MustCompile(`["'` + "`" + `](` + keys + `)["'` + "`" + `]|[.#](` + keys + `)\b|case-(` + keys + `)\b|=(` + keys + `)\b`)
	comments := regexp.MustCompile(`(?s)/\*.*?\*/|<!--.*?-->|(^|[^:])//[^\n]*`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code := comments.ReplaceAllStringFunc(string(b), func(c string) string {
			return strings.Repeat("\n", strings.Count(c, "\n")) // keep line numbers
		})
		for i, line := range strings.Split(code, "\n") {
			if m := named.FindString(line); m != "" {
				t.Errorf("%s:%d names the case key %s; take it from the page's data attributes (extractor.CaseKeys is the one definition)", f, i+1, m)
			}
		}
	}
}
