package classes

// A class whose rooms read the volume manager's reconciler (Class.Reading
// is rooms.ReadingVolume): its grid's columns are that worksheet's items
// (annotations.VolumeExpected) and its answers are checked against the
// second reading at the room's tag.

import (
	"strings"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/rooms"
)

// sheet is the worksheet a room is asked at its tag: the ids of its items,
// in order, and each answer's state; ok is false until the reading it is
// checked against is loaded.
type sheet struct {
	ids   []string
	state func(n annotations.Note) (string, []string)
	items []Item
}

// sheetOf is the worksheet of a room that reads reading at tag.
func (d Deps) sheetOf(reading, tag string) (sheet, bool) {
	if reading == rooms.ReadingVolume {
		vr := d.volumeReading(tag)
		if vr == nil {
			return sheet{}, false
		}
		return sheet{ids: annotations.VolumeExpected(vr), items: volumeItems(vr),
			state: func(n annotations.Note) (string, []string) { return volumeState(vr, n) }}, true
	}
	r := d.Reading(tag)
	if r == nil {
		return sheet{}, false
	}
	return readingSheet(r), true
}

// readingSheet is the first reading's worksheet at r's tag.
func readingSheet(r *extractor.Reading) sheet {
	return sheet{ids: annotations.Expected(r), items: Items(r),
		state: func(n annotations.Note) (string, []string) { return ItemState(r, n) }}
}

// volumeReading is tag's second reading once loaded, nil before (or
// when the server reads none).
func (d Deps) volumeReading(tag string) *volume.Reading {
	if d.VolumeReading == nil {
		return nil
	}
	return d.VolumeReading(tag)
}

// volumeItems is the second reading's worksheet's items at r's tag, in
// the worksheet's order.
func volumeItems(r *volume.Reading) []Item {
	out := []Item{}
	labels := map[string]string{annotations.VolumeDesired: "desired set: writers", annotations.VolumeActual: "actual set: writers",
		annotations.VolumeSentence: "sentence", annotations.VolumeControllers: "P4 controllers"}
	for _, id := range annotations.VolumeExpected(r) {
		kind, key, _ := strings.Cut(id, ".")
		it := Item{ID: id, Kind: kind, Label: labels[id]}
		if kind == "vmphase" { // the grid groups a phase's column under it, as a case's
			it.Case, it.Label = key, key+": direction"
		}
		out = append(out, it)
	}
	return out
}

// volumeState is ItemState for an answer of the second reading's
// worksheet.
func volumeState(r *volume.Reading, n annotations.Note) (string, []string) {
	if strings.TrimSpace(n.Text) == "" {
		return StateEmpty, nil
	}
	return checksState(annotations.CheckVolume(r, n.ID, n.Text, false))
}
