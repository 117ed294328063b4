package diff

// The second reading (extractor/volume) between two tags and across the
// minors: its entry and each phase, followed through the file moves and
// renames upstream made. The entry is the entry whatever it is called
// (reconcile until v1.26, reconcileNew from v1.27 to v1.30, reconcile
// again) and wherever it is (reconciler.go, reconciler_new.go); a phase
// is matched by its name, by a name the caller says is an older one of
// the same phase (the notes' aliases: mountAttachVolumes for
// mountOrAttachVolumes), or, when one phase went and one came at the same
// place in the pass, by its body: most of its lines the same.

import (
	"slices"

	"github.com/syncloop/syncloop/extractor/volume"
)

// VolumeEntry is the key of the entry among a VolumeDiff's units.
const VolumeEntry = "entry"

// Unit is the entry or one phase at one tag.
type Unit struct {
	Func      string `json:"func"` // "reconcileNew", "(*reconciler).mountOrAttachVolumes"
	Name      string `json:"name"` // the method's name: "mountOrAttachVolumes"
	File      string `json:"file"`
	Line      int    `json:"line"`
	End       int    `json:"end"`
	Text      string `json:"-"`
	Direction string `json:"direction,omitempty"`
	Guard     string `json:"guard,omitempty"`
}

// UnitDiff is one unit between two tags. Key is the phase's name at the
// newer tag (at the older when it went), or VolumeEntry.
type UnitDiff struct {
	Key    string `json:"key"`
	From   *Unit  `json:"from,omitempty"`
	To     *Unit  `json:"to,omitempty"`
	Status Status `json:"status"`
	// Moved: its file differs; Renamed: its name differs (and how it was
	// matched: "alias" or "body").
	Moved     bool   `json:"moved,omitempty"`
	Renamed   bool   `json:"renamed,omitempty"`
	MatchedBy string `json:"matched_by,omitempty"`
	// Changed lists what differs: "file", "name", "direction", "guard", "body".
	Changed []string `json:"changed,omitempty"`
}

// VolumeDiff is the second reading at two tags.
type VolumeDiff struct {
	From  string     `json:"from"`
	To    string     `json:"to"`
	Units []UnitDiff `json:"units"` // the entry, then the phases in the newer pass's order, then those gone
}

// Unit finds the unit diff of key.
func (d *VolumeDiff) Unit(key string) (*UnitDiff, bool) {
	for i := range d.Units {
		if d.Units[i].Key == key {
			return &d.Units[i], true
		}
	}
	return nil, false
}

func entryUnit(r *volume.Reading) *Unit {
	e := r.Entry
	return &Unit{Func: e.Func, Name: e.Func, File: e.File, Line: e.Line, End: e.End, Text: e.Text, Guard: e.Gate}
}

func partUnit(p volume.Part) *Unit {
	return &Unit{Func: p.Func, Name: p.Key, File: p.File, Line: p.Line, End: p.End, Text: p.Text, Direction: p.Direction, Guard: p.Guard}
}

// CompareVolume compares the second reading at a and b; older maps a
// phase's older names to its name at recent tags.
func CompareVolume(a, b *volume.Reading, older map[string]string) *VolumeDiff {
	d := &VolumeDiff{From: a.Tag, To: b.Tag}
	d.Units = append(d.Units, unitDiff(VolumeEntry, entryUnit(a), entryUnit(b), ""))
	stable := func(name string) string {
		if s, ok := older[name]; ok {
			return s
		}
		return name
	}
	usedA := make([]bool, len(a.Parts))
	var unmatched []int // b's parts with no match by name
	for j, pb := range b.Parts {
		i := slices.IndexFunc(a.Parts, func(pa volume.Part) bool { return pa.Key == pb.Key })
		how := ""
		if i < 0 {
			i = slices.IndexFunc(a.Parts, func(pa volume.Part) bool { return stable(pa.Key) == stable(pb.Key) })
			how = "alias"
		}
		if i < 0 || usedA[i] {
			unmatched = append(unmatched, j)
			d.Units = append(d.Units, UnitDiff{})
			continue
		}
		usedA[i] = true
		d.Units = append(d.Units, unitDiff(pb.Key, partUnit(a.Parts[i]), partUnit(pb), how))
	}
	for _, j := range unmatched {
		pb := b.Parts[j]
		i := bodyMatch(a.Parts, usedA, pb, j)
		if i < 0 {
			d.Units[1+j] = unitDiff(pb.Key, nil, partUnit(pb), "")
			continue
		}
		usedA[i] = true
		d.Units[1+j] = unitDiff(pb.Key, partUnit(a.Parts[i]), partUnit(pb), "body")
	}
	for i, pa := range a.Parts {
		if !usedA[i] {
			d.Units = append(d.Units, unitDiff(pa.Key, partUnit(pa), nil, ""))
		}
	}
	return d
}

// bodyMatch is the unused phase of a at b's place in the pass (j, give or
// take one) whose lines are mostly b's, -1 when none is.
func bodyMatch(a []volume.Part, used []bool, b volume.Part, j int) int {
	for _, i := range []int{j, j - 1, j + 1} {
		if i < 0 || i >= len(a) || used[i] {
			continue
		}
		if similar(a[i].Text, b.Text) {
			return i
		}
	}
	return -1
}

// similar: at least half of the longer text's lines are the other's.
func similar(a, b string) bool {
	ops := Lines(a, b)
	same, n, m := 0, 0, 0
	for _, op := range ops {
		switch op.Kind {
		case '=':
			same++
			n++
			m++
		case '-':
			n++
		default:
			m++
		}
	}
	return max(n, m) > 0 && 2*same >= max(n, m)
}

func unitDiff(key string, a, b *Unit, how string) UnitDiff {
	u := UnitDiff{Key: key, From: a, To: b}
	switch {
	case a == nil:
		u.Status = Added
		return u
	case b == nil:
		u.Status = Removed
		return u
	}
	if a.File != b.File {
		u.Moved = true
		u.Changed = append(u.Changed, "file")
	}
	if a.Name != b.Name {
		u.Renamed, u.MatchedBy = true, how
		if how == "" {
			u.MatchedBy = "position"
		}
		u.Changed = append(u.Changed, "name")
	}
	if a.Direction != b.Direction {
		u.Changed = append(u.Changed, "direction")
	}
	if a.Guard != b.Guard {
		u.Changed = append(u.Changed, "guard")
	}
	if !sameText(a.Text, b.Text) {
		u.Changed = append(u.Changed, "body")
	}
	u.Status = Same
	if len(u.Changed) > 0 {
		u.Status = Changed
	}
	return u
}

// sameText: the texts' lines are the same, white space aside.
func sameText(a, b string) bool {
	for _, op := range Lines(a, b) {
		if op.Kind != '=' {
			return false
		}
	}
	return true
}

// VolumeStep is one unit at one tag of a VolumeHistory.
type VolumeStep struct {
	Tag  string    `json:"tag"`
	Unit *Unit     `json:"unit,omitempty"` // nil: not in the pass at this tag
	Diff *UnitDiff `json:"diff,omitempty"` // against the tag before (nil for the first)
}

// VolumeHistory is one unit (the entry, or a phase by its name at the
// newest tag or any older one) across readings, oldest first.
type VolumeHistory struct {
	Key  string       `json:"key"`
	Tags []VolumeStep `json:"tags"`
}

// NewVolumeHistory follows key through readings (oldest first), through
// its renames and moves as CompareVolume matches them.
func NewVolumeHistory(key string, readings []*volume.Reading, older map[string]string) *VolumeHistory {
	h := &VolumeHistory{Key: key}
	cur := key // the unit's name at the tag being looked at
	// Walk newest first, so a rename carries the name back in time.
	steps := make([]VolumeStep, len(readings))
	for i := len(readings) - 1; i >= 0; i-- {
		r := readings[i]
		steps[i] = VolumeStep{Tag: r.Tag, Unit: unitAt(r, cur, older)}
		if steps[i].Unit != nil && key != VolumeEntry {
			cur = steps[i].Unit.Name
		}
		if i == 0 {
			break
		}
		d := CompareVolume(readings[i-1], r, older)
		if u := matchIn(d, cur, steps[i].Unit); u != nil {
			steps[i].Diff = u
			if u.From != nil && key != VolumeEntry {
				cur = u.From.Name
			}
		}
	}
	h.Tags = steps
	return h
}

// unitAt is the entry, or the phase named name (or whose older name or
// newer name it is), at r.
func unitAt(r *volume.Reading, name string, older map[string]string) *Unit {
	if name == VolumeEntry {
		return entryUnit(r)
	}
	for _, p := range r.Parts {
		if p.Key == name || older[p.Key] == name || older[name] == p.Key {
			return partUnit(p)
		}
	}
	return nil
}

// matchIn is the unit of d the unit u (at d.To) is, or the one that went
// when u is nil and was called name.
func matchIn(d *VolumeDiff, name string, u *Unit) *UnitDiff {
	for i := range d.Units {
		x := &d.Units[i]
		if name == VolumeEntry && x.Key == VolumeEntry {
			return x
		}
		if u != nil && x.To != nil && x.To.Name == u.Name && x.Key != VolumeEntry {
			return x
		}
		if u == nil && x.From != nil && x.From.Name == name && x.To == nil {
			return x
		}
	}
	return nil
}
