package diff

import (
	"fmt"
	"slices"

	"golang.org/x/mod/semver"

	"github.com/syncloop/syncloop/extractor"
)

// History is one case key across tags: whether the case is there and what
// changed since the tag before.
//
// JSON: {"key", "tags": [{"tag", "present", "status", "changed", "styles",
// "type", "start", "end"}]}; "status" is added, removed, changed or same
// against the tag before, and "" for the first tag (and for a tag that has
// the case neither at it nor before it).
type History struct {
	Key  string `json:"key"`
	Tags []Step `json:"tags"`
}

// Step is the case at one tag.
type Step struct {
	Tag     string   `json:"tag"`
	Present bool     `json:"present"`
	Status  Status   `json:"status,omitempty"`
	Changed []string `json:"changed,omitempty"` // as Case.Changed
	Styles  []string `json:"styles,omitempty"`  // the log styles of its calls: printf, structured, contextual
	Type    string   `json:"type,omitempty"`
	Start   int      `json:"start,omitempty"`
	End     int      `json:"end,omitempty"`
	// Case is the step's difference from the tag before (nil for the first).
	Case *Case `json:"-"`
}

// NewHistory follows the case key through readings, given oldest first.
func NewHistory(key string, readings []*extractor.Reading) *History {
	h := &History{Key: key}
	for i, r := range readings {
		st := Step{Tag: r.Tag}
		if c, ok := r.Function.CaseByKey(key); ok {
			st.Present, st.Type, st.Start, st.End = true, c.Type, c.Start, c.End
			for _, l := range c.Logs {
				if !slices.Contains(st.Styles, l.Style) {
					st.Styles = append(st.Styles, l.Style)
				}
			}
		}
		if i > 0 {
			prev := readings[i-1]
			ca, _ := prev.Function.CaseByKey(key)
			cb, _ := r.Function.CaseByKey(key)
			if ca != nil || cb != nil {
				c := compareCase(prev, r, ca, cb)
				c.Key = key
				st.Status, st.Changed, st.Case = c.Status, c.Changed, &c
			}
		}
		h.Tags = append(h.Tags, st)
	}
	return h
}

// Arrived is the first tag of the history with the case, after a tag
// without it; "" when the case was there from the first tag on or never.
func (h *History) Arrived() string {
	for i := 1; i < len(h.Tags); i++ {
		if h.Tags[i].Present && !h.Tags[i-1].Present {
			return h.Tags[i].Tag
		}
	}
	return ""
}

// MinorTags are the first releases of every minor from extractor.MinTag to
// newest's minor, oldest first: v1.20.0, v1.21.0, …
func MinorTags(newest string) []string {
	var tags []string
	for m := minor(extractor.MinTag); ; m++ {
		tag := fmt.Sprintf("v1.%d.0", m)
		if semver.Compare(tag, newest) > 0 {
			break
		}
		tags = append(tags, tag)
	}
	return tags
}

func minor(tag string) int {
	var maj, m int
	fmt.Sscanf(semver.MajorMinor(tag), "v%d.%d", &maj, &m)
	return m
}

// PreviousMinor is the first release of the minor before tag's
// ("v1.30.0" for "v1.31.0" or "v1.31.4"), or "" before extractor.MinTag.
func PreviousMinor(tag string) string {
	prev := fmt.Sprintf("v1.%d.0", minor(tag)-1)
	if !semver.IsValid(tag) || semver.Compare(prev, extractor.MinTag) < 0 {
		return ""
	}
	return prev
}
