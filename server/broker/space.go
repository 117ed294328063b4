package broker

import (
	"errors"
	"fmt"
)

// ErrNoSpace: the disk under the data dir has too little free space for
// what was asked.
var ErrNoSpace = errors.New("not enough free disk space")

// CheckSpace returns an error wrapping ErrNoSpace, naming dir and what
// needs the space, when dir's file system has less than need bytes free
// for it. It returns nil when free space cannot be told.
func CheckSpace(dir string, need int64, what string) error {
	free, ok := freeBytes(dir)
	if !ok || free >= need {
		return nil
	}
	return fmt.Errorf("%w: %s has %d MB free; %s needs at least %d MB there: free some space or choose another directory",
		ErrNoSpace, dir, free>>20, what, (need+1<<20-1)>>20)
}

// Space says whether there is room on disk for one more feed's journal
// (Config.MinFree): an error wrapping ErrNoSpace when not. It is checked
// each time, so a feed refused is taken once space frees. Only an
// embedded server's own directory is checked; a cluster's disks are its
// own.
func (b *Broker) Space() error {
	if p := b.StoreProblem(); p != "" {
		return fmt.Errorf("%w: %s", ErrNoSpace, p)
	}
	if b.spaceDir == "" || b.minFree <= 0 {
		return nil
	}
	return CheckSpace(b.spaceDir, b.minFree, "a new feed's journal (JetStream)")
}
