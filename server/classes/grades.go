package classes

// Grades out of the site, in a gradebook's shapes: a CSV with one row per
// student, and a room's results in Gradescope's autograder format
// (https://gradescope-autograders.readthedocs.io/en/latest/specs/).
//
// An item scores 1 for an answer the checker has nothing against
// (confirmed, or written where nothing can be checked), 0.5 for one it
// warns about, 0 for none; a lab check 1 when the journal proves it.
// The instructor reads the answers themselves: these are the checks'
// word, a start for a grade, not one.

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/server/labcheck"
)

// Score is an item's state as a score.
func Score(state string) float64 {
	switch state {
	case StateConfirmed, StateWritten:
		return 1
	case StateWarned:
		return 0.5
	}
	return 0
}

// labTests are the exercise's checks, in the order the course writes them.
var labTests = []struct {
	key, name string
	of        func(labcheck.Result) labcheck.Check
}{
	{"added", "probe-me added", func(r labcheck.Result) labcheck.Check { return r.Added }},
	{"liveness_failed", "its liveness probe failed", func(r labcheck.Result) labcheck.Check { return r.LivenessFailed }},
	{"deleted", "deleted at teardown", func(r labcheck.Result) labcheck.Check { return r.Deleted }},
	{"verbosity", "-v=4 or more", func(r labcheck.Result) labcheck.Check { return r.Verbosity }},
}

// spreadsheetSafe defuses a cell a spreadsheet would run as a formula:
// text a student typed (a name) goes out as text.
func spreadsheetSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func formatScore(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// gradesCSV is the class's grades: a header, then one row per student of
// each room (every name given in it or written under in it; a room with
// none has one row, named ""), then each name on the roster that is in
// no room's.
func gradesCSV(p Progress, roster []Student) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := []string{"student", "room", "room_id"}
	for _, it := range p.Items {
		head = append(head, it.ID)
	}
	for _, t := range labTests {
		head = append(head, "lab_"+t.key)
	}
	head = append(head, "score", "max_score", "handed_in", "late")
	w.Write(head)
	maxScore := formatScore(float64(len(p.Items) + len(labTests)))
	named := map[string]bool{}
	for _, rp := range p.Rooms {
		row := []string{fmt.Sprintf("Room %d", rp.N), rp.ID}
		score := 0.0
		for _, it := range p.Items {
			s := Score(rp.Cells[it.ID])
			score += s
			row = append(row, formatScore(s))
		}
		for _, t := range labTests {
			s := 0.0
			if t.of(rp.Checks).OK {
				s = 1
			}
			score += s
			row = append(row, formatScore(s))
		}
		handed := ""
		if rp.HandedIn != nil {
			handed = rp.HandedIn.UTC().Format(time.RFC3339)
		}
		row = append(row, formatScore(score), maxScore, handed, strconv.FormatBool(rp.Late))
		students := rp.Students
		if len(students) == 0 {
			students = []string{""}
		}
		for _, s := range students {
			named[s] = true
			w.Write(append([]string{spreadsheetSafe(s)}, row...))
		}
	}
	empty := make([]string, 0, len(head))
	empty = append(empty, "", "")
	for range len(p.Items) + len(labTests) {
		empty = append(empty, "0")
	}
	empty = append(empty, "0", maxScore, "", "false")
	for _, s := range roster {
		if !named[s.Name] {
			named[s.Name] = true
			w.Write(append([]string{spreadsheetSafe(s.Name)}, empty...))
		}
	}
	w.Flush()
	return b.Bytes()
}

// GradesCSV is GET /classes/{id}/grades.csv.
func (h *Handlers) GradesCSV() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructorAny(w, r)
		if !ok {
			return
		}
		if _, loaded := h.cfg.Deps.sheetOf(c.Reading, c.Tag); !loaded {
			h.cfg.Site.LoadTag(c.Tag)
			w.Header().Set("Retry-After", "5")
			jsonError(w, http.StatusServiceUnavailable, errNoReading.Error())
			return
		}
		roster, err := h.cfg.Store.Students(r.Context(), c.ID)
		if err != nil {
			jsonError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		body := gradesCSV(h.cfg.Deps.progress(r.Context(), c), roster)
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", "syncloop-grades-"+strings.ToLower(c.ID[:6])+".csv"))
		w.Write(body)
	})
}

// GradescopeTest is one test of Gradescope's results.json.
type GradescopeTest struct {
	Name       string  `json:"name"`
	Score      float64 `json:"score"`
	MaxScore   float64 `json:"max_score"`
	Status     string  `json:"status"` // "passed" or "failed"
	Output     string  `json:"output"`
	Visibility string  `json:"visibility"` // "visible", "hidden", "after_due_date", "after_published"
}

// GradescopeResults is Gradescope's results.json, the fields this site
// fills in.
type GradescopeResults struct {
	Score            float64          `json:"score"`
	Output           string           `json:"output"`
	Visibility       string           `json:"visibility"`
	StdoutVisibility string           `json:"stdout_visibility"`
	Tests            []GradescopeTest `json:"tests"`
}

// results is room rp of class p in Gradescope's format. The worksheet's
// tests quote the room's answers and the checker's reasons (which can
// tell a right file:line): students see them after the due date. The lab
// checks quote the journal's line and cursor, and are visible.
func results(p Progress, rp RoomProgress) GradescopeResults {
	out := GradescopeResults{Visibility: "visible", StdoutVisibility: "hidden", Tests: []GradescopeTest{}}
	for _, it := range p.Items {
		state := cmp.Or(rp.Cells[it.ID], StateEmpty)
		t := GradescopeTest{Name: it.Label, Score: Score(state), MaxScore: 1, Status: "failed", Visibility: "after_due_date"}
		if t.Score == 1 {
			t.Status = "passed"
		}
		t.Output = state
		if by := rp.By[it.ID]; by != "" {
			t.Output += " by " + by
		}
		for _, w := range rp.Warnings[it.ID] {
			t.Output += "\n⚠ " + w
		}
		out.Tests = append(out.Tests, t)
		out.Score += t.Score
	}
	for _, lt := range labTests {
		ch := lt.of(rp.Checks)
		t := GradescopeTest{Name: "lab: " + lt.name, MaxScore: 1, Status: "failed", Output: ch.Text, Visibility: "visible"}
		if ch.OK {
			t.Score, t.Status = 1, "passed"
		}
		if e := ch.At; e != nil {
			t.Output += "\n" + e.Line + fmt.Sprintf("\n(feed line %d", e.Seq)
			if e.Time != nil {
				t.Output += " at " + e.Time.UTC().Format(time.RFC3339Nano)
			}
			if e.Cursor != "" {
				t.Output += ", journald cursor " + e.Cursor
			}
			t.Output += ")"
		}
		out.Tests = append(out.Tests, t)
		out.Score += t.Score
	}
	out.Output = fmt.Sprintf("Room %d of the class “%s”: %d/%d written, %d confirmed, %d with a warning; lab checks %d/4 (pod %s).",
		rp.N, p.Class.Name, rp.Written, rp.Expected, rp.Confirmed, rp.Warned, rp.Checks.Done(), rp.Checks.Pod)
	if len(rp.Students) > 0 {
		out.Output += " Readers: " + strings.Join(rp.Students, ", ") + "."
	}
	out.Output += handedInText(rp)
	return out
}

// Results is GET /classes/{id}/rooms/{room}/results.json.
func (h *Handlers) Results() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructorAny(w, r)
		if !ok {
			return
		}
		room, n, ok := h.roomOf(w, c, chi.URLParam(r, "room"))
		if !ok {
			return
		}
		sh, loaded := h.cfg.Deps.sheetOf(c.Reading, c.Tag)
		if !loaded {
			h.cfg.Site.LoadTag(c.Tag)
			w.Header().Set("Retry-After", "5")
			jsonError(w, http.StatusServiceUnavailable, errNoReading.Error())
			return
		}
		p := Progress{Class: classJSON(c), Items: sh.items}
		rp := h.cfg.Deps.roomProgress(r.Context(), c, n, room, time.Now())
		writeJSON(w, http.StatusOK, results(p, rp))
	})
}
