package site

import "github.com/syncloop/syncloop/extractor/volume"

// VolumeReading is tag's second reading when this site holds it loaded or
// its disk cache has it, nil otherwise: what a feed labels the volume
// manager's lines with (feeds.Config.VolumeReading). When the first
// reading at tag is loaded (its module is at hand) it starts the second's
// load, so that a feed's chains fill in before anyone opens the page.
func (s *Site) VolumeReading(tag string) *volume.Reading {
	st := s.volume(tag)
	if st != nil && isDone(st.done) && st.err == nil {
		return st.reading
	}
	if r, ok := volume.Cached(s.options(tag)); ok {
		return r
	}
	if st == nil && s.Reading(tag) != nil {
		s.startVolume(tag)
	}
	return nil
}
