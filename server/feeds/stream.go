package feeds

// Reading a feed's stream: the one iterator every reader of it uses (the
// replica's follower, the record of what fired and the version guess
// reading it again, the export, the move out of the older version's
// stream). It opens an ordered consumer, decodes each message on demand,
// and, for a reader that asks, resumes after the last message read when
// a read fails (a cluster electing a stream leader).

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/relay"
)

// streamRead says which stream is read, and how failures are taken.
type streamRead struct {
	js     jetstream.JetStream
	stream string
	filter string // one subject of the stream; "": all
	// resumes is how many failed reads in a row (nothing read in between)
	// are resumed after the last message read: 0 ends the reading at the
	// first, a negative number never (the reading ends with its context).
	resumes  int
	onResume func(after uint64, err error) // told of each failure resumed; may be nil
}

// feedStream is the named feed's own stream, read once through.
func (s *Service) feedStream(name string) streamRead {
	return streamRead{js: s.b.Lane(name), stream: feedStreamName(name)}
}

// storedIter is a reading of a stream under way: next moves it to the
// next message, msg is that message, err why it ended. Its buffers are
// reused from message to message: a message's lines are valid until the
// next call of next.
type storedIter struct {
	sr    streamRead
	ctx   context.Context
	msgs  jetstream.MessagesContext
	stopF func() bool // unregisters msgs.Stop from ctx
	last  uint64      // the stream sequence of the last message read
	stuck int         // failures since a message was last read
	cur   streamMsg
	ended bool
	err   error  // why it ended, when not by its context or close
	unz   []byte // the decompression buffer
	lines []relay.Line
}

// streamMsg is one message of a stream as read.
type streamMsg struct {
	it      *storedIter
	seq     uint64 // its stream sequence number
	pending uint64 // the messages after it, as the consumer knew when it was read
	header  nats.Header
	data    []byte
}

// reader is a reading of sr's messages after stream sequence after (0:
// from the first), under ctx. Its consumer starts at the first next, or
// at open.
func (sr streamRead) reader(ctx context.Context, after uint64) *storedIter {
	return &storedIter{sr: sr, ctx: ctx, last: after}
}

// open starts the reading's consumer after the last message read,
// asking under octx (a caller that waits out an election retries it).
func (it *storedIter) open(octx context.Context) error {
	var cfg jetstream.OrderedConsumerConfig
	if it.last > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, it.last+1
	}
	if it.sr.filter != "" {
		cfg.FilterSubjects = []string{it.sr.filter}
	}
	cons, err := it.sr.js.OrderedConsumer(octx, it.sr.stream, cfg)
	if err != nil {
		return err
	}
	msgs, err := cons.Messages()
	if err != nil {
		return err
	}
	it.msgs = msgs
	it.stopF = context.AfterFunc(it.ctx, msgs.Stop)
	return nil
}

// next reads the next message; false once the reading ended (Err says
// why: nil when its context ended, or close was called).
func (it *storedIter) next() bool {
	clear(it.lines)
	it.lines = it.lines[:0]
	if cap(it.unz) > 2*msgBytes {
		it.unz = nil
	}
	for !it.ended {
		if it.msgs == nil {
			// A reading that resumes waits out an election; one that
			// does not is told at once (a stream that is not there).
			err := it.open(it.ctx)
			if err != nil && it.sr.resumes != 0 {
				err = broker.Retry(it.ctx, followWithin, it.open)
			}
			if err != nil {
				it.end(err)
			}
			continue
		}
		m, err := it.msgs.Next()
		var md *jetstream.MsgMetadata
		if err == nil {
			md, err = m.Metadata()
		}
		if err == nil {
			it.stuck, it.last = 0, md.Sequence.Stream
			it.cur = streamMsg{it: it, seq: md.Sequence.Stream, pending: md.NumPending, header: m.Headers(), data: m.Data()}
			return true
		}
		it.stop()
		if it.stuck++; it.ctx.Err() != nil || it.sr.resumes >= 0 && it.stuck > it.sr.resumes {
			it.end(err)
			continue
		}
		if it.sr.onResume != nil {
			it.sr.onResume(it.last, err)
		}
	}
	return false
}

// end ends the reading with err, or with none if its context ended.
func (it *storedIter) end(err error) {
	it.ended = true
	if it.ctx.Err() == nil {
		it.err = err
	}
}

// stop stops the consumer, if one runs.
func (it *storedIter) stop() {
	if it.msgs != nil {
		it.stopF()
		it.msgs.Stop()
		it.msgs = nil
	}
}

// close ends the reading.
func (it *storedIter) close() {
	it.stop()
	it.ended = true
}

// Err is why the reading ended: nil when its context ended or it was
// closed.
func (it *storedIter) Err() error { return it.err }

// msg is the message next read.
func (it *storedIter) msg() *streamMsg { return &it.cur }

// head is what the message's headers say.
func (m *streamMsg) head() (storedHead, error) { return readHead(m.header) }

// lines decodes the message's lines, valid until the reading moves on.
func (m *streamMsg) lines() ([]relay.Line, error) {
	lines, err := decodeStored(m.header, m.data, m.it.lines[:0], &m.it.unz)
	m.it.lines = lines
	return lines, err
}
