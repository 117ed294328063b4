package feeds

// GET /feeds/{feed}/fired/{case}/lines: a case's recorded lines, read back
// from the stream, a page at a time. A busy feed records tens of thousands
// of a case's lines (67 MB of NDJSON for 20,000 of them), so one answer
// holds at most maxCaseLines lines and about maxCaseBytes, the newest
// first chosen, and a Link header names the page before it.

import (
	"bufio"
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/relay"
)

const (
	// defaultCaseLines is how many lines a request that names no limit
	// gets; the live pane asks for half its ring (1,000).
	defaultCaseLines = 500
	// maxCaseLines bounds the lines one answer holds, whatever limit says.
	maxCaseLines = 2000
	// maxCaseBytes bounds one answer's body: past it, the oldest lines
	// chosen are left to the next page (one line is always sent).
	maxCaseBytes = 4 << 20
)

// HandleCaseLines answers GET /feeds/{feed}/fired/{case}/lines[?before=SEQ][&limit=N]:
// the last limit of the case's recorded lines before SEQ (the newest when
// no before is given; 500 by default, at most 2,000 and about 4 MB), read
// back from the stream and classified as the feed is, one feed-socket line
// message per line (NDJSON), oldest first. When earlier lines remain, a
// Link header (rel="next") is the address of the page before this one.
func (s *Service) HandleCaseLines() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admit(w, r, false, false) {
			return
		}
		key := chi.URLParam(r, "case")
		before, limit, ok := caseLinesQuery(w, r)
		if !ok {
			return
		}
		f := s.storedFeedOr404(w, r)
		if f == nil {
			return
		}
		f.fired.mu.Lock()
		var at []firedAt
		var earlier bool // the record has lines of the case before at's
		if c := f.fired.cases[key]; c != nil {
			end := len(c.at)
			if before > 0 {
				end, _ = slices.BinarySearchFunc(c.at, before, func(a firedAt, want uint64) int { return cmp.Compare(a.seq, want) })
			}
			start := max(0, end-limit)
			at, earlier = slices.Clone(c.at[start:end]), start > 0
		}
		f.fired.mu.Unlock()
		f.mu.Lock()
		reading := s.reading(f.tag)
		version := f.kubelet.version
		f.mu.Unlock()
		cls := classify.New(reading).Stream()
		cls.SetVersion(version)
		// Read newest first, so that what the byte bound leaves out is the
		// oldest, and the next page (before the first sent) misses nothing.
		// The classifier sees each line alone (line.Case is as recorded).
		slices.Reverse(at)
		var page [][]byte
		var first uint64
		size := 0
		err := f.readLines(r.Context(), at, func(seq uint64, in relay.Line) error {
			line, cut := classifyForDisplay(cls, in.Raw)
			line.Case = key // as recorded (the record's classifier saw the lines in order)
			b := append(appendEntry(nil, seq, &line, false, cut, "", nil), '\n')
			if len(page) > 0 && size+len(b) > maxCaseBytes {
				earlier = true
				return errPageFull
			}
			page, first, size = append(page, b), seq, size+len(b)
			return nil
		})
		if err == errPageFull {
			err = nil
		}
		if err != nil {
			if r.Context().Err() == nil {
				s.log.Warn("feeds: a case's lines not read", "feed", f.name, "case", key, "err", err)
				httperr.Text(w, httperr.New(http.StatusServiceUnavailable, "the case's lines could not be read from the feed's stream; retry later"))
			}
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if earlier && len(page) > 0 {
			w.Header().Set("Link", fmt.Sprintf(`<%s?before=%d&limit=%d>; rel="next"`, (&url.URL{Path: r.URL.Path}).EscapedPath(), first, limit))
		}
		bw := bufio.NewWriterSize(w, 64<<10)
		for i := len(page) - 1; i >= 0; i-- {
			if _, err := bw.Write(page[i]); err != nil {
				return
			}
		}
		bw.Flush()
	})
}

// errPageFull ends the read of a page of lines that has its bytes.
var errPageFull = fmt.Errorf("page full")

// caseLinesQuery reads ?before=SEQ&limit=N; when they are wrong it answers
// 400 and reports false.
func caseLinesQuery(w http.ResponseWriter, r *http.Request) (before uint64, limit int, ok bool) {
	limit = defaultCaseLines
	if s := r.URL.Query().Get("before"); s != "" {
		var err error
		if before, err = strconv.ParseUint(s, 10, 64); err != nil {
			httperr.Text(w, httperr.New(http.StatusBadRequest, "before: want a sequence number (a line's seq; the Link header names the next page)"))
			return 0, 0, false
		}
	}
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			httperr.Text(w, httperr.New(http.StatusBadRequest, fmt.Sprintf("limit: want a positive number of lines (at most %d)", maxCaseLines)))
			return 0, 0, false
		}
		limit = min(n, maxCaseLines)
	}
	return before, limit, true
}
