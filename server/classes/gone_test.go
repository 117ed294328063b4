package classes

import (
	"testing"
	"time"
)

// A student in no room whose class page has not said hello for
// GoneAfter is gone; one seen within it, or in a room, is not.
func TestPlaceStudentsGone(t *testing.T) {
	now := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	rows := []RoomRow{{ID: "r1", Readers: []string{"Ann"}, Authors: []string{}}}
	roster := []Student{
		{ID: "a", Name: "Ann", Seen: now.Add(-time.Hour)},                  // in a room: there, whatever their class page says
		{ID: "b", Name: "Bob", Seen: now.Add(-time.Minute)},                // a beat missed at most
		{ID: "c", Name: "Cy", Seen: now.Add(-GoneAfter - time.Second)},     // the tab closed
		{ID: "d", Name: "Dee", Seen: now.Add(-GoneAfter + 10*time.Second)}, // not yet
	}
	want := map[string]bool{"Ann": false, "Bob": false, "Cy": true, "Dee": false}
	got := placeStudents(rows, roster, now)
	if len(got) != len(want) {
		t.Fatalf("placeStudents = %+v, want %d rows", got, len(want))
	}
	for _, s := range got {
		if s.Gone != want[s.Name] {
			t.Errorf("%s (room %q, seen %v ago): gone %v, want %v", s.Name, s.Room, now.Sub(s.Seen), s.Gone, want[s.Name])
		}
	}
	if GoneAfter < 2*time.Minute || GoneAfter > 5*time.Minute {
		t.Errorf("GoneAfter %v: want a few minutes, more than the class page's minute between hellos", GoneAfter)
	}
}
