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
	"github.com/syncloop/syncloop/server/relay"
)

// HandleExport streams the feed's stored lines as NDJSON (see the top of
// this file). What it cannot serve it returns, answered as plain text.
func (l *Service) HandleExport() http.Handler {
	return httperr.Serve(func(w http.ResponseWriter, r *http.Request) error {
		var after uint64
		if s := r.URL.Query().Get("after"); s != "" {
			var err error
			if after, err = strconv.ParseUint(s, 10, 64); err != nil {
				return httperr.New(http.StatusBadRequest, "after: want a sequence number")
			}
		}
		f, err := l.existingFeed(chi.URLParam(r, "feed"))
		if e := feedError(f, err); e != nil {
			return e
		}
		w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+f.name+`.ndjson"`)
		bw := bufio.NewWriterSize(w, 64<<10)
		err = l.exportFeed(r.Context(), f, after, func(raw string) error {
			bw.WriteString(raw)
			return bw.WriteByte('\n')
		})
		if err == nil {
			err = bw.Flush()
		}
		if err != nil && r.Context().Err() == nil {
			l.log.Warn("live: export cut short", "feed", f.name, "err", err)
			// The body has begun: a reader sees a cut, not a 500.
			panic(http.ErrAbortHandler)
		}
		return nil
	}, httperr.AsText)
}

// exportFeed writes the feed's stored lines after seq, in order, one per
// line as the relay sent it, up to the last one stored when it began.
func (l *Service) exportFeed(ctx context.Context, f *feed, after uint64, w func(raw string) error) error {
	// While a cluster elects a stream leader (a node just died) requests
	// time out: the export starts again after the last message it wrote,
	// rather than end a reader's download short.
	var end, done uint64 // the last message to write; the last one written
	err := broker.Retry(ctx, followWithin, func(ctx context.Context) error {
		m, err := f.stream.GetLastMsgForSubject(ctx, f.subject)
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
	for stuck := 0; ; {
		var msgs jetstream.MessagesContext
		err := broker.Retry(ctx, followWithin, func(actx context.Context) error {
			var cfg jetstream.OrderedConsumerConfig
			if done > 0 {
				cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, done+1
			}
			cons, err := l.b.Lane(f.name).OrderedConsumer(actx, feedStreamName(f.name), cfg)
			if err != nil {
				return err
			}
			msgs, err = cons.Messages()
			return err
		})
		if err != nil {
			return err
		}
		was := done
		finished, err := l.exportMsgs(ctx, msgs, after, end, &done, w)
		msgs.Stop()
		if finished || ctx.Err() != nil || errors.Is(err, errExportWrite) {
			return err
		}
		if stuck = stuck + 1; done > was {
			stuck = 0
		}
		if stuck >= 5 {
			return err
		}
		l.log.Warn("live: export interrupted; resuming", "feed", f.name, "after", done, "err", err)
	}
}

// errExportWrite wraps an error of the export's writer: the reader left.
var errExportWrite = errors.New("export: write")

// exportMsgs writes what msgs delivers up to stream sequence end, and
// reports whether the export is over (it got there, or cannot go on);
// otherwise err says why msgs stopped. *done is the last message written.
func (l *Service) exportMsgs(ctx context.Context, msgs jetstream.MessagesContext, after, end uint64, done *uint64, w func(raw string) error) (bool, error) {
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	var lines []relay.Line
	var unz []byte
	for {
		m, err := msgs.Next()
		if err != nil {
			return false, err
		}
		md, err := m.Metadata()
		if err != nil {
			return false, err
		}
		sh, err := readHead(m.Headers())
		if err != nil {
			return true, fmt.Errorf("stored message %d: %w", md.Sequence.Stream, err) // it will not read better later
		}
		first := sh.first
		if !sh.demo && (sh.lines < 0 || first+uint64(sh.lines) > after+1) {
			if lines, err = decodeStored(m.Headers(), m.Data(), lines[:0], &unz); err != nil {
				return true, fmt.Errorf("stored message %d: %w", md.Sequence.Stream, err)
			}
			for i, in := range lines {
				if first+uint64(i) > after {
					if err := w(in.Raw); err != nil {
						return false, fmt.Errorf("%w: %w", errExportWrite, err)
					}
				}
			}
		}
		*done = md.Sequence.Stream
		if *done >= end {
			return true, nil
		}
	}
}
