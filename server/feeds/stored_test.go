package feeds

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go"

	"github.com/syncloop/syncloop/server/relay"
)

// TestStoredRoundTrip: a stored message gives back each line exactly as
// the relay sent it (ids, empty ids, HTML, escapes, invalid UTF-8, a long
// line), with its headers; an older version's message (an ingest message,
// no encoding header) reads as well.
func TestStoredRoundTrip(t *testing.T) {
	lines := []relay.Line{
		{ID: "s=abc;i=1f;b=x", Raw: `{"MESSAGE":"I1130 01:02:03.123456 1 kubelet.go:2407] \"SyncLoop ADD\"","__CURSOR":"s=abc;i=1f;b=x"}`},
		{ID: "", Raw: "<script>alert(1)</script>"},
		{ID: "run-7", Raw: "\x1b[31mred\x1b[0m \xff\xfe not UTF-8"},
		{ID: "run-8", Raw: strings.Repeat("long ", 40000)},
		{ID: "run-9", Raw: ""},
	}
	msg, data, rec := storedMsg("syncloop.feed.x", 41, lines, true, nil, nil)
	if len(data) >= len(rec) {
		t.Errorf("compressed %d bytes from %d", len(data), len(rec))
	}
	sh, err := readHead(msg.Header)
	if err != nil || sh != (storedHead{first: 41, lines: len(lines), demo: true}) {
		t.Fatalf("head %+v, %v", sh, err)
	}
	var unz []byte
	got, err := decodeStored(msg.Header, msg.Data, nil, &unz)
	if err != nil || !slices.Equal(got, lines) {
		t.Fatalf("decoded %d lines (%v); want the %d sent", len(got), err, len(lines))
	}

	// (JSON carried no invalid UTF-8: a relay's JSON encoder had replaced it.)
	valid := slices.DeleteFunc(slices.Clone(lines), func(l relay.Line) bool { return !utf8.ValidString(l.Raw) })
	legacy := nats.Header{}
	legacy.Set(hdrSeq, "7")
	got, err = decodeStored(legacy, relay.AppendBatch(nil, valid), nil, &unz)
	if err != nil || !slices.Equal(got, valid) {
		t.Fatalf("an older message: %d lines (%v)", len(got), err)
	}
	if sh, err := readHead(legacy); err != nil || sh.lines != -1 || sh.first != 7 || sh.demo {
		t.Fatalf("an older message's head %+v, %v", sh, err)
	}
}

// TestStoredBadData: what cannot be read is an error, never a panic or a
// line made up.
func TestStoredBadData(t *testing.T) {
	good, data, _ := storedMsg("s", 1, []relay.Line{{ID: "a-1", Raw: "one"}, {ID: "a-2", Raw: "two"}}, false, nil, nil)
	rec := []byte{3, 'a', '-', '1', 200} // a raw of 200 bytes, then nothing
	huge := s2.Encode(nil, bytes.Repeat([]byte{0}, maxDecoded+1))
	for _, tc := range []struct {
		name string
		enc  string
		data []byte
	}{
		{"unknown encoding", "zstd", data},
		{"not S2", encS2, []byte("plain text")},
		{"truncated S2", encS2, data[:len(data)-2]},
		{"truncated record", encS2, s2.Encode(nil, rec)},
		{"over the size bound", encS2, huge},
		{"not JSON", "", []byte(`{"lines":[`)},
	} {
		h := nats.Header{}
		h.Set(hdrSeq, "1")
		if tc.enc != "" {
			h.Set(hdrEnc, tc.enc)
		}
		var unz []byte
		if got, err := decodeStored(h, tc.data, nil, &unz); err == nil {
			t.Errorf("%s: %d lines, no error", tc.name, len(got))
		}
	}
	h := nats.Header{}
	for k, v := range good.Header {
		h[k] = v
	}
	h.Del(hdrSeq)
	if _, err := readHead(h); err == nil {
		t.Error("a message without Syncloop-Seq read")
	}
}

// FuzzDecodeStored: any data under either encoding decodes or fails, and
// what decodes encodes back to the same lines.
func FuzzDecodeStored(f *testing.F) {
	_, data, rec := storedMsg("s", 1, []relay.Line{{ID: "a-1", Raw: "one"}, {Raw: "<b>two</b>"}}, false, nil, nil)
	f.Add(data, true)
	f.Add(rec, true)
	f.Add([]byte(`{"lines":[{"id":"x","raw":"y"}]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		h := nats.Header{}
		h.Set(hdrSeq, "1")
		if compressed {
			h.Set(hdrEnc, encS2)
		}
		var unz []byte
		lines, err := decodeStored(h, data, nil, &unz)
		if err != nil {
			return
		}
		msg, _, _ := storedMsg("s", 1, lines, false, nil, nil)
		again, err := decodeStored(msg.Header, msg.Data, nil, &unz)
		if err != nil || !slices.Equal(again, lines) {
			t.Fatalf("%d lines decoded, %d again (%v)", len(lines), len(again), err)
		}
	})
}

// BenchmarkStoredVsIngestMessage: encoding and decoding a stored message
// against the ingest message's JSON it replaced (a batch of 50 journald
// entries, ~1.2 KB each).
func BenchmarkStoredVsIngestMessage(b *testing.B) {
	lines := make([]relay.Line, 50)
	for i := range lines {
		lines[i] = relay.Line{ID: "s=6a1c;i=" + string(rune('a'+i%26)), Raw: journalEntryForBench(i)}
	}
	b.Run("stored", func(b *testing.B) {
		var data, rec, unz []byte
		var out []relay.Line
		for b.Loop() {
			var msg *nats.Msg
			msg, data, rec = storedMsg("s", 1, lines, false, data, rec)
			out, _ = decodeStored(msg.Header, msg.Data, out[:0], &unz)
		}
	})
	b.Run("json", func(b *testing.B) {
		var data []byte
		var out []relay.Line
		for b.Loop() {
			data = relay.AppendBatch(data[:0], lines)
			out, _ = relay.DecodeBatch(data, out[:0])
		}
	})
}

func journalEntryForBench(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 1))
	return `{"__CURSOR":"s=6a1c0b1e2f3a4b5c8d9e0f1a2b3c4d5e;i=` + string(rune('a'+r.IntN(26))) + `","_HOSTNAME":"worker-1","PRIORITY":"6",` +
		`"_CMDLINE":"/usr/bin/kubelet --config=/var/lib/kubelet/config.yaml --v=4","SYSLOG_IDENTIFIER":"kubelet",` +
		`"MESSAGE":"I1202 00:44:27.123456    4242 kubelet.go:2456] \"SyncLoop (PLEG): event for pod\" pod=\"default/load-` +
		strings.Repeat("x", r.IntN(400)) + `\""}`
}
