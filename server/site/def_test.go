package site

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
)

// defServer mounts the /def route of s as the server's routes.go does.
func defServer(s *Site) http.Handler {
	r := chi.NewRouter()
	r.Method("GET", "/k8s/{tag}/def", s.Def())
	return r
}

func getDef(t testing.TB, h http.Handler, tag, sym string) (int, defView, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/k8s/"+tag+"/def?sym="+url.QueryEscape(sym), nil))
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s at %s: Content-Type %q", sym, tag, ct)
	}
	var v defView
	if w.Code == 200 {
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
	}
	return w.Code, v, w.Body.String()
}

// TestDefAtTwoTags: (*Kubelet).HandlePodAdditions opens at the page's tag:
// at v1.31.0 and at v1.37.2 its bodies differ (v1.37.2 tracks pending
// resizes, v1.31.0 does not), each from its own file lines, each line linked
// upstream at its tag; the interface method the loop calls names the
// implementation and carries its body.
func TestDefAtTwoTags(t *testing.T) {
	s := realSite(t, "v1.31.0", "v1.37.2")
	h := defServer(s)
	const impl = "pkg/kubelet.(*Kubelet).HandlePodAdditions"
	var bodies []string
	for _, tag := range []string{"v1.31.0", "v1.37.2"} {
		code, v, body := getDef(t, h, tag, impl)
		if code != 200 {
			t.Fatalf("%s: %d %s", tag, code, body)
		}
		if v.Kind != "method" || v.File != "pkg/kubelet/kubelet.go" || !strings.Contains(v.HTML, `<span class="nf">HandlePodAdditions</span>`) {
			t.Errorf("%s: %+v", tag, v)
		}
		if !strings.Contains(v.HTML, `href="https://github.com/kubernetes/kubernetes/blob/`+tag+`/pkg/kubelet/kubelet.go#L`) {
			t.Errorf("%s: lines not linked upstream at the tag", tag)
		}
		// Its calls are controls again: the pod workers' UpdatePod.
		if !strings.Contains(v.HTML, `data-def="pkg/kubelet.PodWorkers.UpdatePod"`) && !strings.Contains(v.HTML, `data-def="pkg/kubelet.(*Kubelet).`) {
			t.Errorf("%s: no call in HandlePodAdditions is a control", tag)
		}
		bodies = append(bodies, v.HTML)
		t.Logf("%s: %s:%d-%d", tag, v.File, v.Start, v.End)

		code, iv, body := getDef(t, h, tag, "pkg/kubelet.SyncHandler.HandlePodAdditions")
		if code != 200 || iv.Kind != "interface method" || len(iv.Impls) != 1 || iv.Impls[0].Sym != impl || iv.Impls[0].HTML != v.HTML {
			t.Errorf("%s: the interface method: %d %.300s", tag, code, body)
		}
	}
	if bodies[0] == bodies[1] {
		t.Error("HandlePodAdditions is the same at v1.31.0 and v1.37.2")
	}
	if strings.Contains(bodies[0], "pendingResizes") || !strings.Contains(bodies[1], "pendingResizes") {
		t.Error("want pendingResizes at v1.37.2 only, as the source has it")
	}
}

// TestDefErrors: what /def answers for what it cannot give, as JSON, the
// symbol written back as text.
func TestDefErrors(t *testing.T) {
	s := realSite(t, "v1.37.2")
	h := defServer(s)
	for _, tc := range []struct {
		tag, sym string
		code     int
		says     string
	}{
		{"v1.37.2", "fmt.Println", 404, "fmt.Println is not found at v1.37.2"},
		{"v1.37.2", `<script>alert(1)</script>`, 404, `\u003cscript\u003e`},
		{"v1.37.2", "", 400, "give the symbol"},
		{"v1.37.2", "pkg/kubelet/kuberuntime.(*kubeGenericRuntimeManager).removeContainerLog", 404, "is not among the definitions the loop reaches"},
		{"latest", "pkg/kubelet.(*Kubelet).HandlePodAdditions", 404, "invalid tag"},
	} {
		code, _, body := getDef(t, h, tc.tag, tc.sym)
		if code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s %q: %d %s, want %d %q", tc.tag, tc.sym, code, body, tc.code, tc.says)
		}
	}
}

// BenchmarkDef answers /def for every symbol the loop reaches at the
// default tag (the definitions index), and reports the p95 of the first
// answer (highlighted then) and of a repeated one, against the p95 of
// serving the tag's reading.json from memory as a baseline in the same run.
//
//	go test -run '^$' -bench BenchmarkDef -benchtime 1x ./server/site/
func BenchmarkDef(b *testing.B) {
	s := realSite(b, "v1.37.2")
	h := defServer(s)
	syms := make([]string, 0)
	for sym := range s.Reading("v1.37.2").Defs.Decls {
		syms = append(syms, sym)
	}
	slices.Sort(syms)
	p95 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)*95/100].Microseconds()) / 1000
	}
	json := s.TagPage(PageJSON)
	jr := chi.NewRouter()
	jr.Method("GET", "/k8s/{tag}/reading.json", json)
	var first, again, base []time.Duration
	for b.Loop() {
		first, again, base = first[:0], again[:0], base[:0]
		s.state("v1.37.2").defs.Clear()
		for _, pass := range []*[]time.Duration{&first, &again} {
			for _, sym := range syms {
				start := time.Now()
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/k8s/v1.37.2/def?sym="+url.QueryEscape(sym), nil))
				*pass = append(*pass, time.Since(start))
				if w.Code != 200 {
					b.Fatalf("%s: %d %s", sym, w.Code, w.Body)
				}
			}
		}
		for range syms {
			start := time.Now()
			w := httptest.NewRecorder()
			jr.ServeHTTP(w, httptest.NewRequest("GET", "/k8s/v1.37.2/reading.json", nil))
			base = append(base, time.Since(start))
		}
	}
	b.ReportMetric(float64(len(syms)), "symbols")
	b.ReportMetric(p95(first), "p95-first-ms")
	b.ReportMetric(p95(again), "p95-again-ms")
	b.ReportMetric(p95(base), "p95-readingjson-ms")
}

// TestWrittenByView: the margin's writers, main writers first: at v1.31.0
// the GenericPLEG's Relist (generic.go:315) before the EventedPLEG's send
// (evented.go:329), which only runs with its feature gate on; the ticker
// cases say the runtime writes them.
func TestWrittenByView(t *testing.T) {
	s := realSite(t, "v1.31.0")
	st := s.state("v1.31.0")
	var pleg, sync *caseView
	for _, c := range st.view.Cases {
		switch c.Key {
		case "pleg":
			pleg = c
		case "sync":
			sync = c
		}
	}
	if pleg == nil || sync == nil {
		t.Fatal("no pleg or sync case at v1.31.0")
	}
	w := pleg.Written
	if len(w.Writers) != 2 || w.Writers[0].Short != "(*GenericPLEG).Relist" || w.Writers[0].Sites[0].Short != "generic.go:315" ||
		w.Writers[1].Short != "(*EventedPLEG).sendPodLifecycleEvent" || !strings.Contains(w.Writers[1].Note, "feature gate EventedPLEG") {
		t.Errorf("pleg writers at v1.31.0: %+v", w.Writers)
	}
	if !sync.Written.Ticker || len(sync.Written.Writers) != 0 {
		t.Errorf("sync at v1.31.0: %+v, want a ticker", sync.Written)
	}
	if got := writersAnswer(sync.Written); !strings.HasPrefix(got, "the Go runtime, through a ticker made at kubelet.go:") {
		t.Errorf("sync's answer %q", got)
	}
	if got := writersAnswer(w); !strings.HasPrefix(got, "`pkg/kubelet/pleg.(*GenericPLEG).Relist` (generic.go:315)") {
		t.Errorf("pleg's answer %q", got)
	}
}
