package rooms

import (
	"fmt"
	"testing"
	"time"
)

// TestRoomOver is the expiry rule alone: a room's age against the TTLs,
// at the edges, with no store and no clock but the one given.
func TestRoomOver(t *testing.T) {
	const ttl, unjoined = 24 * time.Hour, 10 * time.Minute
	made := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	room := func(neverJoined bool, lastUse time.Duration) Room {
		return Room{Created: made, LastActive: made.Add(lastUse), NeverJoined: neverJoined}
	}
	for _, c := range []struct {
		name string
		r    Room
		at   time.Duration // since made
		want bool
	}{
		{"joined, just made", room(false, 0), 0, false},
		{"joined, idle exactly the TTL", room(false, 0), ttl, false},
		{"joined, idle a moment past the TTL", room(false, 0), ttl + time.Nanosecond, true},
		{"joined, used an hour in, a TTL after its making", room(false, time.Hour), ttl + time.Minute, false},
		{"joined, used an hour in, a TTL after that use", room(false, time.Hour), time.Hour + ttl + time.Second, true},
		{"joined, past the unjoined TTL: that TTL is not its", room(false, 0), unjoined + time.Hour, false},
		{"never joined, exactly the unjoined TTL", room(true, 0), unjoined, false},
		{"never joined, a moment past the unjoined TTL", room(true, 0), unjoined + time.Nanosecond, true},
		{"never joined, its page opened a minute ago: opening is not joining", room(true, unjoined), unjoined + time.Minute, true},
		{"never joined, a day on", room(true, 0), ttl + time.Second, true},
		{"a clock behind the record (another replica's)", room(false, time.Hour), 0, false},
	} {
		if got := c.r.over(made.Add(c.at), ttl, unjoined); got != c.want {
			t.Errorf("%s: over = %v, want %v", c.name, got, c.want)
		}
	}
	// The shorter TTL of a room no one joined is only ever shorter.
	short := Room{Created: made, LastActive: made, NeverJoined: true}
	if !short.over(made.Add(2*time.Minute), time.Minute, unjoined) {
		t.Error("a room no one joined outlived the idle TTL, shorter than its own")
	}
}

// TestRoomKeepsName is the rule for the names a record keeps: each once,
// none empty, none once the room ended, and no more than maxReadersKept.
func TestRoomKeepsName(t *testing.T) {
	full := Room{}
	for i := range maxReadersKept {
		full.Readers = append(full.Readers, fmt.Sprintf("reader %d", i))
	}
	for _, c := range []struct {
		name string
		r    Room
		give string
		want bool
	}{
		{"a first name", Room{}, "Ann", true},
		{"a second name", Room{Readers: []string{"Ann"}}, "Bob", true},
		{"a name given again", Room{Readers: []string{"Ann", "Bob"}}, "Ann", false},
		{"a name differing in case is another", Room{Readers: []string{"Ann"}}, "ann", true},
		{"no name", Room{}, "", false},
		{"a name given in an ended room", Room{Ended: true, Readers: []string{"Ann"}}, "Teacher", false},
		{"a name past the cap", full, "one more", false},
		{"a name already kept, at the cap", full, "reader 3", false},
	} {
		if got := c.r.keepsName(c.give); got != c.want {
			t.Errorf("%s: keepsName(%q) = %v, want %v", c.name, c.give, got, c.want)
		}
	}
}
