package classes

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/labcheck"
	"github.com/syncloop/syncloop/server/rooms"
)

// FiredCounter says how many lines of each case a feed's journal fired:
// lines a journal delivered, never the demo's. The feeds' own record of
// what fired is one; server/ wires it.
type FiredCounter interface {
	Fired(feed string) map[string]int
}

// FiredFunc is a func as a FiredCounter.
type FiredFunc func(feed string) map[string]int

// Fired calls f.
func (f FiredFunc) Fired(feed string) map[string]int { return f(feed) }

// Deps is what a class asks of the rest of the server.
type Deps struct {
	Rooms *rooms.Service
	// Notes is a room's notes; Reading a tag's Reading once loaded (nil before).
	Notes   func(room string) []annotations.Note
	Reading func(tag string) *extractor.Reading
	// VolumeReading is a tag's second reading once loaded (nil before): a
	// room that reads it is checked against it (volume.go).
	VolumeReading func(tag string) *volume.Reading
	Fired         FiredCounter
	// KubeletVersion is the version a feed's journal reported; Relayed
	// whether a relay feeds it now.
	KubeletVersion func(feed string) string
	Relayed        func(feed string) bool
	// Line looks up a stored line of a feed's journal: the hand-ins'
	// pins are read again with it (feeds.Service.Line).
	Line annotations.LineFunc
	// LabCheck is the exercise checked on a feed's journal read at tag,
	// for pod (progress.go); nil: no checks.
	LabCheck func(ctx context.Context, feed, tag, pod string) labcheck.Result
	// handIns are the rooms' hand-ins (handin.go); NewHandlers sets it.
	handIns *Store
}

// overview is every room of class c as its instructor sees it, and its
// roster (the names given on the class page) placed in its rooms.
func (d Deps) overview(c Class, roster []Student) Overview {
	o := Overview{Class: classJSON(c), Rooms: []RoomRow{}}
	for _, r := range d.Rooms.Store().OfClass(c.ID) {
		row := RoomRow{ID: r.ID, Tag: r.Tag, Readers: []string{}, Authors: []string{}, Fired: map[string]int{}, Ended: r.Ended, Created: r.Created, Updated: lastActivity(r)}
		for _, p := range d.Rooms.Present(r.ID) {
			row.Readers = append(row.Readers, p.Name)
			if p.Driving {
				row.Driver = p.Name
			}
		}
		feed := r.Feed()
		row.Relay = d.Relayed(feed) && !r.Ended // an ended room's feed takes no relay
		row.KubeletVersion = d.KubeletVersion(feed)
		if d.Fired != nil {
			for k, n := range d.Fired.Fired(feed) {
				if n > 0 {
					row.Fired[k] = n
				}
			}
		}
		notes := d.Notes(r.ID)
		var last time.Time
		row.Written, row.Checked, row.Expected, last = d.roomProgress1(r, notes)
		for _, n := range notes {
			if a := strings.TrimSpace(n.Author); a != "" && !slices.Contains(row.Authors, a) {
				row.Authors = append(row.Authors, a)
			}
		}
		slices.Sort(row.Authors)
		if last.After(row.Updated) {
			row.Updated = last
		}
		o.Rooms = append(o.Rooms, row)
	}
	o.Students = placeStudents(o.Rooms, roster, time.Now())
	return o
}

// lastActivity is when room r was last used for real: for an ended room,
// when it was last used before it ended (its end, and readers left on its
// page, are not activity), else its LastActive. An ended room's record
// from before ActiveAtEnd was kept says its creation; its notes' times
// count on top (overview).
func lastActivity(r rooms.Room) time.Time {
	switch {
	case !r.Ended:
		return r.LastActive
	case !r.ActiveAtEnd.IsZero():
		return r.ActiveAtEnd
	}
	return r.Created
}

// placeStudents is the roster as the instructor reads it: each reader of
// each room by name, with the room; each name given on the class page and
// in no room now, with the rooms it wrote in. A name is matched by its
// text (a reader's name in a room is the one given on the class page):
// two students giving one name are told apart only by count. One in no
// room whose class page has not said hello for GoneAfter (at now) is Gone.
func placeStudents(rows []RoomRow, roster []Student, now time.Time) []StudentRow {
	out := []StudentRow{}
	wrote := map[string][]string{}
	for _, r := range rows {
		for _, a := range r.Authors {
			wrote[a] = append(wrote[a], r.ID)
		}
	}
	given := map[string][]Student{}
	for _, s := range roster {
		given[s.Name] = append(given[s.Name], s)
	}
	for _, r := range rows {
		for _, n := range r.Readers {
			row := StudentRow{Name: n, Room: r.ID, Driving: n == r.Driver, Wrote: wrote[n]}
			if g := given[n]; len(g) > 0 {
				row.Seen, given[n] = g[0].Seen, g[1:]
			}
			out = append(out, row)
		}
	}
	for _, g := range given {
		for _, s := range g {
			gone := !s.Seen.IsZero() && now.Sub(s.Seen) > GoneAfter
			out = append(out, StudentRow{Name: s.Name, Seen: s.Seen, Gone: gone, Wrote: wrote[s.Name]})
		}
	}
	for i := range out {
		if out[i].Wrote == nil {
			out[i].Wrote = []string{}
		}
	}
	slices.SortFunc(out, func(a, b StudentRow) int {
		return cmp.Or(strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), strings.Compare(a.Room, b.Room))
	})
	return out
}

// GoneAfter is how long a student in no room goes without their class
// page's hello (one a minute while it is on view) before the roster says
// they are gone: a closed tab, a phone put away.
const GoneAfter = 3 * time.Minute

// pairs is every room of class c as the students' page lists it.
func (d Deps) pairs(c Class) Pairs {
	ps := Pairs{Rooms: []Pair{}, Budget: c.Budget}
	for _, r := range d.Rooms.Store().OfClass(c.ID) {
		p := Pair{ID: r.ID, Tag: r.Tag, Readers: []string{}, Ended: r.Ended, Created: r.Created}
		for _, x := range d.Rooms.Present(r.ID) {
			p.Readers = append(p.Readers, x.Name)
			if x.Driving {
				p.Driver = x.Name
			}
		}
		ps.Rooms = append(ps.Rooms, p)
	}
	ps.Held = len(ps.Rooms)
	ps.Ended = !c.Ended.IsZero()
	return ps
}

func classJSON(c Class) ClassJSON {
	return ClassJSON{ID: c.ID, Name: c.Name, Tag: c.Tag, Reading: c.Reading, Budget: c.Budget, HideNotes: c.HideNotes, Pod: cmp.Or(c.Pod, labcheck.DefaultPod), Ended: c.Ended,
		Due: c.Due, Extensions: c.Extensions, Release: c.Release}
}

// progress counts a room's worksheet: the items the worksheet asks for
// (annotations.Expected) that have an answer, and those of them the
// checker confirms (at least one "ok" and no warning: a writer that
// resolves, a set at its file:line); and when a note was last written.
// Before the tag's Reading is loaded, nothing is expected or checked.
func progress(r *extractor.Reading, notes []annotations.Note) (written, checked, expected int, last time.Time) {
	if r == nil {
		return sheetProgress(sheet{}, false, notes)
	}
	return sheetProgress(readingSheet(r), true, notes)
}

// roomProgress1 is progress for room, by the worksheet of what it reads.
func (d Deps) roomProgress1(room rooms.Room, notes []annotations.Note) (written, checked, expected int, last time.Time) {
	sh, loaded := d.sheetOf(room.Reading, room.Tag)
	return sheetProgress(sh, loaded, notes)
}

// sheetProgress is progress by sh, known once loaded.
func sheetProgress(sh sheet, loaded bool, notes []annotations.Note) (written, checked, expected int, last time.Time) {
	var want map[string]bool
	if loaded {
		ids := sh.ids
		expected = len(ids)
		want = make(map[string]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
	}
	for _, n := range notes {
		if n.At.After(last) {
			last = n.At
		}
		if strings.TrimSpace(n.Text) == "" || !loaded || !want[n.ID] {
			continue
		}
		written++
		if state, _ := sh.state(n); state == StateConfirmed {
			checked++
		}
	}
	return written, checked, expected, last
}
