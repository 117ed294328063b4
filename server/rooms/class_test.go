package rooms

import (
	"errors"
	"fmt"
	"testing"
)

// A class's rooms take slots of the class's budget, not of their owner
// address's: one address opens more than PerOwner rooms of a class, the
// class no more than its budget, and the address's own cap is left as it
// was. Ended rooms stay rooms of the class (their hand-ins are wanted)
// but let their slot go at once.
func TestClassRooms(t *testing.T) {
	b := newBroker(t, "")
	c := newClock()
	s := openStore(t, b, Config{PerOwner: 2, MaxRooms: 10, Now: c.Now})
	class, _ := NewSecret()
	other, _ := NewSecret()

	var ids []string
	for i := range 4 {
		r, key, err := s.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: class, Budget: 4})
		if err != nil {
			t.Fatalf("room %d of the class: %v", i+1, err)
		}
		if r.Class != class || !s.IsDriver(r.ID, key) {
			t.Fatalf("room %d: class %q, driver key refused", i+1, r.Class)
		}
		ids = append(ids, r.ID)
		c.Add(1) // distinct creation times: OfClass is oldest first
	}
	if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: class, Budget: 4}); !errors.Is(err, ErrClassFull) {
		t.Errorf("a 5th room of a class of 4: %v, want ErrClassFull", err)
	}
	// Another class, the same address: its own budget.
	if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: other, Budget: 1}); err != nil {
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
	if _, _, err := s.CreateInClass("v1.31.0", "", ClassPlace{Class: "not an id", Budget: 3}); err == nil {
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
	if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: class, Budget: 4}); err != nil {
		t.Errorf("an ended room kept its slot: %v", err)
	}
	if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: class, Budget: 4}); !errors.Is(err, ErrClassFull) {
		t.Errorf("a 5th open room of a class of 4: %v, want ErrClassFull", err)
	}

	// A room of the class that expires lets its slot go.
	c.Add(DefaultUnjoinedTTL + 2)
	if _, err := s.Sweep(); err != nil {
		t.Fatal(err)
	}
	if n := len(s.OfClass(class)); n != 0 {
		t.Errorf("after they expired the class lists %d rooms", n)
	}
	if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: class, Budget: 4}); err != nil {
		t.Errorf("a room of the class after its rooms expired: %v", err)
	}
}

// The caps a class's room counts against besides its budget: classes
// leave a reserve of MaxRooms to rooms of no class; all the classes of
// one creator hold their allowance at most; one student holds PerStudent
// open rooms; and a room ended gives every place back at once, MaxRooms'
// included.
func TestClassPlaces(t *testing.T) {
	b := newBroker(t, "")
	s := openStore(t, b, Config{PerOwner: 2, MaxRooms: 12})
	id := func() string { v, _ := NewSecret(); return v }
	a, a2, big := id(), id(), id()

	// One creator, two classes of 5: 6 rooms in all, their allowance.
	var held []string
	for i := range 7 {
		class := a
		if i%2 == 1 {
			class = a2
		}
		r, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: class, Budget: 5, Creator: "anon-1", Allowance: 6})
		if i == 6 {
			if !errors.Is(err, ErrCreatorFull) {
				t.Errorf("a 7th room of a creator allowed 6: %v, want ErrCreatorFull", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("room %d of the creator: %v", i+1, err)
		}
		held = append(held, r.ID)
	}
	// A class of a large allowance: the reserve (12/4 = 3, at least 4)
	// stops it at 12-4 = 8 class rooms in all.
	n := 0
	for range 5 {
		if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.2", ClassPlace{Class: big, Budget: 12}); err != nil {
			if !errors.Is(err, ErrFull) {
				t.Fatalf("past the reserve: %v, want ErrFull", err)
			}
			break
		}
		n++
	}
	if n != 2 {
		t.Errorf("the second class started %d rooms, want 2 (8 class rooms, 6 held)", n)
	}
	// The reserve is left to rooms of no class.
	for i := range 4 {
		owner := fmt.Sprintf("10.0.1.%d", i)
		if _, _, err := s.Create("v1.31.0", owner); err != nil {
			t.Fatalf("room %d of the reserve: %v", i+1, err)
		}
	}
	if _, _, err := s.Create("v1.31.0", "10.0.2.1"); !errors.Is(err, ErrFull) {
		t.Errorf("a 13th room: %v, want ErrFull", err)
	}
	// Ending a room gives its places back at once: MaxRooms, the class's,
	// the creator's.
	if _, err := s.End(held[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: a, Budget: 5, Creator: "anon-1", Allowance: 6}); err != nil {
		t.Errorf("a room in the place of one ended: %v", err)
	}

	// One student, two open rooms of a class.
	c := id()
	st := id()
	s2 := openStore(t, newBroker(t, ""), Config{MaxRooms: 20})
	var mine []string
	for i := range 3 {
		r, _, err := s2.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: c, Budget: 10, Student: st, PerStudent: 2})
		if i == 2 {
			if !errors.Is(err, ErrStudentFull) {
				t.Errorf("a student's 3rd room: %v, want ErrStudentFull", err)
			}
			break
		}
		if err != nil || r.Student != st {
			t.Fatalf("student's room %d: %v (student %q)", i+1, err, r.Student)
		}
		mine = append(mine, r.ID)
	}
	if _, _, err := s2.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: c, Budget: 10, Student: id(), PerStudent: 2}); err != nil {
		t.Errorf("another student's room: %v", err)
	}
	if _, err := s2.End(mine[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.CreateInClass("v1.31.0", "10.0.0.1", ClassPlace{Class: c, Budget: 10, Student: st, PerStudent: 2}); err != nil {
		t.Errorf("the student's room after one of theirs ended: %v", err)
	}
}
