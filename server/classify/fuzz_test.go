package classify

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// seeds adds every fixture line to f's corpus.
func seeds(f *testing.F, wrap func(string) string) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			f.Add(wrap(l))
		}
	}
	f.Add(wrap("\x1b[31mI1130 01:02:00.512345    1 kubelet.go:2760] \"a\\\"b\" pods=[\"x\",y] pod=\"\xff\""))
	f.Add(wrap(`{"__CURSOR":"c","MESSAGE":[255,0,27]}`))
	f.Add(wrap(`{"ts":1.5,"caller":"a:1","msg":"SyncLoop (probe)","probe":"liveness","pods":[["x"]]}`))
}

func FuzzClassify(f *testing.F) {
	seeds(f, func(s string) string { return s })
	c := New(readingFor(f, "v1.37.2"), WithClock(clock))
	n := New(nil, WithClock(clock))
	f.Fuzz(func(t *testing.T, line string) {
		for _, c := range []*Classifier{c, n} {
			l := c.Classify([]byte(line))
			safe(t, l)
			if ls := c.ClassifyString(line); !reflect.DeepEqual(l, ls) {
				t.Errorf("Classify and ClassifyString differ:\n%+v\n%+v", l, ls)
			}
			if l.Format == FormatRaw && l.Case != "" {
				t.Errorf("raw line with case %q", l.Case)
			}
			if l.Case != "" && l.Match == "" {
				t.Errorf("case %q without a match kind", l.Case)
			}
		}
	})
}

func FuzzKlog(f *testing.F) {
	seeds(f, func(s string) string { return s })
	f.Fuzz(func(t *testing.T, line string) {
		h, body, ok := parseKlog(line)
		if !ok {
			return
		}
		if strings.ContainsRune(h.caller, ' ') || !strings.HasSuffix(line, body) || h.clock < 0 || h.clock > 25*time.Hour {
			t.Errorf("header %+v body %q", h, body)
		}
		if msg, kvs, ok := structured(body); ok {
			if !strings.HasSuffix(body, kvs) {
				t.Errorf("kvs %q not a suffix of %q", kvs, body)
			}
			_ = msg
			for _, p := range kvPods(kvs) {
				if p == "" {
					t.Errorf("empty pod from %q", kvs)
				}
			}
			kvString(kvs, "probe")
		}
		for _, p := range oldPods(body) {
			ns, name, ok := strings.Cut(p, "/")
			if !ok || ns == "" || name == "" {
				t.Errorf("old-style pod %q from %q", p, body)
			}
		}
	})
}

func FuzzJournalText(f *testing.F) {
	seeds(f, func(s string) string { return s })
	f.Add("Mon 2026-11-30 01:02:00 UTC vm kubelet[1]: x")
	f.Add("1796000520.512345 vm kubelet[1]: x")
	f.Add("2026-11-30T01:02:00.123456-05:30 vm kubelet: ")
	f.Fuzz(func(t *testing.T, line string) {
		j, msg, ok := parseJournalText(line, time.UTC)
		if !ok {
			return
		}
		if !strings.HasSuffix(line, msg) || strings.ContainsRune(j.host, ' ') || strings.ContainsRune(j.ident, ' ') {
			t.Errorf("journal %+v msg %q", j, msg)
		}
	})
}

func FuzzJSON(f *testing.F) {
	seeds(f, func(s string) string { return s })
	c := New(readingFor(f, "v1.37.2"), WithClock(clock))
	f.Fuzz(func(t *testing.T, line string) {
		var l Line
		if _, ok := c.parseJSON([]byte(line), &l); ok {
			if l.Format != FormatJournalJSON && l.Format != FormatKubeletJSON {
				t.Errorf("format %q", l.Format)
			}
		}
	})
}

func FuzzClean(f *testing.F) {
	f.Add([]byte("plain"), 10)
	f.Add([]byte("\x1b[31mred\x1b[0m\x00\xff\u009b1m"), 4)
	f.Add([]byte("ééé"), 3)
	f.Fuzz(func(t *testing.T, b []byte, limit int) {
		if limit < 0 || limit > 1<<16 {
			return
		}
		s, _ := clean(b, limit)
		if !utf8.ValidString(s) {
			t.Errorf("invalid UTF-8 from %q", b)
		}
		body, _, cut := strings.Cut(s, "… [cut: ")
		if !cut {
			body = s
		}
		if len(body) > limit {
			t.Errorf("%d bytes kept, limit %d", len(body), limit)
		}
		for _, r := range body {
			if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
				t.Errorf("control %U in %q", r, s)
			}
		}
	})
}
