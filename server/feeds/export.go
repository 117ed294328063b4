package feeds

// Export: GET /feeds/{feed}/export, a feed's stored lines as NDJSON.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/httperr"
)

// HandleExport streams the feed's stored lines as NDJSON (see the top of
// this file). What it cannot serve it returns, answered as plain text.
func (s *Service) HandleExport() http.Handler {
	return httperr.Serve(func(w http.ResponseWriter, r *http.Request) error {
		if !s.admit(w, r, false, false) {
			return nil
		}
		var after uint64
		if q := r.URL.Query().Get("after"); q != "" {
			var err error
			if after, err = strconv.ParseUint(q, 10, 64); err != nil {
				return httperr.New(http.StatusBadRequest, "after: want a sequence number")
			}
		}
		f, err := s.existingFeed(chi.URLParam(r, "feed"))
		if e := feedError(f, err); e != nil {
			return e
		}
		w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+f.name+`.ndjson"`)
		bw := bufio.NewWriterSize(w, 64<<10)
		err = f.exportFeed(r.Context(), after, func(raw string) error {
			bw.WriteString(raw)
			return bw.WriteByte('\n')
		})
		if err == nil {
			err = bw.Flush()
		}
		if err != nil && r.Context().Err() == nil {
			s.log.Warn("feeds: export cut short", "feed", f.name, "err", err)
			// The body has begun: a reader sees a cut, not a 500.
			panic(http.ErrAbortHandler)
		}
		return nil
	}, httperr.AsText)
}

// exportFeed writes the feed's stored lines after seq, in order, one per
// line as the relay sent it, up to the last one stored when it began.
func (f *feed) exportFeed(ctx context.Context, after uint64, w func(raw string) error) error {
	// While a cluster elects a stream leader (a node just died) requests
	// time out: the export starts again after the last message it wrote,
	// rather than end a reader's download short.
	var end uint64 // the last message to write
	err := broker.Retry(ctx, followWithin, func(ctx context.Context) error {
		m, err := f.stream.GetLastMsgForSubject(ctx, f.pub.subject)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound): // nothing stored: end stays 0
			return nil
		case err == nil:
			end = m.Sequence
		}
		return err
	})
	if err != nil || end == 0 {
		return err
	}
	sr := f.svc.feedStream(f.name)
	sr.resumes = 4 // five failures in a row, nothing read between them, end it
	sr.onResume = func(after uint64, err error) {
		f.svc.log.Warn("feeds: export interrupted; resuming", "feed", f.name, "after", after, "err", err)
	}
	it := sr.reader(ctx, 0)
	defer it.close()
	for it.next() {
		m := it.msg()
		sh, err := m.head()
		if err != nil {
			return fmt.Errorf("stored message %d: %w", m.seq, err) // it will not read better later
		}
		if !sh.demo && (sh.lines < 0 || sh.first+uint64(sh.lines) > after+1) {
			lines, err := m.lines()
			if err != nil {
				return fmt.Errorf("stored message %d: %w", m.seq, err)
			}
			for i, in := range lines {
				if sh.first+uint64(i) > after {
					if err := w(in.Raw); err != nil {
						return err
					}
				}
			}
		}
		if m.seq >= end {
			return nil
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return ctx.Err()
}
