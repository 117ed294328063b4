// Package content holds syncloop's own writing: one Markdown note per case
// key, plus the intro, pod_workers and two-sets notes, embedded in the binary.
package content

import "html/template"

// Note is one Markdown note with its front matter.
type Note struct {
	Key   string            // case key ("pleg") or page note ("intro", "pod-workers", "two-sets")
	Kind  string            // "case" or "page"
	Title string            // from front matter
	Front map[string]string // all front matter fields
	Body  []byte            // Markdown after the front matter
}

// Notes returns every embedded note, case notes in a stable order. (stub)
func Notes() ([]Note, error) { return nil, nil }

// Symbols returns every sym: link target the notes use, sorted, deduplicated. (stub)
func Symbols() []string { return nil }

// Render turns a note's Markdown into safe HTML; resolve maps a sym: target
// to an upstream URL at the page's tag, ok=false when it does not resolve. (stub)
func Render(n Note, resolve func(sym string) (href string, ok bool)) (template.HTML, error) {
	return "", nil
}
