package content

// volume.go holds the second reading's notes (notes/volume/*.md): one for
// the volume reconciler's entry, one per phase, one per set, each a page
// note keyed by what the volume page shows it beside ("entry", the phase's
// method name at recent tags, the set's interface name). A phase renamed
// upstream keeps its note: front matter "aliases:" lists its older names
// (mountOrAttachVolumes was mountAttachVolumes until v1.23).
//
// A note's text may depend on the tag, in blocks:
//
//	::: since v1.27.0
//	shown at v1.27.0 and later
//	:::
//	::: until v1.31.0
//	shown before v1.31.0
//	:::
//	::: since v1.27.0 until v1.31.0
//	:::
//
// ForTag keeps the blocks that hold at a tag (pre-releases order before
// their release, as semver has it). Blocks do not nest.

import (
	"bytes"
	"embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"golang.org/x/mod/semver"
)

// VolumeEntry is the key of the entry's note.
const VolumeEntry = "entry"

//go:embed notes/volume/*.md
var volumeFS embed.FS

var volumeLoaded = sync.OnceValues(func() ([]Note, error) { return parseNotes(volumeFS, "notes/volume") })

// VolumeNotes returns the second reading's notes in their order. The
// returned notes are copies.
func VolumeNotes() ([]Note, error) { return copies(volumeLoaded()) }

// Aliases are the older names of a note's key ("aliases: a, b").
func (n Note) Aliases() []string {
	return strings.FieldsFunc(n.Front["aliases"], func(r rune) bool { return r == ',' || r == ' ' })
}

// Names reports whether key is the note's key or one of its aliases.
func (n Note) Names(key string) bool {
	return n.Key == key || slices.Contains(n.Aliases(), key)
}

// ForTag is n with only the blocks that hold at tag, their fences removed.
func ForTag(n Note, tag string) (Note, error) {
	var out bytes.Buffer
	in, keep := false, true
	for i, line := range bytes.SplitAfter(n.Body, []byte("\n")) {
		fence, ok := strings.CutPrefix(strings.TrimSpace(string(line)), ":::")
		if !ok {
			if keep {
				out.Write(line)
			}
			continue
		}
		if fence = strings.TrimSpace(fence); fence == "" {
			if !in {
				return Note{}, fmt.Errorf("note %s line %d: ::: closes no block", n.Key, i+1)
			}
			in, keep = false, true
			continue
		}
		if in {
			return Note{}, fmt.Errorf("note %s line %d: blocks do not nest; close the one before with a line of three colons", n.Key, i+1)
		}
		holds, err := blockHolds(fence, tag)
		if err != nil {
			return Note{}, fmt.Errorf("note %s line %d: %w", n.Key, i+1, err)
		}
		in, keep = true, holds
	}
	if in {
		return Note{}, fmt.Errorf("note %s: a block is not closed; end it with a line of three colons", n.Key)
	}
	n.Front = maps.Clone(n.Front)
	n.Body = out.Bytes()
	return n, nil
}

// blockHolds says whether a fence's "since A", "until B" or both hold at
// tag.
func blockHolds(fence, tag string) (bool, error) {
	f := strings.Fields(fence)
	if len(f) == 0 || len(f)%2 != 0 {
		return false, fmt.Errorf("want ::: since TAG, ::: until TAG or both, got %q", fence)
	}
	holds := true
	for i := 0; i < len(f); i += 2 {
		word, at := f[i], f[i+1]
		if !semver.IsValid(at) {
			return false, fmt.Errorf("%q is not a tag", at)
		}
		switch word {
		case "since":
			holds = holds && semver.Compare(tag, at) >= 0
		case "until":
			holds = holds && semver.Compare(tag, at) < 0
		default:
			return false, fmt.Errorf("want since or until, got %q", word)
		}
	}
	return holds, nil
}
