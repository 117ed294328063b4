package server

import (
	"html/template"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/diff"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// olderFixture is the fixture as an older tag: its config case logs
// "Tiny ADD" in another words and it has no pleg case.
func olderFixture(t testing.TB, tag string) *extractor.Reading {
	r := fixture.Reading(t)
	old := *r
	old.Tag = tag
	f := r.Function
	f.Text = strings.Replace(f.Text, `"Tiny ADD"`, `"Tiny (ADD)"`, 1)
	f.Cases = slices.DeleteFunc(slices.Clone(f.Cases), func(c extractor.Case) bool { return c.Key == "pleg" })
	for i := range f.Cases {
		if f.Cases[i].Key == "config" {
			logs := slices.Clone(f.Cases[i].Logs)
			for j := range logs {
				if logs[j].Message == "Tiny ADD" {
					logs[j].Message = "Tiny (ADD)"
				}
			}
			f.Cases[i].Logs = logs
		}
	}
	old.Function = f
	return &old
}

func TestComparePage(t *testing.T) {
	t.Parallel()
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{
		fixture.Tag: fixture.Reading(t),
		"v1.36.0":   olderFixture(t, "v1.36.0"),
	}, Hold: map[string]chan struct{}{"v1.36.0": make(chan struct{})}}
	s := newTestServer(t, fl)
	path := "/k8s/compare/v1.36.0..." + fixture.Tag

	// Not fetched yet: the page that reloads, naming the tag.
	w := get(t, s, path)
	if w.Code != 202 || !strings.Contains(w.Body.String(), "Fetching k8s.io/kubernetes@v1.36.0 for the compare with "+fixture.Tag) ||
		!strings.Contains(w.Body.String(), `<meta http-equiv="refresh" content="2">`) {
		t.Fatalf("before the fetch: %d\n%s", w.Code, w.Body)
	}
	close(fl.Hold["v1.36.0"])
	waitLoaded(t, s, "v1.36.0")

	w = get(t, s, path)
	body := w.Body.String()
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("%d %s", w.Code, w.Header().Get("Content-Type"))
	}
	for _, want := range []string{
		`<section class="cmp-case st-added" id="case-pleg"`,
		`<section class="cmp-case st-changed" id="case-config"`,
		`<span class="what">code, logs</span>`,
		`<span class="st">changed: message</span>`,
		`<q>Tiny (ADD)</q>`, `<q>Tiny ADD</q>`,
		`<table class="sbs">`, `<table class="uni">`,
		`<tr class="chg">`, `<td class="mk">−</td>`,
		`<span class="s">&#34;Tiny ADD&#34;</span>`, // chroma's classes
		"https://github.com/kubernetes/kubernetes/blob/v1.36.0/pkg/kubelet/tiny.go#L",
		"https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/tiny.go#L",
		`href="/k8s/history/config"`,
		`href="/k8s/compare/v1.37.2...v1.36.0"`, // swap
		"not at v1.36.0",
		`/static/compare.css?v=`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("compare page lacks %q", want)
		}
	}
	// The strict CSP holds: no inline style or script.
	if regexp.MustCompile(`(?i)\sstyle=|<style|<script(?:\s[^>]*)?>[^<]`).MatchString(body) {
		t.Error("the compare page has an inline style or script")
	}
	if n := strings.Count(body, `class="cmp-case `); n != len(fixture.Reading(t).Function.Cases) {
		t.Errorf("%d case sections", n)
	}

	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/k8s/compare/v1.36.0.." + fixture.Tag, 404, "A compare is /k8s/compare/FROM...TO"},
		{"/k8s/compare/v1.99.0..." + fixture.Tag, 404, "No tag v1.99.0 of k8s.io/kubernetes"}, // the loader fails at once
		{"/k8s/compare/" + fixture.Tag + "...v1.99.0", 404, "No tag v1.99.0 of k8s.io/kubernetes"},
		{"/k8s/compare/latest..." + fixture.Tag, 404, "&#34;latest&#34; is not a Kubernetes tag"},
		{"/k8s/compare/v1.19.0..." + fixture.Tag, 404, "Tag v1.19.0 cannot be read here"},
		{"/k8s/compare?from=1.36.0&to=v1.37.2", 303, ""},
		{"/k8s/history/Not_A_Key", 404, "is not a case key"},
	} {
		w := get(t, s, tc.path)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d, want %d with %q\n%s", tc.path, w.Code, tc.status, tc.want, w.Body)
		}
	}
	if loc := get(t, s, "/k8s/compare?from=1.36.0&to=v1.37.2").Header().Get("Location"); loc != "/k8s/compare/v1.36.0...v1.37.2" {
		t.Errorf("form redirects to %q", loc)
	}

	// The reading page has the "compare with…" control and, under a note
	// whose case is not at the tag, the compare where it arrived.
	page := get(t, s, "/k8s/"+fixture.Tag+"/").Body.String()
	for _, want := range []string{
		`<form class="compare-with" action="/k8s/compare" method="get">`,
		`<input type="hidden" name="from" value="v1.37.2">`,
		`name="to" list="cached-tags" value="v1.36.0"`,
		`href="/k8s/compare/v1.30.0...v1.31.0#case-container"`,
		`href="/k8s/history/container"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("reading page lacks %q", want)
		}
	}
}

// realServer serves the real Readings of tags, with tags[len-1] its
// default, so its history covers the minors up to that one.
func realServer(t testing.TB, tags ...string) *Server {
	t.Helper()
	extractortest.NeedNetwork(t)
	extractortest.Prefetch(tags...)
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{}}
	for _, tag := range tags {
		fl.Readings[tag] = extractortest.Reading(t, tag, content.Symbols())
	}
	def := tags[len(tags)-1]
	s, err := Open(Config{DefaultTag: def, CacheDir: t.TempDir(), Load: fl.Load, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for _, tag := range tags {
		waitLoaded(t, s, tag)
	}
	return s
}

// TestCompareRealTags: v1.30.0 → v1.31.0 at the container case, which
// v1.31.0's select gained (read in pkg/kubelet/kubelet.go at both tags).
func TestCompareRealTags(t *testing.T) {
	t.Parallel()
	s := realServer(t, "v1.30.0", "v1.31.0")
	body := get(t, s, "/k8s/compare/v1.30.0...v1.31.0").Body.String()
	for _, want := range []string{
		`<section class="cmp-case st-added" id="case-container"`,
		`<code>kl.containerManager.Updates()</code>`, `<code>resourceupdates.Update</code>`,
		"not at v1.30.0",
		`<q>SyncLoop (containermanager): event for pod</q>`,
		"<strong>1</strong> added, <strong>0</strong> removed",
		"Note: container",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("compare lacks %q", want)
		}
	}
	for _, key := range []string{"config", "pleg", "sync", "liveness", "readiness", "startup", "housekeeping"} {
		if !strings.Contains(body, `<section class="cmp-case st-same" id="case-`+key+`"`) {
			t.Errorf("%s is not the same", key)
		}
	}
}

// TestHistoryRealTags follows cases through v1.20.0, v1.21.0 and v1.22.0:
// v1.21.0 added the readiness and startup managers' cases and moved every
// log call from klog's printf calls to InfoS/ErrorS (read in the zips).
func TestHistoryRealTags(t *testing.T) {
	t.Parallel()
	s := realServer(t, "v1.20.0", "v1.21.0", "v1.22.0")
	w := get(t, s, "/k8s/history/readiness")
	body := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("%d\n%s", w.Code, body)
	}
	for _, want := range []string{
		"The case arrived in v1.21.0.",
		`<a href="/k8s/compare/v1.20.0...v1.21.0#case-readiness">added</a>`,
		`<span class="none">not there</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("readiness history lacks %q", want)
		}
	}
	body = get(t, s, "/k8s/history/liveness").Body.String()
	for _, want := range []string{
		"Its logging became structured in v1.21.0 (it was printf).",
		`<a href="/k8s/compare/v1.20.0...v1.21.0#case-liveness">changed: code, logs, calls</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("liveness history lacks %q\n%s", want, body)
		}
	}
	if w := get(t, s, "/k8s/history/container"); w.Code != 404 || !strings.Contains(w.Body.String(), "No minor release from v1.20.0 to v1.22.0 has a case") {
		t.Errorf("container before v1.31: %d", w.Code)
	}
}

// TestNotesSinceMatchesSource: a note's "since" (which the reading page
// links as the compare where the case arrived) is the first minor whose
// select has the case, read at that minor and the one before.
func TestNotesSinceMatchesSource(t *testing.T) {
	t.Parallel()
	extractortest.NeedNetwork(t)
	notes, err := content.Notes()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, note := range notes {
		since := note.Front["since"]
		if note.Kind != "case" || since == "" {
			continue
		}
		n++
		prev := diff.PreviousMinor(since)
		extractortest.Prefetch(prev, since)
		h := diff.NewHistory(note.Key, []*extractor.Reading{extractortest.Reading(t, prev, nil), extractortest.Reading(t, since, nil)})
		if got := h.Arrived(); got != since {
			t.Errorf("note %s says since %s; the source says %q", note.Key, since, got)
		}
	}
	if n == 0 {
		t.Error("no case note gives a since")
	}
}

// TestHistoryNamesTheCaseKeys: the history page's answers for a key that is
// not a case name the keys from extractor.CaseKeys, every one, in its order,
// so a renamed key upstream is one edit there.
func TestHistoryNamesTheCaseKeys(t *testing.T) {
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t)}}
	for _, tag := range diff.MinorTags(fixture.Tag) {
		r := *fixture.Reading(t)
		r.Tag = tag
		fl.Readings[tag] = &r
	}
	s := newTestServer(t, fl)
	want := strings.Join(extractor.CaseKeys[:], ", ") + "."
	for _, tc := range []struct {
		path, says string
	}{
		{"/k8s/history/Not_A_Key", "is not a case key"},
		{"/k8s/history/nosuchcase", "No case nosuchcase"}, // a key no minor release has
	} {
		var w *httptest.ResponseRecorder
		// The minor releases load in the background (from the fixture, but
		// eighteen of them, which under -race on a busy machine took over
		// ten seconds); the check below says what came instead.
		testwait.Until(time.Minute, func() bool { w = get(t, s, tc.path); return w.Code != 202 })
		body := w.Body.String()
		if w.Code != 404 || !strings.Contains(body, tc.says) {
			t.Fatalf("%s: %d, want 404 saying %q\n%s", tc.path, w.Code, tc.says, body)
		}
		for _, key := range extractor.CaseKeys {
			if !regexp.MustCompile(`\b` + key + `\b`).MatchString(body) {
				t.Errorf("%s does not name the case key %s", tc.path, key)
			}
		}
		if !strings.Contains(body, want) {
			t.Errorf("%s does not list extractor.CaseKeys in order (%q)\n%s", tc.path, want, body)
		}
	}
}

// TestCompareAddedTypeComments: a pod_workers type added or removed
// between two tags has no other side to diff; the compare shows its
// comment whole (v1.21.0 → v1.22.0, where podSyncStatus arrived with
// the pod worker rewrite and syncPodOptions went, as pod_workers.go reads
// at both tags).
func TestCompareAddedTypeComments(t *testing.T) {
	t.Parallel()
	s := realServer(t, "v1.21.0", "v1.22.0")
	body := get(t, s, "/k8s/compare/v1.21.0...v1.22.0").Body.String()
	for _, c := range []struct{ tag, name string }{{"v1.22.0", "podSyncStatus"}, {"v1.21.0", "syncPodOptions"}} {
		r := extractortest.Reading(t, c.tag, content.Symbols())
		var doc string
		for _, ty := range r.PodWorkers.Types {
			if ty.Name == c.name {
				doc = ty.Doc
			}
		}
		first, _, _ := strings.Cut(doc, "\n")
		if first == "" {
			t.Fatalf("%s has no comment at %s: the test reads the wrong type", c.name, c.tag)
		}
		if !strings.Contains(body, `<blockquote class="cmp-typedoc">`+template.HTMLEscapeString(first)) {
			t.Errorf("the compare does not show %s's comment at %s (%q)", c.name, c.tag, first)
		}
	}
}
