package site

import (
	"github.com/syncloop/syncloop/extractor"
)

// KnownReadings returns the Readings of the tags the site can read
// without a fetch: those cached on disk at start and those loaded since.
// A cached one not loaded yet starts loading, and is returned once it is.
// The live side tells a kubelet's version by their log sites.
//
// It starts at most as many loads as the site holds tags (MaxTags): with
// more cached than that, loading them all would evict the ones just
// loaded, and every call would read them from disk again.
func (s *Site) KnownReadings() []*extractor.Reading {
	tags, _ := s.readableTags()
	var out []*extractor.Reading
	room := MaxTags
	for _, tag := range tags {
		if r := s.Reading(tag); r != nil {
			out = append(out, r)
			room--
		}
	}
	for _, tag := range tags {
		if room <= 0 {
			break
		}
		if s.Reading(tag) == nil {
			s.Load(tag)
			room--
		}
	}
	return out
}
