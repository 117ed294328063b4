package feeds

// The server's own journal: serve --journal-cmd or --journal-file feeds
// the default feed.

import (
	"context"
	"time"

	"github.com/syncloop/syncloop/server/relay"
)

// startJournal runs the server's own journal source into f.
func (s *Service) startJournal(f *feed, what string, run func(ctx context.Context, after string, emit relay.Emit) error) {
	if !s.enter() {
		return
	}
	f.mu.Lock()
	f.startedJournal(what)
	f.mu.Unlock()
	go func() {
		defer s.wg.Done()
		select { // resume after the last entry stored
		case <-f.ready:
		case <-s.ctx.Done():
			return
		}
		f.mu.Lock()
		after := f.counts.lastCursor
		f.mu.Unlock()
		err := run(s.ctx, after, func(line relay.Line) error {
			lines := []relay.Line{line}
			s.lat.arrived(lines, time.Now())
			_, err := f.ingest(lines, false)
			return err
		})
		if err != nil && s.ctx.Err() == nil {
			s.log.Error("feeds: "+what+" stopped", "err", err)
		}
		if s.ctx.Err() == nil && what == "journal file" {
			f.mu.Lock()
			f.journalReplayed()
			f.mu.Unlock()
		}
	}()
}
