package site

import "github.com/syncloop/syncloop/extractor/volume"

// VolumeReading is tag's second reading when this site holds it loaded or
// its disk cache has it, nil otherwise: what a feed labels the volume
// manager's lines with (feeds.Config.VolumeReading). It never starts a
// load (a derivation costs seconds of CPU): opening the page that shows
// the chains, /k8s/{tag}/volume-manager, does.
func (s *Site) VolumeReading(tag string) *volume.Reading {
	if st := s.volume(tag); st != nil && isDone(st.done) && st.err == nil {
		return st.reading
	}
	if r, ok := volume.Cached(s.options(tag)); ok {
		return r
	}
	return nil
}
