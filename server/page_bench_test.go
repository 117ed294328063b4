package server

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCachedPage measures requests per second for the cached reading
// page, gzipped, through the whole server (middleware, router, handler),
// against a bare net/http handler writing the same gzip bytes with the
// same headers a browser needs (type, encoding, length): what a request
// costs beyond writing the page. Both are served by net/http on loopback
// to the same clients, which are as cheap as wrk's (a raw keep-alive
// connection each, one request in flight, the response read by its
// Content-Length), in alternating rounds so that other work on a shared
// machine falls on both alike. It reports both rates and their ratio
// (target ≥ 0.85), and the ratio of the CPU time each request cost.
//
//	go test ./server -run '^$' -bench BenchmarkCachedPage -benchtime 40000x -count 5
func BenchmarkCachedPage(b *testing.B) {
	s := newRealServer(b)
	path := "/k8s/" + s.cfg.DefaultTag + "/"
	first := get(b, s, path, "Accept-Encoding", "gzip")
	if first.Code != 200 || first.Header().Get("Content-Encoding") != "gzip" {
		b.Fatalf("page: %d %q", first.Code, first.Header().Get("Content-Encoding"))
	}
	gz := first.Body.Bytes()
	ours := httptest.NewServer(s)
	defer ours.Close()
	bare := httptest.NewServer(bareHandler(gz))
	defer bare.Close()
	// The same bytes with the same headers as the page's (security
	// headers, ETag, Vary, Cache-Control): what is left of the ratio to
	// this is the router and middleware, not the response's size.
	same := httptest.NewServer(sameHeaders(first.Header(), gz))
	defer same.Close()

	const clients = 32
	var oursT, bareT, sameT, oursCPU, bareCPU, sameCPU time.Duration
	const rounds = 10
	b.ResetTimer()
	for i := range rounds {
		n := b.N / rounds
		if i < b.N%rounds {
			n++
		}
		cpu := processCPU()
		oursT += hammer(b, ours.Listener.Addr().String(), path, clients, n, len(gz))
		oursCPU += processCPU() - cpu
		cpu = processCPU()
		bareT += hammer(b, bare.Listener.Addr().String(), path, clients, n, len(gz))
		bareCPU += processCPU() - cpu
		cpu = processCPU()
		sameT += hammer(b, same.Listener.Addr().String(), path, clients, n, len(gz))
		sameCPU += processCPU() - cpu
	}
	b.StopTimer()
	ourRate := float64(b.N) / oursT.Seconds()
	bareRate := float64(b.N) / bareT.Seconds()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ourRate, "page-req/s")
	b.ReportMetric(bareRate, "bare-req/s")
	b.ReportMetric(ourRate/bareRate, "ratio")
	// On a machine others load too, the CPU a request costs (server and
	// client, this process's) varies less than the wall-clock rate: its
	// ratio is the bare handler's CPU per request over the page's.
	b.ReportMetric(float64(bareCPU)/float64(oursCPU), "cpu-ratio")
	b.ReportMetric(float64(b.N)/sameT.Seconds(), "same-headers-req/s")
	b.ReportMetric(float64(sameCPU)/float64(oursCPU), "same-headers-cpu-ratio")
}

// sameHeaders writes gz with the headers h, as they are.
func sameHeaders(h http.Header, gz []byte) http.Handler {
	h = h.Clone()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		maps.Copy(w.Header(), h)
		w.Write(gz)
	})
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCachedPageHandler is the server's own work for one cached page,
// without the network: what BenchmarkCachedPage's ratio is made of.
func BenchmarkCachedPageHandler(b *testing.B) {
	s := newRealServer(b)
	path := "/k8s/" + s.cfg.DefaultTag + "/"
	first := get(b, s, path, "Accept-Encoding", "gzip")
	for _, bench := range []struct {
		name string
		h    http.Handler
	}{{"server", s}, {"bare", bareHandler(first.Body.Bytes())}} {
		b.Run(bench.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", path, nil)
			req.Header.Set("Accept-Encoding", "gzip, deflate, br")
			req.RemoteAddr = "127.0.0.1:40000"
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				w.status = 0
				bench.h.ServeHTTP(w, req)
			}
			if w.status != http.StatusOK && w.status != 0 {
				b.Fatalf("status %d", w.status)
			}
		})
	}
}

// bareHandler writes gz as the page's gzip response and nothing else.
func bareHandler(gz []byte) http.Handler {
	length := strconv.Itoa(len(gz))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"text/html; charset=utf-8"}
		h["Content-Encoding"] = []string{"gzip"}
		h["Content-Length"] = []string{length}
		w.Write(gz)
	})
}

// discardWriter is a ResponseWriter that keeps nothing but the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

// hammer sends n GET requests for path (gzip accepted) to addr over
// clients keep-alive connections, each with one request in flight, and
// returns how long they took. Each response must be a 200 whose body is
// want bytes long.
func hammer(b *testing.B, addr, path string, clients, n, want int) time.Duration {
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nAccept-Encoding: gzip, deflate, br\r\nUser-Agent: bench\r\n\r\n")
	conns := make([]net.Conn, clients)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	var wg sync.WaitGroup
	var failed sync.Once
	start := time.Now()
	for i, c := range conns {
		m := n / clients
		if i < n%clients {
			m++
		}
		wg.Go(func() {
			br := bufio.NewReaderSize(c, 32<<10)
			for range m {
				if err := roundTrip(c, br, req, want); err != nil {
					failed.Do(func() { b.Error(addr, err) })
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// roundTrip writes req and reads one response, checking its status and
// body length.
func roundTrip(c net.Conn, br *bufio.Reader, req []byte, want int) error {
	if _, err := c.Write(req); err != nil {
		return err
	}
	status, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("status line %q", status)
	}
	length := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			length, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if length != want {
		return fmt.Errorf("Content-Length %d, want %d", length, want)
	}
	_, err = br.Discard(length)
	return err
}
