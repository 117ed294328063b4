package rooms

import (
	"errors"
	"testing"
)

// A class's rooms take slots of the class's budget, not of their owner
// address's: one address opens more than PerOwner rooms of a class, the
// class no more than its budget, and the address's own cap is left as it
// was. Ended rooms stay rooms of the class (their hand-ins are wanted)
// and hold their slot.
func TestClassRooms(t *testing.T) {
	b := newBroker(t, "")
	c := newClock()
	s := openStore(t, b, Config{PerOwner: 2, MaxRooms: 10, Now: c.Now})
	class, _ := NewSecret()
	other, _ := NewSecret()

	var ids []string
	for i := range 4 {
		r, key, err := s.CreateInClass("v1.31.0", "10.0.0.1", class, 4)
		if err != nil {
			t.Fatalf("room %d of the class: %v", i+1, err)
		}
		if r.Class != class || !s.IsDriver(r.ID, key) {
			t.Fatalf("room %d: class %q, driver key refused", i+1, r.Class)
		}
		ids = append(ids, r.ID)
		c.Add(1) // distinct creation times: OfClass is oldest first
	}
	if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", class, 4); !errors.Is(err, ErrClassFull) {
		t.Errorf("a 5th room of a class of 4: %v, want ErrClassFull", err)
	}
	// Another class, the same address: its own budget.
	if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", other, 1); err != nil {
		t.Errorf("a room of another class: %v", err)
	}
	// The address's own cap, outside any class, is untouched.
	for i := range 2 {
		if _, _, err := s.Create("v1.31.0", "10.0.0.1"); err != nil {
			t.Fatalf("room %d of the address: %v", i+1, err)
		}
	}
	if _, _, err := s.Create("v1.31.0", "10.0.0.1"); !errors.Is(err, ErrOwnerFull) {
		t.Errorf("a 3rd room of an address of 2: %v, want ErrOwnerFull", err)
	}
	if _, _, err := s.CreateInClass("v1.31.0", "", "not an id", 3); err == nil {
		t.Error("a class id that is not an id was taken")
	}

	got := s.OfClass(class)
	if len(got) != 4 {
		t.Fatalf("OfClass: %d rooms, want 4", len(got))
	}
	for i, r := range got {
		if r.ID != ids[i] {
			t.Errorf("OfClass[%d] = %s, want %s (oldest first)", i, r.ID, ids[i])
		}
	}
	if n := len(s.OfClass(other)); n != 1 {
		t.Errorf("the other class has %d rooms, want 1", n)
	}
	if n := len(s.OfClass("")); n != 0 {
		t.Errorf("OfClass(\"\") lists %d rooms, want none", n)
	}

	r, err := s.End(ids[0])
	if err != nil || !r.Ended {
		t.Fatalf("End: %+v %v", r, err)
	}
	if g, _ := s.Get(ids[0]); !g.Ended {
		t.Error("the ended room reads as not ended")
	}
	if n := len(s.OfClass(class)); n != 4 {
		t.Errorf("after one ended the class lists %d rooms, want 4 still", n)
	}
	if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", class, 4); !errors.Is(err, ErrClassFull) {
		t.Errorf("an ended room let its slot go: %v", err)
	}

	// A room of the class that expires lets its slot go.
	c.Add(DefaultUnjoinedTTL + 2)
	if _, err := s.Sweep(); err != nil {
		t.Fatal(err)
	}
	if n := len(s.OfClass(class)); n != 0 {
		t.Errorf("after they expired the class lists %d rooms", n)
	}
	if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", class, 4); err != nil {
		t.Errorf("a room of the class after its rooms expired: %v", err)
	}
}
