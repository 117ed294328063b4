package classes

// The class's progress as data: every room × every worksheet item, the
// pins per case, and the exercise's checks from each room's journal
// (package labcheck).
//
//	GET /classes/{id}/progress.json          (the instructor's key) Progress
//	GET /classes/{id}/grades.csv             one row per student (grades.go)
//	GET /classes/{id}/rooms/{room}/results.json  a room in Gradescope's
//	                                         autograder results format (grades.go)
//
// The key is the Authorization: Bearer KEY the other instructor routes
// take, or ?k=KEY (a gradebook's import or a script that cannot set a
// header; the address then holds the key, as the instructor link does).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/labcheck"
	"github.com/syncloop/syncloop/server/rooms"
)

// A worksheet item's state in a room.
const (
	StateEmpty     = "empty"     // no answer
	StateWritten   = "written"   // an answer the checker has nothing to say of
	StateWarned    = "warned"    // an answer the checker warns about
	StateConfirmed = "confirmed" // an answer the checker confirms, with no warning
)

// idleAfter is how long a room goes without activity before it is
// flagged idle.
const idleAfter = 10 * time.Minute

// Item is one item of the worksheet, a column of the instructor's grid.
type Item struct {
	ID    string `json:"id"`   // the note's id: case.config, writer.config, exercise.config, podworkers, set.desired, …
	Kind  string `json:"kind"` // case, writer, exercise, podworkers, set, sentence
	Case  string `json:"case,omitempty"`
	Label string `json:"label"`
}

// RoomProgress is one room of the class, a row of the grid.
type RoomProgress struct {
	ID  string `json:"id"`
	N   int    `json:"n"` // "Room N", oldest first, as the instructor's page numbers them
	Tag string `json:"tag"`
	// Readers are who is in it now; Students every name given in it or
	// written under in it (who hands it in).
	Readers  []string `json:"readers"`
	Students []string `json:"students"`
	Relay    bool     `json:"relay"`
	// KubeletVersion is what its journal reported ("" until it does).
	KubeletVersion string `json:"kubelet_version"`
	// Cells is each item's state; By who last wrote each answer; Warnings
	// the checker's reasons for each warned one.
	Cells     map[string]string   `json:"cells"`
	By        map[string]string   `json:"by"`
	Warnings  map[string][]string `json:"warnings"`
	Written   int                 `json:"written"` // items with an answer, warned and confirmed ones included
	Warned    int                 `json:"warned"`
	Confirmed int                 `json:"confirmed"`
	Expected  int                 `json:"expected"`
	// Pins is how many log lines the room pinned, per case.
	Pins map[string]int `json:"pins"`
	// Checks is the exercise checked on the room's journal.
	Checks labcheck.Result `json:"checks"`
	// Flags are what the instructor acts on: "no relay yet", "idle",
	// "-v below 4", "ended".
	Flags []string `json:"flags"`
	// HandedIn is when the room handed in (null until hand-in exists),
	// Late whether after the due time.
	HandedIn *time.Time `json:"handed_in"`
	Late     bool       `json:"late"`
	Ended    bool       `json:"ended"`
	Created  time.Time  `json:"created"`
	Updated  time.Time  `json:"updated"` // its last activity: a reader present, a note written
}

// Progress is what GET /classes/{id}/progress.json answers.
type Progress struct {
	Class ClassJSON      `json:"class"`
	Items []Item         `json:"items"`
	Rooms []RoomProgress `json:"rooms"`
}

// Items is the worksheet's items at r's tag, in the worksheet's order:
// each case's note, writer and exercise, pod_workers, the two sets, the
// sentence (annotations.Expected). None before the Reading is loaded.
func Items(r *extractor.Reading) []Item {
	out := []Item{}
	if r == nil {
		return out
	}
	for _, id := range annotations.Expected(r) {
		kind, key, _ := strings.Cut(id, ".")
		it := Item{ID: id, Kind: kind}
		switch kind {
		case "case":
			it.Case, it.Label = key, key+": note"
		case "writer":
			it.Case, it.Label = key, key+": writer"
		case "exercise":
			it.Case, it.Label = key, key+": exercise"
		case "podworkers":
			it.Label = "pod_workers"
		case "set":
			it.Label = key + " set"
		default:
			it.Label = kind
		}
		out = append(out, it)
	}
	return out
}

// ItemState is an answer's state as the checker at r's tag sees it, and
// its warnings: empty, written (nothing to check, or nothing checked),
// warned (a warning), confirmed (at least one "ok" and no warning).
func ItemState(r *extractor.Reading, n annotations.Note) (string, []string) {
	if strings.TrimSpace(n.Text) == "" {
		return StateEmpty, nil
	}
	if r == nil {
		return StateWritten, nil
	}
	return checksState(annotations.CheckNote(r, n.ID, n.Text))
}

// checksState is the state the checker's checks of an answer give it.
func checksState(checks []annotations.Check) (string, []string) {
	ok := false
	var warn []string
	for _, c := range checks {
		switch c.Level {
		case "ok":
			ok = true
		default:
			warn = append(warn, c.Text)
		}
	}
	switch {
	case len(warn) > 0:
		return StateWarned, warn
	case ok:
		return StateConfirmed, nil
	}
	return StateWritten, nil
}

// pinCase is the case a pin's text names ("case: liveness").
func pinCase(text string) string {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "case: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// progress is class c's grid.
func (d Deps) progress(ctx context.Context, c Class) Progress {
	p := Progress{Class: classJSON(c), Items: []Item{}, Rooms: []RoomProgress{}}
	if sh, ok := d.sheetOf(c.Reading, c.Tag); ok {
		p.Items = sh.items
	}
	now := time.Now()
	for i, r := range d.Rooms.Store().OfClass(c.ID) {
		p.Rooms = append(p.Rooms, d.roomProgress(ctx, c, i+1, r, now))
	}
	return p
}

// roomProgress is room r, the class's n-th, as the grid shows it.
func (d Deps) roomProgress(ctx context.Context, c Class, n int, r rooms.Room, now time.Time) RoomProgress {
	rp := RoomProgress{ID: r.ID, N: n, Tag: r.Tag, Readers: []string{}, Students: slices.Clone(r.Readers),
		Cells: map[string]string{}, By: map[string]string{}, Warnings: map[string][]string{}, Pins: map[string]int{},
		Flags: []string{}, Ended: r.Ended, Created: r.Created, Updated: lastActivity(r)}
	for _, x := range d.Rooms.Present(r.ID) {
		rp.Readers = append(rp.Readers, x.Name)
	}
	feed := r.Feed()
	rp.Relay = d.Relayed(feed) && !r.Ended
	rp.KubeletVersion = d.KubeletVersion(feed)
	reading := d.Reading(r.Tag)
	want := map[string]bool{}
	sh, loaded := d.sheetOf(r.Reading, r.Tag)
	if loaded {
		ids := sh.ids
		rp.Expected = len(ids)
		for _, id := range ids {
			want[id], rp.Cells[id] = true, StateEmpty
		}
	}
	for _, note := range d.Notes(r.ID) {
		if note.At.After(rp.Updated) {
			rp.Updated = note.At
		}
		if a := strings.TrimSpace(note.Author); a != "" && !slices.Contains(rp.Students, a) {
			rp.Students = append(rp.Students, a)
		}
		if annotations.Kind(note.ID) == "pin" && strings.TrimSpace(note.Text) != "" {
			rp.Pins[cmp.Or(pinCase(note.Text), "none")]++
			continue
		}
		if !want[note.ID] {
			continue
		}
		state, warn := sh.state(note)
		rp.Cells[note.ID] = state
		if state == StateEmpty {
			continue
		}
		rp.By[note.ID] = note.Author
		rp.Written++
		switch state {
		case StateWarned:
			rp.Warned++
			rp.Warnings[note.ID] = warn
		case StateConfirmed:
			rp.Confirmed++
		}
	}
	if d.LabCheck != nil {
		rp.Checks = d.LabCheck(ctx, feed, r.Tag, cmp.Or(c.Pod, labcheck.DefaultPod))
	} else {
		rp.Checks = labcheck.Journal(c.Pod, feed, reading, nil)
	}
	rp.Flags = flags(rp, d.Fired != nil && len(d.Fired.Fired(feed)) > 0, now)
	rp.HandedIn, rp.Late = d.handedIn(ctx, c, r.ID)
	return rp
}

// flags are what the instructor acts on in a room.
func flags(rp RoomProgress, journal bool, now time.Time) []string {
	out := []string{}
	if rp.Ended {
		return append(out, "ended")
	}
	if !rp.Relay && !journal {
		out = append(out, "no relay yet")
	}
	if now.Sub(rp.Updated) > idleAfter {
		out = append(out, "idle")
	}
	if rp.Checks.BelowV4() {
		out = append(out, "-v below 4")
	}
	return out
}

// podRE is a pod as the class may name it: a DNS-1123 name, with an
// optional namespace before a slash.
var podRE = regexp.MustCompile(`^(?:[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?/)?[a-z0-9](?:[-.a-z0-9]{0,251}[a-z0-9])?$`)

// CleanPod is the exercise's pod as a class's settings name it: "" for
// the default (probe-me), else a pod's name, as kubectl takes it,
// optionally after its namespace and a slash.
func CleanPod(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == labcheck.DefaultPod {
		return "", nil
	}
	if !podRE.MatchString(s) {
		return "", fmt.Errorf("pod %q: a pod's name (lower-case letters, digits, '-' and '.'), optionally after its namespace and a '/', e.g. probe-me or default/probe-me", s)
	}
	return s, nil
}

// instructorAny is instructor, with the key also taken from ?k=.
func (h *Handlers) instructorAny(w http.ResponseWriter, r *http.Request) (Class, bool) {
	if k := r.URL.Query().Get("k"); k != "" && r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+k)
	}
	return h.instructor(w, r)
}

// ProgressJSON is GET /classes/{id}/progress.json.
func (h *Handlers) ProgressJSON() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructorAny(w, r)
		if !ok {
			return
		}
		h.watched(r.Context(), c)
		if h.cfg.Deps.Reading(c.Tag) == nil {
			h.cfg.Site.LoadTag(c.Tag)
		}
		writeJSON(w, http.StatusOK, h.cfg.Deps.progress(r.Context(), c))
	})
}

// roomOf is the room the URL names, of class c, and its number there;
// else it answers 404.
func (h *Handlers) roomOf(w http.ResponseWriter, c Class, id string) (rooms.Room, int, bool) {
	for i, r := range h.cfg.Deps.Rooms.Store().OfClass(c.ID) {
		if r.ID == id {
			return r, i + 1, true
		}
	}
	jsonError(w, http.StatusNotFound, "no such room in this class")
	return rooms.Room{}, 0, false
}

var errNoReading = errors.New("the class's source is still being fetched: try again in a moment")
