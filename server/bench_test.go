package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkPageVsFileServer measures requests per second for the cached
// reading page against a plain http.FileServer serving the same bytes from
// disk, both over real loopback connections with the same concurrent
// clients, in one run. It reports both rates and their ratio (target ≥ 0.8).
// Both are asked without compression, so they send the same bytes; the
// gzip rate is reported apart.
func BenchmarkPageVsFileServer(b *testing.B) {
	s := newRealServer(b)
	tag := s.cfg.DefaultTag
	ours := httptest.NewServer(s)
	defer ours.Close()
	page := get(b, s, "/k8s/"+tag+"/")
	if page.Code != 200 {
		b.Fatalf("page: %d", page.Code)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), page.Body.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	plain := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer plain.Close()

	const clients = 8
	tr := &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	// run sends n requests from the clients and returns how long they took.
	run := func(n int, target string, header http.Header) time.Duration {
		var wg sync.WaitGroup
		var failed sync.Once
		start := time.Now()
		for c := range clients {
			m := n / clients
			if c < n%clients {
				m++
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range m {
					req, _ := http.NewRequest("GET", target, nil)
					req.Header = header.Clone()
					resp, err := client.Do(req)
					if err == nil {
						_, err = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							err = fmt.Errorf("status %d", resp.StatusCode)
						}
					}
					if err != nil {
						failed.Do(func() { b.Error(target, err) })
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	// The machine is shared: interleave the two in rounds so a burst of
	// other work falls on both alike.
	pageURL := ours.URL + "/k8s/" + tag + "/"
	gzip := http.Header{"Accept-Encoding": {"gzip"}}
	var oursT, fileT, gzT time.Duration
	const rounds = 10
	b.ResetTimer()
	for i := range rounds {
		n := b.N / rounds
		if i < b.N%rounds {
			n++
		}
		oursT += run(n, pageURL, http.Header{})
		fileT += run(n, plain.URL+"/index.html", http.Header{})
		gzT += run(n, pageURL, gzip)
	}
	ourRate := float64(b.N) / oursT.Seconds()
	fileRate := float64(b.N) / fileT.Seconds()
	gzRate := float64(b.N) / gzT.Seconds()
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ourRate, "syncloop-req/s")
	b.ReportMetric(fileRate, "fileserver-req/s")
	b.ReportMetric(gzRate, "syncloop-gzip-req/s")
	b.ReportMetric(ourRate/fileRate, "ratio")
}

// transfer fetches path and, recursively, every stylesheet, script and module
// it loads from this server, gzip accepted, and returns the bytes on the
// wire by URL.
func transfer(t testing.TB, base, path string) map[string]int {
	t.Helper()
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	sizes := map[string]int{}
	refs := map[string][]*regexp.Regexp{
		"text/html": {
			regexp.MustCompile(`<link[^>]+href="([^"]+)"`),
			regexp.MustCompile(`<script[^>]+src="([^"]+)"`),
		},
		"text/javascript": {
			regexp.MustCompile(`(?m)^\s*import\s*(?:[^'";]*from\s*)?['"]([^'"]+)['"]`),
			regexp.MustCompile(`import\(\s*['"]([^'"]+)['"]\s*\)`),
		},
		"text/css": {
			regexp.MustCompile(`url\(\s*['"]?([^'")]+)['"]?\s*\)`),
			regexp.MustCompile(`@import\s+['"]([^'"]+)['"]`),
		},
	}
	var fetch func(u *url.URL)
	fetch = func(u *url.URL) {
		if u.Scheme == "data" {
			return
		}
		key := u.String()
		if _, ok := sizes[key]; ok {
			return
		}
		req, _ := http.NewRequest("GET", key, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		wire, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", key, resp.StatusCode)
		}
		sizes[key] = len(wire)
		text := wire
		if resp.Header.Get("Content-Encoding") == "gzip" {
			text = gunzip(t, wire)
		}
		ctype, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
		for _, re := range refs[ctype] {
			for _, m := range re.FindAllSubmatch(text, -1) {
				ref, err := u.Parse(string(m[1]))
				if err != nil {
					t.Fatalf("%s refers to %q: %v", key, m[1], err)
				}
				if ref.Scheme == "data" || ref.Host != u.Host {
					continue // another host is TestCSPHolds' business
				}
				fetch(ref)
			}
		}
	}
	u, _ := url.Parse(base + path)
	fetch(u)
	return sizes
}

// TestTransferSize: the reading page with everything it loads is under
// 150 KB compressed.
func TestTransferSize(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	sizes := transfer(t, ts.URL, "/k8s/"+s.cfg.DefaultTag+"/")
	total := 0
	var names []string
	for u, n := range sizes {
		total += n
		names = append(names, u)
	}
	sort.Strings(names)
	for _, u := range names {
		t.Logf("%7d  %s", sizes[u], u)
	}
	t.Logf("%7d  total, compressed, %d files", total, len(sizes))
	if len(sizes) < 5 {
		t.Errorf("only %d files fetched: the page loads more than that", len(sizes))
	}
	if total >= 150*1024 {
		t.Errorf("transfer %d bytes, want < 150 KB", total)
	}
}

// BenchmarkTransferSize reports the same figure as a benchmark metric.
func BenchmarkTransferSize(b *testing.B) {
	s := newRealServer(b)
	ts := httptest.NewServer(s)
	defer ts.Close()
	total := 0
	for b.Loop() {
		total = 0
		for _, n := range transfer(b, ts.URL, "/k8s/"+s.cfg.DefaultTag+"/") {
			total += n
		}
	}
	b.ReportMetric(float64(total), "bytes-on-wire")
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
