//go:build unix

package annotations

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/internal/testwait"
)

// cpuTime is the CPU this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// maxNote is an 8 KB note of the kind that costs most to show: Markdown
// with code, links and symbols and file:line references the checks resolve.
func maxNote(seed int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Version %d.\n\n", seed)
	for i := 0; b.Len() < MaxNoteBytes-200; i++ {
		fmt.Fprintf(&b, "- **configCh** is written by `(*PodConfig).Updates` (pkg/kubelet/kubelet.go:%d), see [the loop](https://example.com/%d) and _HandlePodAdditions_ ~~old~~\n", 2400+i, i)
	}
	return b.String()
}

// eventWriter is a page's end of an event stream: it counts the note
// events it is sent.
type eventWriter struct {
	h      http.Header
	notes  chan struct{}
	writes atomic.Int64 // a stream writes its snapshot once subscribed
}

func (w *eventWriter) Header() http.Header { return w.h }
func (w *eventWriter) WriteHeader(int)     {}
func (w *eventWriter) Flush()              {}
func (w *eventWriter) Write(p []byte) (int, error) {
	w.writes.Add(1)
	if bytes.Contains(p, []byte("event: note")) {
		w.notes <- struct{}{}
	}
	return len(p), nil
}

// BenchmarkNoteWriteSubscribers is the cost of one 8 KB note written in a
// room with N pages open on its event stream: the write, and the change
// shown on every page. cpu-ms/op is the process's CPU (user+system) per
// write.
//
//	go test -run '^$' -bench NoteWriteSubscribers -benchtime 20x ./server/annotations/
func BenchmarkNoteWriteSubscribers(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("pages=%d", n), func(b *testing.B) {
			js, stop, err := Embedded("")
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			s, err := Open(context.Background(), Config{JS: js, Memory: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			reading := extractortest.Reading(b, "v1.31.0", content.Symbols())
			h := NewHandlers(HTTPConfig{
				Store:    s,
				Room:     func(string) (string, error) { return reading.Tag, nil },
				Reading:  func(string) *extractor.Reading { return reading },
				Identify: func(r *http.Request) string { return r.RemoteAddr },
			})
			r := chi.NewRouter()
			r.Get("/rooms/{id}/notes/events", h.Events().ServeHTTP)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var pages []*eventWriter
			for i := range n {
				w := &eventWriter{h: http.Header{}, notes: make(chan struct{}, 1024)}
				pages = append(pages, w)
				req := httptest.NewRequestWithContext(ctx, "GET", "/rooms/"+room+"/notes/events", nil)
				req.RemoteAddr = fmt.Sprintf("10.0.%d.%d:1234", i/250, i%250+1)
				wg.Go(func() { r.ServeHTTP(w, req) })
			}
			defer func() { cancel(); wg.Wait() }()
			testwait.For(b, 10*time.Second, "every stream subscribed (its snapshot written)", func() bool {
				return !slices.ContainsFunc(pages, func(w *eventWriter) bool { return w.writes.Load() == 0 })
			})
			texts := []string{maxNote(1), maxNote(2)}
			var rev uint64
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				note, err := s.Put(context.Background(), room, Note{ID: "case.config", Text: texts[i%2], Author: "Ann"}, rev)
				if err != nil {
					b.Fatal(err)
				}
				rev = note.Rev
				for _, w := range pages {
					select {
					case <-w.notes:
					case <-time.After(10 * time.Second):
						b.Fatal("a page did not get the change")
					}
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkLocalViews is what one POST /k8s/{tag}/notes costs, for the
// largest bodies: one 500 KB note (taken before there was a limit per
// note), a full set of 8 KB notes (256 KB, the most a room holds), and
// notes of the costliest Markdown.
// Each request is from a client of its own, so the rate limit is not what
// is measured.
//
//	go test -run '^$' -bench LocalViews -benchtime 1x ./server/annotations/
func BenchmarkLocalViews(b *testing.B) {
	reading := extractortest.Reading(b, "v1.31.0", content.Symbols())
	h := NewHandlers(HTTPConfig{
		Reading:  func(string) *extractor.Reading { return reading },
		Identify: func(r *http.Request) string { return r.RemoteAddr },
	})
	r := chi.NewRouter()
	r.Post("/k8s/{tag}/notes", h.LocalViews().ServeHTTP)
	one := strings.Repeat(maxNote(0)+"\n", 500<<10/MaxNoteBytes)
	var full []map[string]any
	for i := range MaxRoomBytes / MaxNoteBytes {
		full = append(full, map[string]any{"id": fmt.Sprintf("case.k%d", i), "text": maxNote(i)})
	}
	client := 0 // each request a client of its own
	for _, tc := range []struct {
		name  string
		notes []map[string]any
	}{
		{"one-500KB-note", []map[string]any{{"id": "case.config", "text": one}}},
		{"32-notes-of-8KB", full},
		// goldmark is quadratic in unclosed links: the costliest text.
		{"one-64KB-costly-note", []map[string]any{{"id": "case.config", "text": strings.Repeat("[a](", 64<<10/4)}}},
		{"one-8KB-costly-note", []map[string]any{{"id": "case.config", "text": strings.Repeat("[a](", MaxNoteBytes/4)}}},
	} {
		body, _ := json.Marshal(map[string]any{"notes": tc.notes})
		b.Run(tc.name, func(b *testing.B) {
			cpu0 := cpuTime()
			code := 0
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest("POST", "/k8s/"+reading.Tag+"/notes", bytes.NewReader(body))
				client++
				req.RemoteAddr = fmt.Sprintf("10.1.%d.%d:1", client/250, client%250)
				w := httptest.NewRecorder()
				r.ServeHTTP(w, req)
				code = w.Code
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(code), "status")
			b.ReportMetric(float64(len(body)>>10), "body-KB")
		})
	}
}

// snapshotWriter is a page's end of an event stream that signals its
// first event, the snapshot.
type snapshotWriter struct {
	h    http.Header
	done chan struct{}
	once sync.Once
}

func (w *snapshotWriter) Header() http.Header { return w.h }
func (w *snapshotWriter) WriteHeader(int)     {}
func (w *snapshotWriter) Flush()              {}
func (w *snapshotWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("event: snapshot")) {
		w.once.Do(func() { close(w.done) })
	}
	return len(p), nil
}

// BenchmarkSnapshotCostlyRoom is what a page connecting to a room's event
// stream costs when the room holds the costliest notes it may: 32 of 8 KB
// of unclosed links (goldmark is quadratic in them), 256 KB in all.
//
//	go test -run '^$' -bench SnapshotCostlyRoom -benchtime 3x ./server/annotations/
func BenchmarkSnapshotCostlyRoom(b *testing.B) {
	js, stop, err := Embedded("")
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	s, err := Open(context.Background(), Config{JS: js, Memory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	reading := extractortest.Reading(b, "v1.31.0", content.Symbols())
	h := NewHandlers(HTTPConfig{
		Store:    s,
		Room:     func(string) (string, error) { return reading.Tag, nil },
		Reading:  func(string) *extractor.Reading { return reading },
		Identify: func(r *http.Request) string { return r.RemoteAddr },
	})
	r := chi.NewRouter()
	r.Get("/rooms/{id}/notes/events", h.Events().ServeHTTP)
	var cpu0 time.Duration
	costly := strings.Repeat("[a](", (MaxNoteBytes-300)/4)
	for i := range 31 {
		if _, err := s.Put(context.Background(), room, Note{ID: fmt.Sprintf("case.k%d", i), Text: costly, Author: "Eve"}, 0); err != nil {
			b.Fatal(err)
		}
	}
	testwait.For(b, 10*time.Second, "the store's copy has the 31 notes", func() bool { return len(s.Notes(room)) >= 31 })
	// One page is already open: what is measured is each page after it.
	for i := -1; i < b.N; i++ {
		if i == 0 {
			b.ResetTimer()
			cpu0 = cpuTime()
		}
		ctx, cancel := context.WithCancel(context.Background())
		w := &snapshotWriter{h: http.Header{}, done: make(chan struct{})}
		req := httptest.NewRequestWithContext(ctx, "GET", "/rooms/"+room+"/notes/events", nil)
		req.RemoteAddr = fmt.Sprintf("10.2.0.%d:1", (i+1)%250)
		served := make(chan struct{})
		go func() { r.ServeHTTP(w, req); close(served) }()
		select {
		case <-w.done:
		case <-time.After(60 * time.Second):
			b.Fatal("no snapshot")
		}
		cancel()
		<-served
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}
