package server

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/annotations/anchor"
	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// markupPayloads is what a reader might type to make a hand-in run or
// link something in an instructor's viewer. Each sets window.__pwned if
// it ever runs.
var markupPayloads = []string{
	`<img src=x onerror="window.__pwned=1">`,
	`<script>window.__pwned=1</script>`,
	`<svg onload="window.__pwned=1"></svg>`,
	`<iframe src="javascript:window.__pwned=1"></iframe>`,
	`<a href="javascript:window.__pwned=1">click</a>`,
	`<div onmouseover="window.__pwned=1">an html block</div>`,
	`<!-- a comment --> <b>bold</b>`,
	`<http://evil.example/a>`,
	`<someone@evil.example>`,
	`[x](javascript:window.__pwned=1)`,
	`![i](http://evil.example/i.png)`,
	"```\nfenced <b>code</b>\n```",
	"~~~\ntilde fence\n~~~",
	"# h1 heading",
	"Setext heading\n===",
	"|a|b|\n|-|-|\n|1|2|",
	`&lt;b&gt; &amp; &#60;script&#62; &copy;`,
	`\<b>\ back\\slashes \`,
	"[ref]: http://evil.example\n\n[ref]",
	`*em* **strong** _u_ ~~del~~`,
	"a footnote[^1]\n\n[^1]: http://evil.example",
	`www.evil.example`,
	`someone@evil.example`,
	`https://evil.example/path?q=1`,
	"> a quote\n- an item\n1. a number",
	"`code` and ``two`` ````",
	"---",
	"    indented code",
	`javascript:window.__pwned=1`,
}

// payloadWorksheet is a room's hand-in with p in every field a reader
// types (the class's name, readers, authors, answers, notes, a comment,
// a pin's author) and in the journal's text of the pinned line.
func payloadWorksheet(t *testing.T, r *extractor.Reading, p string) []byte {
	t.Helper()
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	q, err := anchor.New(r, r.Function.Cases[0].Start, r.Function.Cases[0].Start)
	if err != nil {
		t.Fatal(err)
	}
	var notes []annotations.Note
	for _, id := range annotations.Expected(r) {
		notes = append(notes, annotations.Note{ID: id, Text: p, Author: p, At: at})
	}
	notes = append(notes,
		annotations.Note{ID: "comment.abcdef", Text: p, Author: p, At: at, Quote: &q},
		annotations.Note{ID: "pin.room-abc-7", Text: p, Author: p, At: at})
	journal := func(feed string, seq uint64) (feeds.StoredLine, error) {
		return feeds.StoredLine{Feed: feed, Seq: seq, Raw: p, Case: r.Function.Cases[0].Key, Time: at, Cursor: p, Pods: []string{p}, Node: p, Kubelet: "v1.33.0"}, nil
	}
	head := annotations.Head{
		Title:   fmt.Sprintf("Room 1 of the class “%s”: pair session abc…", annotations.Inline(p)),
		Readers: []string{p, "Ann"},
		Journal: journal,
	}
	return annotations.Worksheet(r, head, notes)
}

var (
	tagRE  = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9]*)`)
	openRE = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	attrRE = regexp.MustCompile(`\s([a-zA-Z-]+)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)`)
)

// attrs is every attribute of every tag in h, name=value, sorted.
func attrs(h string) []string {
	var out []string
	for _, tag := range openRE.FindAllString(h, -1) {
		for _, m := range attrRE.FindAllStringSubmatch(tag, -1) {
			out = append(out, strings.ToLower(m[1])+"="+m[2])
		}
	}
	slices.Sort(out)
	return out
}

// viewers are Markdown renderers as an instructor's might be: goldmark's
// defaults, and GitHub's flavour with raw HTML let through.
var viewers = map[string]goldmark.Markdown{
	"goldmark": goldmark.New(),
	"gfm+unsafe": goldmark.New(goldmark.WithExtensions(extension.GFM, extension.Footnote),
		goldmark.WithRendererOptions(gmhtml.WithUnsafe())),
}

// elements is the sorted list of opening tags in h, code spans aside (a
// payload is set as one where a plain word is not).
func elements(h string) []string {
	var out []string
	for _, m := range tagRE.FindAllStringSubmatch(h, -1) {
		if m[1] == "" && m[2] != "code" {
			out = append(out, strings.ToLower(m[2]))
		}
	}
	slices.Sort(out)
	return out
}

// visible is the text h shows, whitespace runs made one space.
func visible(h string) string {
	return strings.Join(strings.Fields(html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(h, " "))), " ")
}

// TestHandInInert: each payload, in every field a reader types, leaves a
// hand-in rendered by goldmark (default, and GFM with raw HTML allowed)
// with the same elements as a hand-in of plain words: no script, image,
// link, iframe or any element from raw HTML, no heading, table, list or
// emphasis of the reader's; and its text shows as typed.
func TestHandInInert(t *testing.T) {
	r := fixture.Reading(t)
	fields := 0
	for name, md := range viewers {
		var base bytes.Buffer
		if err := md.Convert(payloadWorksheet(t, r, "plain"), &base); err != nil {
			t.Fatal(err)
		}
		want := elements(base.String())
		fields = strings.Count(visible(base.String()), "plain")
		for _, p := range markupPayloads {
			var out bytes.Buffer
			src := payloadWorksheet(t, r, p)
			if err := md.Convert(src, &out); err != nil {
				t.Fatal(err)
			}
			h := out.String()
			if got := elements(h); !slices.Equal(got, want) {
				t.Errorf("%s, payload %q: elements\n%v\nwant\n%v\nMarkdown:\n%s", name, p, got, want, src)
				continue
			}
			for _, bad := range []string{"<script", "<img", "<iframe", "<svg", "<b>", "<a href=\"javascript"} {
				if strings.Contains(h, bad) {
					t.Errorf("%s, payload %q: the HTML holds %q", name, p, bad)
				}
			}
			// Attributes are in tags alone: the text of a payload is escaped.
			if got := attrs(h); !slices.Equal(got, attrs(base.String())) {
				t.Errorf("%s, payload %q: attributes %v, want the worksheet's own %v", name, p, got, attrs(base.String()))
			}
			text, typed := visible(h), strings.Join(strings.Fields(p), " ")
			if n := strings.Count(text, typed); n < fields {
				t.Errorf("%s, payload %q: shown as typed %d times, want %d (once per field)\n%s", name, p, n, fields, text)
			}
		}
	}
	if len(markupPayloads) < 20 || fields < 10 {
		t.Fatalf("%d payloads in %d fields: the test does not test", len(markupPayloads), fields)
	}
}
