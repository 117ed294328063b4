package site

import (
	"github.com/syncloop/syncloop/extractor"
)

// KnownReadings returns the Readings of the tags the site can read
// without a fetch: those cached on disk at start and those loaded since.
// A cached one not loaded yet starts loading, and is returned once it is.
// The live side tells a kubelet's version by their log sites.
func (s *Site) KnownReadings() []*extractor.Reading {
	tags, _ := s.readableTags()
	var out []*extractor.Reading
	for _, tag := range tags {
		if r := s.Reading(tag); r != nil {
			out = append(out, r)
		} else {
			s.Load(tag)
		}
	}
	return out
}
