//go:build cluster

package lab

// TestCluster is issue 37's proof on a real one-node cluster (lab.sh start
// --cluster): the course's exercise, its two kubectl commands taken from the
// page the site serves and run as written, through the real relay into the
// real server, read in Chromium. It builds etcd, kube-apiserver, kubectl and a
// kubelet at clusterTag (cached after), so it cannot fit CI's time cold and
// is behind the cluster build tag (CI vets it):
//
//	sudo SYNCLOOP_LAB=1 go test -tags cluster -run TestCluster -v -timeout 60m ./server/lab/
//
// With -update-cluster it records the journal as testdata (TestRecordedCluster
// reads it in every `go test`).

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/browsertest"
)

var (
	updateCluster = flag.Bool("update-cluster", false, "rewrite "+clusterJournal+" from this run's journal")
	// Another tag to run at (its Reading must be cached or extractable); only
	// clusterTag's run may be recorded.
	runTag = flag.String("cluster-tag", clusterTag, "the Kubernetes tag to build and run the cluster at")
)

func TestCluster(t *testing.T) {
	needLab(t)
	st := &stages{t: t, last: time.Now()}
	// What the cluster adds to the machine, which stop must take away again.
	labSysctls = append(labSysctls, "net/ipv4/ip_forward")
	labPaths = append(labPaths, "/run/netns", "/var/lib/cni", "/sys/class/net/syncloop0")
	if *updateCluster && *runTag != clusterTag {
		t.Fatalf("-update-cluster records %s: run it at -cluster-tag %s", clusterJournal, clusterTag)
	}
	runLab(t, []string{"--cluster", "--tag", *runTag}, func(kv map[string]string) {
		st.done("lab start")
		if kv["kubeconfig"] == "" || kv["node"] != "pair-worker" {
			t.Fatalf("start printed no kubeconfig= or node=pair-worker: %v", kv)
		}
		runCluster(t, st, kv)
	})
	st.done("lab stop")
	t.Logf("stage summary:\n  %s", strings.Join(st.all, "\n  "))
}

// runCluster: the server and relay on the lab's journal; the exercise's
// commands from the page; the journal, the page and the fired record after.
func runCluster(t *testing.T, st *stages, kv map[string]string) {
	chromium := browsertest.Path(t)
	bin, err := syncloop()
	if err != nil {
		t.Fatal(err)
	}
	kv["pod"] = "default/probe-me"
	e := &e2e{t: t, bin: bin, kv: kv, art: artifacts(t), cache: t.TempDir(), st: st,
		ring: 2000, tag: *runTag, version: *runTag,
		journalCmd: "journalctl -u kubelet -f -o json --all",
		journal: func() []entry {
			es, err := parseJournal(journal(t, kv["cursor"], "json"))
			if err != nil {
				t.Fatal(err)
			}
			return es
		}}
	e.addr = "127.0.0.1:" + strconv.Itoa(freePort(t))
	e.base = "http://" + e.addr
	defer e.stopAll()
	copyReadings(t, *runTag, e.cache)
	e.startServer()
	e.startRelay()
	e.waitStored(1, 60*time.Second)
	st.done("serve+relay, 1st line")

	ctx := browsertest.New(t, chromium, 5*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.base+"/k8s/"+*runTag+"/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	code, _ := pollJS(t, ctx, 30*time.Second,
		`[...document.querySelectorAll('pre')].map(p => p.textContent).find(s => s.includes('run probe-me')) || ''`,
		func(s string) bool { return s != "" })
	run, del, err := seedCommands(code)
	if err != nil {
		t.Fatalf("the page's exercise (%q): %v", code, err)
	}
	t.Logf("the page's commands:\n%s\n%s", run, del)

	sh := func(cmd string) {
		t.Helper()
		c := exec.Command("bash", "-c", cmd)
		c.Env = append(os.Environ(), "KUBECONFIG="+kv["kubeconfig"], "KUBECACHEDIR="+t.TempDir(),
			"PATH="+filepath.Join(kv["dir"], "cluster", "bin")+":"+os.Getenv("PATH"))
		out, err := c.CombinedOutput()
		t.Logf("$ %s\n%s", cmd, out)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	sh(run)
	// Two liveness failures (failureThreshold 2, period 5 s): the kubelet kills
	// the container once, and the case has more than one line to show.
	testwait.UntilEvery(120*time.Second, time.Second, func() bool {
		es := e.journal()
		return livenessFailures(es) >= 2 && !containsMinus(firstSightings(es, clusterSightings[:3]))
	})
	if es := e.journal(); livenessFailures(es) < 2 {
		t.Fatalf("within 120 s of kubectl run: %d liveness failures, first sightings %v", livenessFailures(es), firstSightings(es, clusterSightings[:3]))
	}
	st.done("run: ADD, RECONCILE, 2 liveness failures")
	sh(del)
	es, first := waitFor(t, kv["cursor"], clusterSightings, 90*time.Second)
	for i, at := range first {
		if at < 0 {
			t.Errorf("no %s line in the journal", clusterSightings[i].name)
		}
	}
	st.done("delete: DELETE, REMOVE")
	e.clusterPage(ctx, es)
	e.clusterFired(es)

	e.relay.signal(t, syscall.SIGTERM)
	e.relay = nil
	e.compare()
	raw := journal(t, kv["cursor"], "json")
	counts := checkClassifiedAt(t, raw, logLines(t, *runTag), *runTag)
	t.Logf("classified SyncLoop lines per case: %v", counts)
	if *updateCluster {
		writeGzip(t, clusterJournal, raw)
	}
}

func containsMinus(xs []int) bool {
	for _, x := range xs {
		if x < 0 {
			return true
		}
	}
	return false
}

func livenessFailures(es []entry) int {
	n := 0
	for _, e := range es {
		if clusterSightings[2].match(e.Message) {
			n++
		}
	}
	return n
}

// clusterPage: the config and liveness cases (and pleg's, the container
// restarts) counted on the page; selecting config lights the exercise's ADD,
// RECONCILE, DELETE and REMOVE in the pane (fetched back if they left it),
// selecting liveness its failures.
func (e *e2e) clusterPage(ctx context.Context, es []entry) {
	t := e.t
	_, hist := e.history(e.base, 15*time.Second)
	demo := map[string]int{}
	for _, m := range hist {
		if m.Demo {
			demo[m.Line.Case]++
		}
	}
	cases := []string{"config", "liveness", "pleg"}
	counts, ok := pollJS(t, ctx, 60*time.Second, countsJS, func(c map[string]int) bool {
		for _, k := range cases {
			if c[k] <= demo[k] {
				return false
			}
		}
		return true
	})
	t.Logf("case counters: %v (demo lines among them: %v)", counts, demo)
	if !ok {
		e.screenshot(ctx, "cluster-counters")
		t.Fatalf("within 60 s the page counted no real line for one of %v", cases)
	}
	for _, c := range []struct {
		key  string
		want []sighting
	}{
		{"config", []sighting{clusterSightings[0], clusterSightings[1], clusterSightings[3], clusterSightings[4]}},
		{"liveness", []sighting{clusterSightings[2]}},
	} {
		sel := `#case-` + c.key + ` [data-case-select="` + c.key + `"]`
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatalf("click the %s chip: %v", c.key, err)
		}
		var lit []string
		_, ok := pollJS(t, ctx, 30*time.Second, paneJS, func(pane []paneLine) bool {
			lit = lit[:0]
			for _, l := range pane {
				if l.Sel {
					lit = append(lit, l.Text)
				}
			}
			return !containsMinus(firstSightings(texts(lit), c.want))
		})
		e.screenshot(ctx, "cluster-"+c.key+"-selected")
		if !ok {
			missing := []string{}
			for i, at := range firstSightings(texts(lit), c.want) {
				if at < 0 {
					missing = append(missing, c.want[i].name)
				}
			}
			t.Errorf("selecting %s lit %d lines in the pane, none of them %v", c.key, len(lit), missing)
		}
		// Unselect: the chip again.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatal(err)
		}
	}
	e.st.done("page: config, liveness lit")
}

func texts(ss []string) []entry {
	es := make([]entry, len(ss))
	for i, s := range ss {
		es[i].Message = s
	}
	return es
}

// clusterFired: the feed's record of what fired counts the exercise's lines
// in their cases, and reads each of them back from the stream.
func (e *e2e) clusterFired(es []entry) {
	t := e.t
	var fired struct {
		Cases map[string]struct {
			Count int      `json:"count"`
			Pods  []string `json:"pods"`
		} `json:"cases"`
	}
	getJSON(t, e.base+"/feeds/default/fired", &fired)
	t.Logf("fired: %+v", fired.Cases)
	for _, c := range []struct {
		key  string
		want []sighting
	}{
		{"config", []sighting{clusterSightings[0], clusterSightings[1], clusterSightings[3], clusterSightings[4]}},
		{"liveness", []sighting{clusterSightings[2]}},
	} {
		fc := fired.Cases[c.key]
		inJournal := 0
		for _, en := range es {
			for _, s := range c.want {
				if s.match(en.Message) {
					inJournal++
				}
			}
		}
		if fc.Count < inJournal {
			t.Errorf("fired %s: count %d, but the journal has %d of the exercise's lines of it", c.key, fc.Count, inJournal)
		}
		if !strings.Contains(strings.Join(fc.Pods, " "), "default/probe-me") {
			t.Errorf("fired %s names pods %v, not default/probe-me", c.key, fc.Pods)
		}
		resp, err := http.Get(e.base + "/feeds/default/fired/" + c.key + "/lines?limit=2000")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var lines []entry
		for l := range bytes.Lines(body) {
			var m struct {
				Line struct {
					Text string `json:"text"`
				} `json:"line"`
			}
			if json.Unmarshal(l, &m) == nil {
				lines = append(lines, entry{Message: m.Line.Text})
			}
		}
		for i, at := range firstSightings(lines, c.want) {
			if at < 0 {
				t.Errorf("the fired %s lines (%d) hold no %s line", c.key, len(lines), c.want[i].name)
			}
		}
	}
	e.st.done("fired record")
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func writeGzip(t *testing.T, name string, data []byte) {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s: %d entries, %d bytes", name, bytes.Count(data, []byte("\n")), b.Len())
}
