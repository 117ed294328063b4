package rooms

import (
	"testing"
	"time"
)

// Ending a room keeps when it was last used before (ActiveAtEnd), touches
// not yet written included: the end, and readers left on its page after,
// move LastActive but are not its activity. Ending it again keeps it.
func TestEndKeepsActiveAtEnd(t *testing.T) {
	c := newClock()
	s := openStore(t, newBroker(t, ""), Config{Now: c.Now})
	r, _, err := s.Create("v1.37.2", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkJoined(r.ID); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Minute)
	s.Touch(r.ID) // a reader's use, not yet written
	used := c.Now()
	c.Add(time.Minute)
	if r, err = s.End(r.ID); err != nil {
		t.Fatal(err)
	}
	if !r.ActiveAtEnd.Equal(used) || !r.LastActive.Equal(c.Now()) {
		t.Fatalf("ended: ActiveAtEnd %v, LastActive %v; want %v (the last use) and %v (the end)", r.ActiveAtEnd, r.LastActive, used, c.Now())
	}
	c.Add(time.Minute)
	s.Touch(r.ID)
	if r, err = s.End(r.ID); err != nil || !r.ActiveAtEnd.Equal(used) {
		t.Fatalf("ended again: ActiveAtEnd %v, %v; want %v kept", r.ActiveAtEnd, err, used)
	}
	if got, err := s.Get(r.ID); err != nil || !got.ActiveAtEnd.Equal(used) {
		t.Fatalf("read back: ActiveAtEnd %v, %v; want %v", got.ActiveAtEnd, err, used)
	}
}
