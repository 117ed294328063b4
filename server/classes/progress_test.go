package classes

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
)

func TestCleanPod(t *testing.T) {
	for in, want := range map[string]string{"": "", " probe-me ": "", "probe-demo": "probe-demo", "default/probe-me": "default/probe-me", "web-0.a": "web-0.a"} {
		if got, err := CleanPod(in); err != nil || got != want {
			t.Errorf("CleanPod(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"Probe", "a/b/c", "-x", "x-", "<b>", "a b", strings.Repeat("x", 254)} {
		if _, err := CleanPod(bad); err == nil {
			t.Errorf("CleanPod(%q) took it", bad)
		}
	}
}

// A student's name goes into grades.csv as text, never a formula.
func TestGradesCSVNames(t *testing.T) {
	p := Progress{Items: []Item{{ID: "sentence"}}, Rooms: []RoomProgress{{N: 1, ID: "r", Cells: map[string]string{"sentence": StateWarned}, Students: []string{"=HYPERLINK(\"x\")", "Ann, \"A\""}}}}
	rows, err := csv.NewReader(bytes.NewReader(gradesCSV(p, []Student{{Name: "Ann, \"A\""}, {Name: "+Zed"}}))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"student", "room", "room_id", "sentence", "lab_added", "lab_liveness_failed", "lab_deleted", "lab_verbosity", "score", "max_score", "handed_in", "late"},
		{"'=HYPERLINK(\"x\")", "Room 1", "r", "0.5", "0", "0", "0", "0", "0.5", "5", "", "false"},
		{"Ann, \"A\"", "Room 1", "r", "0.5", "0", "0", "0", "0", "0.5", "5", "", "false"},
		{"'+Zed", "", "", "0", "0", "0", "0", "0", "0", "5", "", "false"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("grades.csv:\n%q\nwant\n%q", rows, want)
	}
}
