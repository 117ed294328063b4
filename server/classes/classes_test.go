package classes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func openTestStore(t *testing.T, c *clock) *Store {
	t.Helper()
	b, err := broker.Open(context.Background(), broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	s, err := OpenStore(context.Background(), StoreConfig{JS: b.JS, Memory: true, TTL: time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)}
	s := openTestStore(t, c)
	cl, key, err := s.Create(ctx, Class{Name: "B", Tag: "v1.31.0"})
	if err != nil {
		t.Fatal(err)
	}
	if cl.Budget != DefaultBudget || cl.KeyHash == "" || strings.Contains(cl.KeyHash, key) {
		t.Errorf("created %+v", cl)
	}
	got, err := s.Get(ctx, cl.ID)
	if err != nil || got.Name != "B" || got.Tag != "v1.31.0" {
		t.Fatalf("Get: %+v %v", got, err)
	}
	if _, err := s.Instructor(ctx, cl.ID, key); err != nil {
		t.Errorf("the instructor key: %v", err)
	}
	for _, bad := range []string{"", cl.ID, key[:21] + "x", strings.ToUpper(key)} {
		if bad == key {
			continue
		}
		if _, err := s.Instructor(ctx, cl.ID, bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("key %q: %v, want ErrBadKey", bad, err)
		}
	}
	for _, id := range []string{"", "../x", "AAAAAAAAAAAAAAAAAAAAAA"} {
		if _, err := s.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q): %v, want ErrNotFound", id, err)
		}
	}

	// Settings: checked, applied by compare-and-set.
	n := 12
	hide := true
	up, err := s.Update(ctx, cl.ID, func(c *Class) error { return Settings{Budget: &n, HideNotes: &hide}.apply(c, 48) })
	if err != nil || up.Budget != 12 || !up.HideNotes || up.Name != "B" {
		t.Errorf("Update: %+v %v", up, err)
	}
	bad := 49
	if _, err := s.Update(ctx, cl.ID, func(c *Class) error { return Settings{Budget: &bad}.apply(c, 48) }); err == nil {
		t.Error("a budget over the server's cap was taken")
	}

	// A class lives TTL after it was last used; a touch renews it.
	c.add(50 * time.Minute)
	got, _ = s.Get(ctx, cl.ID)
	s.Touch(ctx, got)
	c.add(50 * time.Minute)
	if _, err := s.Get(ctx, cl.ID); err != nil {
		t.Errorf("a class touched 50 min ago: %v", err)
	}
	c.add(11 * time.Minute)
	if _, err := s.Get(ctx, cl.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("a class unused for its TTL: %v, want ErrNotFound", err)
	}
}

func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{"  Group   B ": "Group B", "": "", "<b>B</b>": "<b>B</b>", "a\u202eb": "ab", "Group\u00a0B\u200b": "Group B"} {
		if got, err := CleanName(in); err != nil || got != want {
			t.Errorf("CleanName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"a\x00b", strings.Repeat("x", 81)} {
		if _, err := CleanName(bad); err == nil {
			t.Errorf("CleanName(%q) took it", bad)
		}
	}
}

// progress counts what the worksheet asks for, and what the checker confirms.
func TestProgress(t *testing.T) {
	r := fixture.Reading(t)
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	notes := []annotations.Note{
		{ID: "sentence", Text: "What is wanted, made so.", At: at},
		{ID: "set.desired", Text: "DesiredStateOfWorld pkg/kubelet/volumemanager/cache/desired_state_of_world.go:45", At: at.Add(time.Minute)},
		{ID: "set.actual", Text: "somewhere.go:1", At: at},
		{ID: "case.pleg", Text: "  ", At: at},
		{ID: "comment.x", Text: "a comment is not a worksheet item", At: at.Add(2 * time.Minute)},
	}
	w, c, e, last := progress(r, notes)
	if w != 3 || c != 1 || e != len(annotations.Expected(r)) || !last.Equal(at.Add(2*time.Minute)) {
		t.Errorf("progress = %d written, %d checked, %d expected, last %v", w, c, e, last)
	}
	if w, c, e, _ := progress(nil, notes); w != 0 || c != 0 || e != 0 {
		t.Errorf("before the Reading loads: %d %d %d", w, c, e)
	}
}

// placeStudents puts each reader in their room, and each name given and in
// no room apart; a name given twice is two students.
func TestPlaceStudents(t *testing.T) {
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	rows := []RoomRow{
		{ID: "r1", Readers: []string{"Ann", "Bob"}, Driver: "Ann", Authors: []string{"Ann", "Cy"}},
		{ID: "r2", Readers: []string{"Eve"}, Authors: []string{}},
	}
	roster := []Student{{ID: "a", Name: "Ann", Seen: at}, {ID: "c", Name: "Cy", Seen: at}, {ID: "b1", Name: "Bob", Seen: at}, {ID: "b2", Name: "Bob", Seen: at.Add(time.Minute)}}
	got := placeStudents(rows, roster, at.Add(2*time.Minute))
	type row struct {
		name, room string
		driving    bool
		seen       bool
		wrote      string
	}
	var flat []row
	for _, s := range got {
		flat = append(flat, row{s.Name, s.Room, s.Driving, !s.Seen.IsZero(), strings.Join(s.Wrote, ",")})
	}
	want := []row{
		{"Ann", "r1", true, true, "r1"},
		{"Bob", "", false, true, ""}, // the second Bob, in no room
		{"Bob", "r1", false, true, ""},
		{"Cy", "", false, true, "r1"},
		{"Eve", "r2", false, false, ""}, // never gave a name on the class page
	}
	if len(flat) != len(want) {
		t.Fatalf("placeStudents = %+v, want %+v", flat, want)
	}
	for i := range want {
		if flat[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, flat[i], want[i])
		}
	}
	if got := placeStudents(nil, nil, at); got == nil || len(got) != 0 {
		t.Errorf("no rooms, no roster: %#v, want an empty list (JSON [])", got)
	}
}

// The roster: a name per browser, updated in place, listed by name, the
// classes apart; a new browser past MaxStudents is refused.
func TestStoreRoster(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)}
	s := openTestStore(t, c)
	a, _, _ := s.Create(ctx, Class{Name: "A"})
	b, _, _ := s.Create(ctx, Class{Name: "B"})
	sid := func(i int) string { return fmt.Sprintf("%022d", i) }
	for i, n := range []string{"Cy", "Ann", "Bob"} {
		if _, err := s.Hello(ctx, a.ID, sid(i), n); err != nil {
			t.Fatal(err)
		}
	}
	c.add(time.Minute)
	if _, err := s.Hello(ctx, a.ID, sid(0), "Cyril"); err != nil { // a name changed
		t.Fatal(err)
	}
	got, err := s.Students(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range got {
		names = append(names, st.Name+"@"+st.ID[len(st.ID)-1:])
	}
	if strings.Join(names, " ") != "Ann@1 Bob@2 Cyril@0" || !got[2].Seen.After(got[0].Seen) {
		t.Errorf("roster %v", names)
	}
	if other, _ := s.Students(ctx, b.ID); len(other) != 0 {
		t.Errorf("another class's roster: %v", other)
	}
	for i := 3; i < MaxStudents; i++ {
		if _, err := s.Hello(ctx, a.ID, sid(i), fmt.Sprintf("S%d", i)); err != nil {
			t.Fatalf("student %d: %v", i, err)
		}
	}
	if _, err := s.Hello(ctx, a.ID, sid(MaxStudents), "One too many"); !errors.Is(err, ErrRoster) {
		t.Errorf("student %d: %v, want ErrRoster", MaxStudents+1, err)
	}
	if _, err := s.Hello(ctx, a.ID, sid(1), "Ann again"); err != nil {
		t.Errorf("a student already on a full roster: %v", err)
	}
}

// 300 students at once on a roster of MaxStudents: the cap holds (each
// place is taken by compare-and-set), and a student already on the full
// roster still says hello.
func TestStoreRosterConcurrent(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, &clock{t: time.Now()})
	a, _, _ := s.Create(ctx, Class{Name: "A"})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, full := 0, 0
	for i := range 300 {
		wg.Go(func() {
			_, _, err := s.NewSession(ctx, a.ID, fmt.Sprintf("Student %d", i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrRoster):
				full++
			default:
				t.Errorf("hello %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	got, err := s.Students(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ok != MaxStudents || len(got) != MaxStudents || full != 300-MaxStudents {
		t.Errorf("%d hellos taken, %d refused, %d on the roster: want %d, %d, %d", ok, full, len(got), MaxStudents, 300-MaxStudents, MaxStudents)
	}
	if _, err := s.Hello(ctx, a.ID, got[0].ID, got[0].Name); err != nil {
		t.Errorf("a student on the full roster: %v", err)
	}
}

// Names that look alike are one name: the second is refused, saying whose
// it looks like; a student keeps their own name through a hello, and a
// name let go (renamed) is free again.
func TestStoreLookAlikes(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, &clock{t: time.Now()})
	a, _, _ := s.Create(ctx, Class{Name: "A"})
	sam, tok, err := s.NewSession(ctx, a.ID, "Sam")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"Ѕаm", "SAM", "Sam\ufe0f", "Sa\u034fm", "Ｓam"} {
		_, _, err := s.NewSession(ctx, a.ID, n)
		var taken *NameTakenError
		if !errors.As(err, &taken) || taken.Name != "Sam" || !strings.Contains(err.Error(), "a student named Sam is already in this class; add an initial") {
			t.Errorf("%q beside Sam: %v, want refused", n, err)
		}
	}
	if st, err := s.Session(ctx, a.ID, tok); err != nil || st.ID != sam.ID || st.Name != "Sam" {
		t.Errorf("Sam's session: %+v %v", st, err)
	}
	if _, err := s.Hello(ctx, a.ID, sam.ID, "Sam"); err != nil {
		t.Errorf("Sam again: %v", err)
	}
	if _, err := s.Hello(ctx, a.ID, sam.ID, "Sam B."); err != nil {
		t.Fatalf("Sam renamed: %v", err)
	}
	if _, _, err := s.NewSession(ctx, a.ID, "Ѕаm"); err != nil {
		t.Errorf("the name Sam let go: %v", err)
	}
	if _, err := s.Session(ctx, a.ID, "AAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, ErrNoSession) {
		t.Errorf("a made-up token: %v, want ErrNoSession", err)
	}
}
