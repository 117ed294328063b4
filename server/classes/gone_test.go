package classes

import (
	"testing"
	"time"

	"github.com/syncloop/syncloop/server/rooms"
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

// An ended room's last activity is its last use before it ended, not the
// end; one ended before that was kept says its creation; an open room
// its LastActive.
func TestLastActivity(t *testing.T) {
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    rooms.Room
		want time.Time
	}{
		{"open", rooms.Room{Created: at, LastActive: at.Add(time.Hour)}, at.Add(time.Hour)},
		{"ended", rooms.Room{Created: at, LastActive: at.Add(3 * time.Hour), Ended: true, ActiveAtEnd: at.Add(time.Hour)}, at.Add(time.Hour)},
		{"ended, an older record", rooms.Room{Created: at, LastActive: at.Add(3 * time.Hour), Ended: true}, at},
	} {
		if got := lastActivity(tc.r); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
