package classes

import (
	"context"
	"errors"
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
	for in, want := range map[string]string{"  Group   B ": "Group B", "": "", "<b>B</b>": "<b>B</b>"} {
		if got, err := CleanName(in); err != nil || got != want {
			t.Errorf("CleanName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"a\x00b", "a\u202eb", strings.Repeat("x", 81)} {
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
