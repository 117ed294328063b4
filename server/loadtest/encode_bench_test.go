package loadtest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/syncloop/syncloop/server/classify"
)

// BenchmarkEncodeLine measures what the server pays per ingested line to
// encode it for browsers (server/live.go encodeLine calls json.Marshal on a
// classify.Line), against calling the line's own MarshalJSON: json.Marshal
// validates and compacts a Marshaler's output again. The profile of
// `syncloop loadtest --in-process` shows encodeLine as the largest cost of
// ingest; this is the ratio a change there would win.
func BenchmarkEncodeLine(b *testing.B) {
	in := &ingester{run: "bench", feed: "f", sites: sites}
	line := classify.New(nil).Stream().ClassifyString(in.line(42, time.Date(2026, 11, 30, 3, 4, 5, 0, time.UTC)))
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MarshalJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := line.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
