package feeds

// The stored message: how a group of a relay's lines is kept in its
// feed's stream.
//
//	header Syncloop-Seq    the feed's sequence number of the message's first line
//	header Syncloop-Lines  how many lines it holds (a replica that has them skips the message without reading it)
//	header Syncloop-Demo   "1": demo lines
//	header Syncloop-Origin the replica that stored it (Service.origin)
//	header Syncloop-Enc    "s2": the data is S2-compressed records (below);
//	                       absent: an ingest message, {"lines":[…]}, as stored before
//	data                   for each line: uvarint len(id), id, uvarint len(raw), raw
//
// Each line is kept exactly as the relay sent it (a journald entry whole,
// with __CURSOR), which is what the export gives back. Compressed, a
// batch of real kubelet journald entries (server/lab/testdata) is 5 to 8
// times smaller: that much less for JetStream to write, fsync, cache,
// replicate and deliver to every replica.
//
// S2 (github.com/klauspost/compress/s2, the compression NATS itself uses)
// compresses at gigabytes a second: at 50 feeds of 1,000 journald entries
// a second, about 1% of a core.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go"

	"github.com/syncloop/syncloop/server/relay"
)

const (
	hdrSeq    = "Syncloop-Seq"    // the feed's sequence number of the message's first line
	hdrLines  = "Syncloop-Lines"  // how many lines the message holds
	hdrDemo   = "Syncloop-Demo"   // "1": demo lines
	hdrOrigin = "Syncloop-Origin" // the replica that stored it
	hdrEnc    = "Syncloop-Enc"    // "s2": compressed records; absent: an ingest message
	encS2     = "s2"

	// maxDecoded bounds what one stored message may decompress to: a
	// message holds at most msgBytes of lines.
	maxDecoded = 4 * msgBytes
)

// storedMsg builds the stored message of lines, whose first line is the
// feed's line first. scratch holds the records before compression; both
// buffers are returned for reuse.
func storedMsg(subject string, first uint64, lines []relay.Line, demo bool, data, scratch []byte) (*nats.Msg, []byte, []byte) {
	rec := scratch[:0]
	for _, in := range lines {
		rec = binary.AppendUvarint(rec, uint64(len(in.ID)))
		rec = append(rec, in.ID...)
		rec = binary.AppendUvarint(rec, uint64(len(in.Raw)))
		rec = append(rec, in.Raw...)
	}
	data = s2.Encode(data[:cap(data)], rec)
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(hdrSeq, strconv.FormatUint(first, 10))
	msg.Header.Set(hdrLines, strconv.Itoa(len(lines)))
	msg.Header.Set(hdrEnc, encS2)
	if demo {
		msg.Header.Set(hdrDemo, "1")
	}
	return msg, data, rec
}

// storedHead is what a stored message's headers say.
type storedHead struct {
	first uint64 // the feed's sequence number of its first line
	lines int    // how many lines; -1: not said (an older message)
	demo  bool
}

func readHead(h nats.Header) (storedHead, error) {
	first, err := strconv.ParseUint(h.Get(hdrSeq), 10, 64)
	if err != nil || first == 0 {
		return storedHead{}, errors.New("a stored message without its sequence number")
	}
	sh := storedHead{first: first, lines: -1, demo: h.Get(hdrDemo) == "1"}
	if n, err := strconv.Atoi(h.Get(hdrLines)); err == nil && n >= 0 {
		sh.lines = n
	}
	return sh, nil
}

// decodeStored appends a stored message's lines to dst; scratch is the
// decompression buffer, kept for reuse. The lines' strings are copies.
func decodeStored(h nats.Header, data []byte, dst []relay.Line, scratch *[]byte) ([]relay.Line, error) {
	switch enc := h.Get(hdrEnc); enc {
	case "":
		return relay.DecodeBatch(data, dst)
	case encS2:
	default:
		return dst, fmt.Errorf("stored message: unknown encoding %q", enc)
	}
	n, err := s2.DecodedLen(data)
	if err != nil {
		return dst, fmt.Errorf("stored message: %w", err)
	}
	if n > maxDecoded {
		return dst, fmt.Errorf("stored message: %d bytes decompressed, over %d", n, maxDecoded)
	}
	rec, err := s2.Decode((*scratch)[:cap(*scratch)], data)
	if err != nil {
		return dst, fmt.Errorf("stored message: %w", err)
	}
	*scratch = rec[:0]
	n0 := len(dst)
	for len(rec) > 0 {
		var id, raw string
		if id, rec, err = field(rec); err == nil {
			raw, rec, err = field(rec)
		}
		if err != nil {
			return dst[:n0], fmt.Errorf("stored message: line %d: %w", len(dst)-n0+1, err)
		}
		dst = append(dst, relay.Line{ID: id, Raw: raw})
	}
	return dst, nil
}

var errTruncated = errors.New("truncated record")

// field reads one length-prefixed field of a record.
func field(b []byte) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, errTruncated
	}
	b = b[k:]
	return string(b[:n]), b[n:], nil
}
