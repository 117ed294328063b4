package feeds

// The server's own journal: serve --journal-cmd or --journal-file feeds
// the default feed.

import (
	"context"

	"github.com/syncloop/syncloop/server/relay"
)

// startJournal runs the server's own journal source into f.
func (l *Service) startJournal(f *feed, what string, run func(ctx context.Context, after string, emit relay.Emit) error) {
	if !l.enter() {
		return
	}
	f.mu.Lock()
	f.startedJournal(what)
	f.mu.Unlock()
	go func() {
		defer l.wg.Done()
		select { // resume after the last entry stored
		case <-f.ready:
		case <-l.ctx.Done():
			return
		}
		f.mu.Lock()
		after := f.counts.lastCursor
		f.mu.Unlock()
		err := run(l.ctx, after, func(line relay.Line) error {
			_, err := f.ingest([]relay.Line{line}, false)
			return err
		})
		if err != nil && l.ctx.Err() == nil {
			l.log.Error("live: "+what+" stopped", "err", err)
		}
		if l.ctx.Err() == nil && what == "journal file" {
			f.mu.Lock()
			f.journalReplayed()
			f.mu.Unlock()
		}
	}()
}
