package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// feedStore keeps a feed's real lines (not the demo's) in an append-only
// file, so a restarted server still has the ring's history, the sequence
// numbers browsers resume from, and the ids relays are deduplicated by.
// A line is written before it is acknowledged: a server killed after the
// write but before the ack recognizes the relay's resend.
type feedStore struct {
	path  string
	keep  int // records kept when compacting
	f     *os.File
	w     *bufio.Writer
	count int // records in the file
}

// storedLine is one record of a feed's file.
type storedLine struct {
	Seq uint64 `json:"seq"`
	ID  string `json:"id"`
	Raw string `json:"raw"`
	// Version is the kubelet version the line revealed (its start-up
	// line). The ring soon forgets that line, but a restarted server must
	// still know the version: the last record that has one says it.
	Version string `json:"version,omitempty"`
}

// openFeedStore opens (creating) dir/<feed>.jsonl and returns its last keep
// records and the last kubelet version the file recorded.
func openFeedStore(dir, feed string, keep int) (*feedStore, []storedLine, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, "", fmt.Errorf("feed store: %w", err)
	}
	s := &feedStore{path: filepath.Join(dir, feed+".jsonl"), keep: keep}
	recs, count, version, err := readStore(s.path, keep)
	if err != nil {
		return nil, nil, "", err
	}
	s.count = count
	if err := s.open(); err != nil {
		return nil, nil, "", err
	}
	return s, recs, version, nil
}

func (s *feedStore) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("feed store: %w", err)
	}
	s.f, s.w = f, bufio.NewWriterSize(f, 64<<10)
	return nil
}

// readStore returns the last keep records of a store file, how many it has,
// and the last kubelet version recorded. A torn last record (the process
// died mid-write) is ignored.
func readStore(path string, keep int) ([]storedLine, int, string, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, 0, "", nil
	}
	if err != nil {
		return nil, 0, "", fmt.Errorf("feed store: %w", err)
	}
	defer f.Close()
	var recs []storedLine
	count, version := 0, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var r storedLine
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Seq == 0 {
			continue
		}
		count++
		if r.Version != "" {
			version = r.Version
		}
		recs = append(recs, r)
		if len(recs) >= 2*keep {
			recs = append(recs[:0], recs[len(recs)-keep:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, "", fmt.Errorf("feed store %s: %w", path, err)
	}
	if len(recs) > keep {
		recs = recs[len(recs)-keep:]
	}
	return recs, count, version, nil
}

// add buffers one record; flush makes the batch reach the file.
func (s *feedStore) add(r storedLine) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	s.count++
	_, err = s.w.Write(append(b, '\n'))
	return err
}

// flush writes the buffered records (the kernel keeps them if this process
// dies) and compacts the file when it has grown to four times what is kept.
func (s *feedStore) flush() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("feed store: %w", err)
	}
	if s.count > 4*s.keep {
		return s.compact()
	}
	return nil
}

// compact rewrites the file with its last keep records, atomically.
func (s *feedStore) compact() error {
	recs, _, version, err := readStore(s.path, s.keep)
	if err != nil {
		return err
	}
	// The line that revealed the version may be among those dropped: the
	// first kept record carries it on, unless a later one has its own.
	if version != "" && len(recs) > 0 && !slices.ContainsFunc(recs, func(r storedLine) bool { return r.Version != "" }) {
		recs[0].Version = version
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("feed store: %w", err)
	}
	w := bufio.NewWriter(tmp)
	for _, r := range recs {
		b, _ := json.Marshal(r)
		w.Write(append(b, '\n'))
	}
	err = w.Flush()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("feed store: compact: %w", err)
	}
	s.f.Close()
	s.count = len(recs)
	return s.open()
}

func (s *feedStore) close() error {
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}
