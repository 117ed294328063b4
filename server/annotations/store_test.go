package annotations

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/annotations/anchor"
)

// open starts an embedded NATS with JetStream in dir and a Store on it.
func open(t *testing.T, dir string) (*Store, func()) {
	t.Helper()
	js, stop, err := Embedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), Config{JS: js})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	return s, func() { s.Close(); stop() }
}

const room = "0123456789abcdef0123456789abcdef"

func TestPutConflictHistory(t *testing.T) {
	ctx := context.Background()
	s, stop := open(t, t.TempDir())
	defer stop()

	_, ch, cancel := s.Subscribe(room)
	defer cancel()

	ann, err := s.Put(ctx, room, Note{ID: "case.config", Text: "Ann's first", Author: "Ann", Color: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ann.Rev == 0 {
		t.Fatal("no revision")
	}
	select {
	case n := <-ch:
		if n.ID != "case.config" || n.Text != "Ann's first" || n.Rev != ann.Rev {
			t.Fatalf("live event %+v", n)
		}
	case <-time.After(time.Second):
		t.Fatal("no live event within a second")
	}

	// Dana edits from the same revision: fine. Ann, still on the first, is
	// refused and told what Dana wrote.
	dana, err := s.Put(ctx, room, Note{ID: "case.config", Text: "Dana's", Author: "Dana", Color: 2}, ann.Rev)
	if err != nil {
		t.Fatal(err)
	}
	if dana.Prev == nil || dana.Prev.Text != "Ann's first" || dana.Prev.Author != "Ann" {
		t.Errorf("Prev = %+v, want Ann's first text", dana.Prev)
	}
	_, err = s.Put(ctx, room, Note{ID: "case.config", Text: "Ann's second", Author: "Ann"}, ann.Rev)
	var c *ConflictError
	if !errors.As(err, &c) || c.Current.Text != "Dana's" || c.Current.Author != "Dana" || c.Current.Rev != dana.Rev {
		t.Fatalf("stale edit: %v, want a conflict with Dana's text", err)
	}
	// A create of a note that exists is a conflict too.
	if _, err := s.Put(ctx, room, Note{ID: "case.config", Text: "x", Author: "Eve"}, 0); !errors.As(err, &c) {
		t.Fatalf("create over an existing note: %v", err)
	}

	h, err := s.History(ctx, room, "case.config")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Text != "Dana's" || h[1].Text != "Ann's first" || h[1].Author != "Ann" {
		t.Fatalf("history %+v", h)
	}
}

func TestLimitsAndCleaning(t *testing.T) {
	ctx := context.Background()
	s, stop := open(t, "")
	defer stop()
	for _, tc := range []struct {
		n    Note
		want error
	}{
		{Note{ID: "case.config", Text: strings.Repeat("x", MaxNoteBytes+1), Author: "A"}, ErrTooLarge},
		{Note{ID: "nonsense", Text: "x", Author: "A"}, ErrInvalid},
		{Note{ID: "case.config", Text: "x", Author: ""}, ErrInvalid},
		{Note{ID: "comment.abcdef", Text: "x", Author: "A"}, ErrInvalid}, // no quote
		{Note{ID: "comment.abcdef", Text: "x", Author: "A", Quote: &anchor.Quote{Exact: "a\nb", Start: 3, End: 3}}, ErrInvalid},
	} {
		if _, err := s.Put(ctx, room, tc.n, 0); !errors.Is(err, tc.want) {
			t.Errorf("%s %.20q by %q: %v, want %v", tc.n.ID, tc.n.Text, tc.n.Author, err, tc.want)
		}
	}
	n, err := s.Put(ctx, room, Note{ID: "sentence", Text: "abc\u202edef\u2066", Author: " \u202eDana\x07 ", Color: 99}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n.Text != "abcdef" || n.Author != "Dana" || n.Color != 0 {
		t.Errorf("cleaned %q by %q colour %d", n.Text, n.Author, n.Color)
	}
	// The room's total: fill it with notes just under the per-note limit.
	big := strings.Repeat("y", MaxNoteBytes)
	var err2 error
	for i := 0; i < MaxRoomBytes/MaxNoteBytes+2 && err2 == nil; i++ {
		q := &anchor.Quote{Exact: "x", Start: 1, End: 1}
		id := "comment.c" + strings.Repeat("0", 5) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if _, err2 = s.Put(ctx, room, Note{ID: id, Text: big, Author: "A", Quote: q}, 0); err2 == nil {
			// The copy the limit reads is the watcher's.
			testwait.For(t, 5*time.Second, "the watcher's copy has "+id, func() bool {
				return slices.ContainsFunc(s.Notes(room), func(n Note) bool { return n.ID == id })
			})
		}
	}
	if !errors.Is(err2, ErrTooLarge) {
		t.Errorf("filling a room: %v, want ErrTooLarge", err2)
	}
}

// TestRestartAndDeleteRoom: notes outlive the process (the bucket is on
// disk under the data dir), and go with their room.
func TestRestartAndDeleteRoom(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, stop := open(t, dir)
	q := &anchor.Quote{Exact: "kl.sourcesReady.AddSource(u.Source)", Start: 2449, End: 2449, Tag: "v1.30.0", Case: "config"}
	c, err := s.Put(ctx, room, Note{ID: "comment.abc123", Text: "marks the source seen", Author: "Ann", Quote: q}, 0)
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("f", 32)
	if _, err := s.Put(ctx, other, Note{ID: "sentence", Text: "another room's", Author: "Bo"}, 0); err != nil {
		t.Fatal(err)
	}
	stop()

	s, stop = open(t, dir)
	defer stop()
	notes := s.Notes(room)
	if len(notes) != 1 || notes[0].Text != "marks the source seen" || notes[0].Rev != c.Rev || notes[0].Quote == nil || notes[0].Quote.Start != 2449 {
		t.Fatalf("after restart: %+v", notes)
	}
	// Deleting a comment needs its revision too.
	if err := s.Delete(ctx, room, "comment.abc123", c.Rev+100); err == nil {
		t.Error("delete at a wrong revision succeeded")
	}
	if err := s.DeleteRoom(ctx, room); err != nil {
		t.Fatal(err)
	}
	testwait.Until(time.Second, func() bool { return len(s.Notes(room)) == 0 }) // the check below says what is left
	if n := s.Notes(room); len(n) != 0 {
		t.Errorf("after DeleteRoom: %+v", n)
	}
	if n := s.Notes(other); len(n) != 1 {
		t.Errorf("the other room lost its notes: %+v", n)
	}
	if h, _ := s.History(ctx, room, "comment.abc123"); len(h) != 0 {
		t.Errorf("history kept after the room went: %+v", h)
	}
}

// TestExpiredEmptyRoom: a room that ends with nothing written in it still
// tells its open pages (nothing is purged, so no note's event would).
func TestExpiredEmptyRoom(t *testing.T) {
	s, stop := open(t, t.TempDir())
	defer stop()
	_, ch, cancel := s.Subscribe(room)
	defer cancel()
	h := NewHandlers(HTTPConfig{Store: s})
	h.Expired(room)
	select {
	case n, ok := <-ch:
		if !ok || !n.Gone {
			t.Fatalf("got %+v (open %v), want the room gone", n, ok)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the subscriber of an expired room with no notes heard nothing")
	}
	if _, ok := <-ch; ok {
		t.Error("the subscription goes on after the room ended")
	}
}

// TestEditComment: an edit of a comment names no lines; it keeps those it
// was written on (before: it was refused for want of a quote).
func TestEditComment(t *testing.T) {
	ctx := context.Background()
	s, stop := open(t, t.TempDir())
	defer stop()
	q := &anchor.Quote{Exact: "kl.sourcesReady.AddSource(u.Source)", Start: 2449, End: 2449, Tag: "v1.30.0", Case: "config"}
	c, err := s.Put(ctx, room, Note{ID: "comment.abc123", Text: "marks the source seen", Author: "Ann", Quote: q}, 0)
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Put(ctx, room, Note{ID: "comment.abc123", Text: "marks the source seen, once", Author: "Bob"}, c.Rev)
	if err != nil {
		t.Fatal(err)
	}
	if e.Quote == nil || e.Quote.Start != 2449 || e.Prev == nil || e.Prev.Author != "Ann" || !e.Created.Equal(c.Created) || !e.At.After(c.Created) {
		t.Errorf("edited: %+v", e)
	}
	if _, err := s.Put(ctx, room, Note{ID: "comment.new123", Text: "no lines", Author: "Bob"}, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("a new comment without lines: %v, want ErrInvalid", err)
	}
}

// TestPutWaitsForDisk: with Config.Sync, a write is answered only once
// Sync says it is on disk; a Sync that fails fails the write.
func TestPutWaitsForDisk(t *testing.T) {
	js, stop, err := Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	release := make(chan error)
	s, err := Open(context.Background(), Config{JS: js, Sync: func(ctx context.Context) error {
		select {
		case err := <-release:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s.Put(context.Background(), room, Note{ID: "case.sync", Text: "kept", Author: "Ann"}, 0)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Put answered (%v) before Sync", err)
	case <-time.After(100 * time.Millisecond):
	}
	release <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := s.Put(context.Background(), room, Note{ID: "case.pleg", Text: "lost?", Author: "Ann"}, 0)
		done <- err
	}()
	release <- errors.New("disk gone")
	if err := <-done; err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("Put with a failed Sync: %v", err)
	}
}

// roomKeys counts what the bucket holds of a room: its notes, and their
// size together, read from the bucket itself rather than any copy.
func roomKeys(t *testing.T, s *Store, room string) (notes, bytes int) {
	t.Helper()
	ctx := context.Background()
	keys, err := s.kv.ListKeysFiltered(ctx, room+".>")
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		_, id, _ := strings.Cut(k, ".")
		if !ValidID(id) {
			continue
		}
		n, err := s.get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if n.Rev != 0 {
			notes++
			bytes += size(n)
		}
	}
	return notes, bytes
}

// TestCapsUnderConcurrency: writers at once (two stores on one bucket, as
// two replicas would be) never take a room over 400 notes or 256 KB,
// however their writes interleave.
func TestCapsUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	js, stop, err := Embedded("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var stores []*Store
	for range 2 {
		s, err := Open(ctx, Config{JS: js, Memory: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	q := &anchor.Quote{Exact: "x", Start: 1, End: 1}
	// fill writes n notes one after another; write n at once.
	fill := func(room string, n, size int) {
		for i := range n {
			if _, err := stores[i%2].Put(ctx, room, Note{ID: fmt.Sprintf("comment.f%06d", i), Text: strings.Repeat("z", size), Author: "F", Quote: q}, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	write := func(room string, n, size int) (ok, tooLarge int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, err := stores[i%2].Put(ctx, room, Note{ID: fmt.Sprintf("comment.w%06d", i), Text: strings.Repeat("z", size), Author: "W", Quote: q}, 0)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, ErrTooLarge):
					tooLarge++
				default:
					t.Errorf("write %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		return ok, tooLarge
	}

	// Notes: a room with 380, then 60 small ones at once.
	fill(room, 380, 10)
	ok, refused := write(room, 60, 10)
	notes, _ := roomKeys(t, stores[0], room)
	if notes > MaxRoomNotes {
		t.Errorf("%d notes stored (%d of 60 writes answered ok), cap %d", notes, ok, MaxRoomNotes)
	}
	if ok+refused != 60 || notes != 380+ok || ok != MaxRoomNotes-380 {
		t.Errorf("%d ok + %d refused of 60; %d stored, want 400", ok, refused, notes)
	}

	// Bytes: a room with 24 notes of 8 KB (192 KB), then 24 more at once.
	fill(roomB, 24, MaxNoteBytes)
	ok, _ = write(roomB, 24, MaxNoteBytes)
	_, bytes := roomKeys(t, stores[0], roomB)
	if bytes > MaxRoomBytes {
		t.Errorf("%d KB stored (%d of 24 writes answered ok), cap %d KB", bytes>>10, ok, MaxRoomBytes>>10)
	}
	if ok != MaxRoomBytes/(MaxNoteBytes+1)-24 {
		t.Errorf("%d notes of 8 KB more taken: the cap refuses what fits", ok)
	}
	// A comment deleted gives its share back.
	n, err := stores[0].Put(ctx, roomB, Note{ID: "comment.extra1", Text: "late", Author: "W", Quote: q}, 0)
	if err == nil {
		if err := stores[1].Delete(ctx, roomB, n.ID, n.Rev); err != nil {
			t.Fatal(err)
		}
	}
	var victim Note
	for _, v := range stores[0].Notes(roomB) {
		victim = v
		break
	}
	if err := stores[0].Delete(ctx, roomB, victim.ID, victim.Rev); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[1].Put(ctx, roomB, Note{ID: "comment.after1", Text: strings.Repeat("z", 4<<10), Author: "W", Quote: q}, 0); err != nil {
		t.Errorf("a note after a delete made room: %v", err)
	}
}
