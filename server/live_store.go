package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/syncloop/syncloop/server/jsonstr"
)

// feedStore keeps a feed's real lines (not the demo's) in an append-only
// file, so a restarted server still has the ring's history, the sequence
// numbers browsers resume from, and the ids relays are deduplicated by.
// A line is written before it is acknowledged: a server killed after the
// write but before the ack recognizes the relay's resend.
//
// The file is JSON lines: {"seq":N,"id":…,"raw":…,"version":…} per line
// received, and, first in a compacted file, {"version":…} alone: the
// kubelet version the lines compacted away had revealed.
type feedStore struct {
	path    string
	keep    int // records kept when compacting
	f       *os.File
	w       *bufio.Writer
	count   int     // records in the file
	size    int64   // bytes in the file, buffered ones included
	offs    []int64 // where the last records (at least keep of them) start
	version string  // the last kubelet version recorded
	rec     []byte  // scratch for one record
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
	recs, err := s.read()
	if err != nil {
		return nil, nil, "", err
	}
	if err := s.open(); err != nil {
		return nil, nil, "", err
	}
	return s, recs, s.version, nil
}

func (s *feedStore) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("feed store: %w", err)
	}
	s.f, s.w = f, bufio.NewWriterSize(f, 64<<10)
	return nil
}

// read loads the file's last keep records, its record count, offsets and
// last kubelet version. A torn last record (the process died mid-write) is
// cut off, so the next record starts on a line of its own.
func (s *feedStore) read() ([]storedLine, error) {
	f, err := os.Open(s.path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("feed store: %w", err)
	}
	defer f.Close()
	var recs []storedLine
	r := bufio.NewReaderSize(f, 64<<10)
	var off int64
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a record longer than the buffer
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err == io.EOF {
			if len(line) > 0 { // no newline: torn
				if terr := os.Truncate(s.path, off); terr != nil {
					return nil, fmt.Errorf("feed store: cutting a torn record: %w", terr)
				}
			}
			break
		}
		if err != nil {
			return nil, fmt.Errorf("feed store %s: %w", s.path, err)
		}
		start := off
		off += int64(len(line))
		var rec storedLine
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		if rec.Version != "" {
			s.version = rec.Version
		}
		if rec.Seq == 0 {
			continue
		}
		s.count++
		s.offs = append(s.offs, start)
		recs = append(recs, rec)
		if len(recs) >= 2*s.keep {
			recs = append(recs[:0], recs[len(recs)-s.keep:]...)
			s.offs = append(s.offs[:0], s.offs[len(s.offs)-s.keep:]...)
		}
	}
	s.size = off
	if len(recs) > s.keep {
		recs = recs[len(recs)-s.keep:]
	}
	return recs, nil
}

// appendRecord appends r's line of the file to b.
func appendRecord(b []byte, r storedLine) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = jsonstr.Append(append(b, `,"id":`...), r.ID)
	b = jsonstr.Append(append(b, `,"raw":`...), r.Raw)
	if r.Version != "" {
		b = jsonstr.Append(append(b, `,"version":`...), r.Version)
	}
	return append(b, "}\n"...)
}

// add buffers one record; flush makes the batch reach the file.
func (s *feedStore) add(r storedLine) error {
	s.rec = appendRecord(s.rec[:0], r)
	if _, err := s.w.Write(s.rec); err != nil {
		return fmt.Errorf("feed store: %w", err)
	}
	if r.Version != "" {
		s.version = r.Version
	}
	s.count++
	s.offs = append(s.offs, s.size)
	s.size += int64(len(s.rec))
	if len(s.offs) >= 2*s.keep {
		s.offs = append(s.offs[:0], s.offs[len(s.offs)-s.keep:]...)
	}
	if cap(s.rec) > 64<<10 {
		s.rec = nil // an outsized line: do not keep its buffer
	}
	return nil
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

// compact rewrites the file with its last keep records, atomically. The
// records are copied as they are, from where the first kept one starts:
// compaction runs while the feed's ingest waits, and parsing 4 × keep
// records each time cost a burst of latency at high rates.
func (s *feedStore) compact() error {
	if len(s.offs) <= s.keep {
		return nil
	}
	from := s.offs[len(s.offs)-s.keep]
	src, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("feed store: compact: %w", err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("feed store: %w", err)
	}
	var head []byte
	if s.version != "" {
		// The line that revealed the version may be among those dropped.
		head = append(jsonstr.Append([]byte(`{"version":`), s.version), "}\n"...)
	}
	_, err = tmp.Write(head)
	if err == nil {
		_, err = io.Copy(tmp, io.NewSectionReader(src, from, s.size-from))
	}
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
	shift := from - int64(len(head))
	s.offs = append(s.offs[:0], s.offs[len(s.offs)-s.keep:]...)
	for i := range s.offs {
		s.offs[i] -= shift
	}
	s.size -= shift
	s.count = s.keep
	return s.open()
}

func (s *feedStore) close() error {
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}
