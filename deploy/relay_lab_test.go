//go:build cluster

package deploy

// The relay DaemonSet in the lab's one-node cluster (issue 37): the chart's
// relay part, rendered with the Helm SDK as the other tests here render it,
// applied with kubectl to the cluster `server/lab/lab.sh start --cluster`
// makes, from an image server/lab/relay-image.sh builds and imports (nothing
// is pulled); its pod runs on pair-worker, the node's own journalctl through
// a chroot into the host's root, and feeds a real `syncloop serve` on the
// host, whose page shows the kubelet's lines. Then the pod is deleted: the
// DaemonSet's next pod resumes from the cursor in its hostPath, and the
// server's record is the kubelet's journal entry for entry, none lost while
// no relay ran, none twice.
//
// It needs Linux, root and Chromium; a first run builds the lab's binaries
// (lab.sh: etcd, kube-apiserver, kubectl, kube-controller-manager,
// kube-scheduler, cached after; its log says how long each took), a warm run
// takes about 2 min. It takes the lab's lock (one lab at a time on a machine)
// and waits up to 30 min for it:
//
//	sudo go test -tags cluster -run TestRelayDaemonSetInLab -v -timeout 40m ./deploy/

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/browsertest"
	"github.com/syncloop/syncloop/server/relay"
)

const (
	labLockFile = "/tmp/syncloop-lab.lock" // one lab at a time on a machine
	labToken    = "lab-relay-token-0123456789"
	labTag      = "v1.31.0"
	relayNS     = "syncloop-relay"
	labNode     = "pair-worker"
)

// labRun is one run of the lab with the relay DaemonSet in it.
type labRun struct {
	t        *testing.T
	t0, last time.Time
	stages   []string
	dir      string            // the lab's directory
	kv       map[string]string // lab.sh start's output
	bin      string            // syncloop, built for the host
	state    string            // the relay's hostPath, on the host
	base     string            // the server's URL, as the pod reaches it
	server   *exec.Cmd
	art      string
}

func (r *labRun) stage(name string) {
	d := time.Since(r.last)
	r.last = time.Now()
	r.stages = append(r.stages, fmt.Sprintf("%-28s %6.1fs", name, d.Seconds()))
	r.t.Logf("stage %s: %.1fs", name, d.Seconds())
}

func TestRelayDaemonSetInLab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the lab needs root: sudo go test -tags cluster -run TestRelayDaemonSetInLab ./deploy/")
	}
	chromium := browsertest.Path(t)
	r := &labRun{t: t, t0: time.Now(), last: time.Now(), dir: "/tmp/syncloop-lab", art: labArtifacts(t)}
	r.lock()
	r.build()
	r.startLab()
	defer r.stopLab()
	image := r.relayImage()
	gw := r.podGateway()
	port := freePort(t)
	r.base = "http://" + net.JoinHostPort(gw, strconv.Itoa(port))
	r.state = filepath.Join(r.dir, "relay-state")
	os.RemoveAll(r.state) // a cursor of an earlier run's journal
	r.applyRelay(image)
	// The bridge (and so its address) exists once the pod's sandbox does.
	testwait.For(t, 2*time.Minute, "the pod network's gateway "+gw+" on the host", func() bool { return hasAddr(gw) })
	r.startServer(net.JoinHostPort(gw, strconv.Itoa(port)))
	defer r.stopServer()
	first := r.waitPod("")
	r.stage("relay pod running")

	stored := r.waitStored(func(s []storedLine) bool { return len(s) >= 20 }, 2*time.Minute, "20 lines from the relay pod")
	r.checkKubeletLines(stored)
	r.checkSocket()
	r.stage("lines in the feed")

	second := r.restartPod(first)
	r.stage("pod deleted, the next resumed")
	r.checkPage(chromium, second)
	r.stage("page shows the new pod's ADD")
	r.compareJournal()
	r.stage("feed is the journal")
	r.t.Logf("stages:\n  %s\n  %-28s %6.1fs", strings.Join(r.stages, "\n  "), "total", time.Since(r.t0).Seconds())
	_ = os.WriteFile(filepath.Join(r.art, "relay-daemonset-timings.txt"), []byte(strings.Join(r.stages, "\n")+"\n"), 0o644)
}

// lock takes the lab's lock (flock, as `flock /tmp/syncloop-lab.lock` does),
// waiting up to 30 min for a lab another run holds; it is released when the
// test's process ends, after the lab is stopped.
func (r *labRun) lock() {
	f, err := os.OpenFile(labLockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { f.Close() })
	if !testwait.UntilEvery(30*time.Minute, time.Second, func() bool {
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	}) {
		r.t.Fatalf("another lab held %s for 30 min", labLockFile)
	}
	r.t.Cleanup(func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) })
	r.stage("lab lock")
}

func (r *labRun) build() {
	r.bin = filepath.Join(r.t.TempDir(), "syncloop")
	cmd := exec.Command("go", "build", "-o", r.bin, ".")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("go build: %v\n%s", err, out)
	}
	r.stage("build syncloop")
}

// script runs one of server/lab's scripts and parses its key=value lines.
func (r *labRun) script(name string, args ...string) (map[string]string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(filepath.Join("..", "server", "lab", name), args...)
	cmd.Stdout = &out
	cmd.Stderr = io.MultiWriter(&errb, labLog(r.t, r.art, name))
	// The lab's own scenario (static pods edited on a timer) is not this test's.
	cmd.Env = append(os.Environ(), "LAB_UPDATE_AFTER=0", "LAB_REMOVE_AFTER=0", "LAB_READD_AFTER=0")
	err := cmd.Run()
	kv := map[string]string{}
	for l := range strings.Lines(out.String()) {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
			kv[k] = v
		}
	}
	if err != nil {
		return kv, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(errb.String(), 40))
	}
	return kv, nil
}

func (r *labRun) startLab() {
	kv, err := r.script("lab.sh", "start", "--dir", r.dir, "--cluster", "--controllers")
	r.kv = kv
	if err != nil {
		r.stopLab()
		r.t.Fatal(err)
	}
	if kv["kubeconfig"] == "" {
		r.t.Fatalf("lab.sh start --cluster printed no kubeconfig: %v", kv)
	}
	r.stage("lab start (cluster, controllers)")
}

func (r *labRun) stopLab() {
	if _, err := r.script("lab.sh", "stop", "--dir", r.dir); err != nil {
		r.t.Errorf("lab stop: %v", err)
	}
	if r.state != "" {
		os.RemoveAll(r.state)
	}
}

func (r *labRun) kubectl(args ...string) ([]byte, error) {
	kc := r.kv["kubectl"]
	if kc == "" {
		kc = filepath.Join(os.Getenv("HOME"), ".cache", "syncloop", "lab", "kubectl-"+labTag)
	}
	cmd := exec.Command(kc, append([]string{"--kubeconfig", r.kv["kubeconfig"]}, args...)...)
	// Its discovery cache in the lab's directory, not the user's ~/.kube.
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(r.dir, "cluster", "kube-cache"))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out, nil
}

func (r *labRun) relayImage() string {
	kv, err := r.script("relay-image.sh", "--dir", r.dir)
	if err != nil || kv["image"] == "" {
		r.t.Fatalf("relay-image.sh: %v (%v)", err, kv)
	}
	r.stage("relay image built, imported")
	return kv["image"]
}

// applyRelay renders the chart with the lab's values and applies its relay
// part (the namespace, the token's Secret, the DaemonSet): the site itself
// runs on the host, as `syncloop serve`.
func (r *labRun) applyRelay(image string) {
	repo, tag, _ := strings.Cut(image, ":")
	files, err := render(map[string]any{
		"token": map[string]any{"value": labToken},
		"relay": map[string]any{
			"image":    map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
			"server":   r.base,
			"stateDir": r.state,
		},
	})
	if err != nil {
		r.t.Fatalf("render: %v", err)
	}
	o := decode(r.t, map[string]string{"relay.yaml": files["relay.yaml"]})
	if got := o.kinds(); strings.Join(got, ",") != "DaemonSet,Namespace,Secret" {
		r.t.Fatalf("the chart's relay part holds %v", got)
	}
	name := filepath.Join(r.art, "relay-daemonset.yaml")
	if err := os.WriteFile(name, []byte(files["relay.yaml"]), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if out, err := r.kubectl("apply", "-f", name); err != nil {
		r.t.Fatal(err)
	} else {
		r.t.Logf("kubectl apply: %s", bytes.TrimSpace(out))
	}
	r.stage("chart rendered, applied")
}

// podGateway is the host's address on the lab's pod network: the gateway
// of the bridge the lab's CNI configuration names.
func (r *labRun) podGateway() string {
	if gw := r.kv["pod_gateway"]; gw != "" {
		return gw
	}
	confs, _ := filepath.Glob(filepath.Join(r.dir, "cni", "*.conf*"))
	for _, c := range confs {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		if gw := bridgeGateway(b); gw != "" {
			return gw
		}
	}
	r.t.Fatalf("no bridge network in %s/cni (%v): the relay pod cannot reach the host", r.dir, confs)
	return ""
}

// bridgeGateway reads a CNI conf or conflist: its bridge plugin's gateway,
// given or the subnet's first address.
func bridgeGateway(b []byte) string {
	type plugin struct {
		Type string `json:"type"`
		IPAM struct {
			Subnet  string `json:"subnet"`
			Gateway string `json:"gateway"`
			Ranges  [][]struct {
				Subnet  string `json:"subnet"`
				Gateway string `json:"gateway"`
			} `json:"ranges"`
		} `json:"ipam"`
	}
	var conf struct {
		plugin
		Plugins []plugin `json:"plugins"`
	}
	if json.Unmarshal(b, &conf) != nil {
		return ""
	}
	for _, p := range append(conf.Plugins, conf.plugin) {
		if p.Type != "bridge" {
			continue
		}
		subnet, gw := p.IPAM.Subnet, p.IPAM.Gateway
		for _, rs := range p.IPAM.Ranges {
			for _, rg := range rs {
				if subnet == "" {
					subnet, gw = rg.Subnet, rg.Gateway
				}
			}
		}
		if gw != "" {
			return gw
		}
		if _, n, err := net.ParseCIDR(subnet); err == nil && n.IP.To4() != nil {
			ip := n.IP.To4()
			return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1).String()
		}
	}
	return ""
}

func hasAddr(ip string) bool {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.String() == ip {
			return true
		}
	}
	return false
}

func (r *labRun) startServer(addr string) {
	cache := r.t.TempDir()
	copyReadings(r.t, cache)
	logf := labLog(r.t, r.art, "serve")
	r.server = exec.Command(r.bin, "serve", "--addr", addr, "--tag", labTag, "--token", labToken,
		"--cache-dir", cache, "--data-dir", filepath.Join(cache, "data"))
	r.server.Stdout, r.server.Stderr = logf, logf
	if err := r.server.Start(); err != nil {
		r.t.Fatal(err)
	}
	testwait.For(r.t, 2*time.Minute, "the server's /healthz", func() bool {
		resp, err := http.Get(r.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	r.stage("server up on the pod network")
}

func (r *labRun) stopServer() {
	if r.server != nil && r.server.Process != nil {
		_ = r.server.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = r.server.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = r.server.Process.Kill()
			<-done
		}
	}
}

// copyReadings seeds the server's cache with the cached Reading of the
// lab's tag, when there is one, so that it need not extract it again.
func copyReadings(t *testing.T, cache string) {
	home, err := os.UserCacheDir()
	if err != nil {
		return
	}
	files, _ := filepath.Glob(filepath.Join(home, "syncloop", "readings", labTag, "*.json"))
	dst := filepath.Join(cache, "readings", labTag)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644)
		}
	}
}

// relayPod is what the test reads of a relay pod.
type relayPod struct {
	Metadata struct {
		Name              string  `json:"name"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Phase             string `json:"phase"`
		ContainerStatuses []struct {
			Ready        bool `json:"ready"`
			RestartCount int  `json:"restartCount"`
			State        struct {
				Waiting *struct{ Reason, Message string } `json:"waiting"`
			} `json:"state"`
			VolumeMounts []struct {
				MountPath         string `json:"mountPath"`
				RecursiveReadOnly string `json:"recursiveReadOnly"`
			} `json:"volumeMounts"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// waitPod waits for the DaemonSet's pod (not the one named not) to run on
// pair-worker, its container ready and never restarted, and returns its name.
func (r *labRun) waitPod(not string) string {
	var pods struct{ Items []relayPod }
	var last string
	ok := testwait.UntilEvery(3*time.Minute, time.Second, func() bool {
		out, err := r.kubectl("-n", relayNS, "get", "pods", "-l", "app.kubernetes.io/component=relay", "-o", "json")
		if err != nil || json.Unmarshal(out, &pods) != nil {
			last = fmt.Sprint(err)
			return false
		}
		last = ""
		for _, p := range pods.Items {
			last += fmt.Sprintf("\n  %s on %q: %s", p.Metadata.Name, p.Spec.NodeName, p.Status.Phase)
			for _, c := range p.Status.ContainerStatuses {
				if w := c.State.Waiting; w != nil {
					last += fmt.Sprintf(", waiting: %s: %s", w.Reason, w.Message)
				}
			}
		}
		for _, p := range pods.Items {
			if p.Metadata.Name != not && p.Metadata.DeletionTimestamp == nil && p.Status.Phase == "Running" &&
				len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
				return true
			}
		}
		return false
	})
	if !ok {
		ev, _ := r.kubectl("-n", relayNS, "get", "events")
		r.t.Fatalf("no relay pod running within 3 min; pods:%s\nevents:\n%s", last, ev)
	}
	for _, p := range pods.Items {
		if p.Metadata.Name != not && p.Metadata.DeletionTimestamp == nil && p.Status.Phase == "Running" {
			if p.Spec.NodeName != labNode {
				r.t.Errorf("the relay pod %s runs on %q, want %s", p.Metadata.Name, p.Spec.NodeName, labNode)
			}
			if n := p.Status.ContainerStatuses[0].RestartCount; n != 0 {
				r.t.Errorf("the relay pod %s restarted %d times", p.Metadata.Name, n)
			}
			// IfPossible: Enabled where the runtime can, else Disabled (containerd 1.6).
			for _, m := range p.Status.ContainerStatuses[0].VolumeMounts {
				if m.MountPath == "/host" {
					r.t.Logf("the relay pod %s: /host recursive read-only: %q", p.Metadata.Name, m.RecursiveReadOnly)
				}
			}
			return p.Metadata.Name
		}
	}
	return ""
}

// storedLine is one entry of the feed's export (GET /feeds/default/export).
type storedLine struct {
	Cursor, Unit, Message string
}

func (r *labRun) stored() []storedLine {
	resp, err := http.Get(r.base + "/feeds/default/export")
	if err != nil {
		r.t.Fatalf("export: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var out []storedLine
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var j struct {
			Cursor  string `json:"__CURSOR"`
			Unit    string `json:"_SYSTEMD_UNIT"`
			Message any    `json:"MESSAGE"`
		}
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			r.t.Fatalf("export line %d: %v: %.300q", len(out)+1, err, sc.Bytes())
		}
		out = append(out, storedLine{j.Cursor, j.Unit, fmt.Sprint(j.Message)})
	}
	return out
}

func (r *labRun) waitStored(ok func([]storedLine) bool, d time.Duration, what string) []storedLine {
	var s []storedLine
	if !testwait.UntilEvery(d, 500*time.Millisecond, func() bool { s = r.stored(); return ok(s) }) {
		logs, err := r.kubectl("-n", relayNS, "logs", "-l", "app.kubernetes.io/component=relay", "--tail=40")
		r.t.Fatalf("the feed holds %d lines, not %s, within %v; the relay's log (%v):\n%s", len(s), what, d, err, logs)
	}
	return s
}

// checkKubeletLines: what the pod sent is the node's kubelet journal, read
// by the host's journalctl through the chroot (journald's own JSON, with
// cursors), not the pod's own output.
func (r *labRun) checkKubeletLines(s []storedLine) {
	for i, l := range s {
		if l.Unit != "kubelet.service" || !strings.HasPrefix(l.Cursor, "s=") {
			r.t.Fatalf("stored line %d is not the kubelet's journal entry: unit %q, cursor %q, %.200q", i+1, l.Unit, l.Cursor, l.Message)
		}
	}
}

// checkSocket reads the feed as the page does, over its websocket: the
// kubelet's lines are there, not the demo's.
func (r *labRun) checkSocket() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(r.base, "http") + "/feeds/default/ws"
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {r.base}}})
	if err != nil {
		r.t.Fatalf("dial %s: %v", url, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	real := 0
	for real < 10 {
		_, b, err := conn.Read(ctx)
		if err != nil {
			r.t.Fatalf("the page's websocket gave %d of the kubelet's lines: %v", real, err)
		}
		for part := range strings.SplitSeq(string(b), "\n") {
			var m struct {
				Line *json.RawMessage `json:"line"`
				Demo bool             `json:"demo"`
			}
			if json.Unmarshal([]byte(part), &m) == nil && m.Line != nil && !m.Demo {
				real++
			}
		}
	}
}

// restartPod deletes the relay pod (gracefully: the relay keeps its last
// acknowledged cursor in its hostPath as it stops) and waits for the
// DaemonSet's next one, which must resume after that cursor: the kubelet's
// lines of the gap (the old pod's DELETE and REMOVE, the new pod's ADD,
// logged while no relay ran) reach the feed, and nothing is sent twice.
func (r *labRun) restartPod(old string) string {
	if _, err := r.kubectl("-n", relayNS, "delete", "pod", old, "--wait=true"); err != nil {
		r.t.Fatal(err)
	}
	st, err := relay.LoadState(filepath.Join(r.state, "relay.state"))
	if err != nil || st.Cursor == "" {
		r.t.Fatalf("the relay's state on the host, after its pod stopped: %+v, %v", st, err)
	}
	before := r.stored()
	at := slices.IndexFunc(before, func(l storedLine) bool { return l.Cursor == st.Cursor })
	if at < 0 {
		r.t.Fatalf("the hostPath cursor %q is no line the server stored (%d lines)", st.Cursor, len(before))
	}
	// Lines the server stored but whose acknowledgement the stopping relay
	// did not read are sent again by the next one, and dropped as stored.
	r.t.Logf("the old pod stopped: %d lines stored, its cursor the %dth", len(before), at+1)
	next := r.waitPod(old)
	r.t.Logf("the DaemonSet's next pod: %s", next)
	logged := func(s []storedLine, what, pod string) bool {
		for _, l := range s[at+1:] {
			if strings.Contains(l.Message, what) && strings.Contains(l.Message, pod) {
				return true
			}
		}
		return false
	}
	after := r.waitStored(func(s []storedLine) bool { return len(s) > at+1 && logged(s, "SyncLoop ADD", next) }, 2*time.Minute,
		"the kubelet's SyncLoop ADD of "+next+" (logged before its relay started)")
	if !logged(after, "SyncLoop REMOVE", old) {
		r.t.Errorf("the kubelet's SyncLoop REMOVE of %s, logged while no relay ran, is not in the feed", old)
	}
	return next
}

// compareJournal: the feed is the kubelet's journal from its first stored
// entry to its last, entry for entry, in order: none lost across the pod's
// restart, none twice.
func (r *labRun) compareJournal() {
	s := r.stored()
	out, err := exec.Command("journalctl", "-u", "kubelet", "--cursor="+s[0].Cursor, "-o", "json", "--all", "--no-pager").Output()
	if err != nil {
		r.t.Fatalf("journalctl: %v", err)
	}
	var journal []string
	for l := range strings.Lines(string(out)) {
		var e struct {
			Cursor string `json:"__CURSOR"`
		}
		if json.Unmarshal([]byte(l), &e) == nil {
			journal = append(journal, e.Cursor)
		}
		if e.Cursor == s[len(s)-1].Cursor {
			break
		}
	}
	seen := map[string]int{}
	for i, l := range s {
		if j, dup := seen[l.Cursor]; dup {
			r.t.Errorf("stored line %d is line %d again: %s", i+1, j+1, l.Cursor)
		}
		seen[l.Cursor] = i
	}
	if len(journal) != len(s) {
		r.t.Errorf("the journal has %d entries from the feed's first to its last, the feed %d", len(journal), len(s))
	}
	for i := range min(len(journal), len(s)) {
		if journal[i] != s[i].Cursor {
			r.t.Fatalf("entry %d: the journal's %s, the feed's %s", i+1, journal[i], s[i].Cursor)
		}
	}
	r.t.Logf("the feed is the kubelet's journal: %d entries, across the relay pod's restart", len(s))
}

// checkPage: Chromium shows, in the live pane of the lab tag's page, the
// kubelet's ADD of the relay's new pod, which the restarted relay sent.
func (r *labRun) checkPage(chromium, pod string) {
	ctx := browsertest.New(r.t, chromium, 2*time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(r.base+"/k8s/"+labTag+"/")); err != nil {
		r.t.Fatalf("open the page: %v", err)
	}
	js := fmt.Sprintf(`[...document.querySelectorAll('#live li.ll')].filter(li => li.textContent.includes(%q)).length`, pod)
	ok := testwait.UntilEvery(60*time.Second, 500*time.Millisecond, func() bool {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		return err == nil && n > 0
	})
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		_ = os.WriteFile(filepath.Join(r.art, "relay-daemonset-page.png"), png, 0o644)
	}
	if !ok {
		r.t.Fatalf("the page's live pane shows no line naming %s within 60 s", pod)
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func labArtifacts(t *testing.T) string {
	dir := os.Getenv("SYNCLOOP_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "artifacts")
	}
	dir = filepath.Join(dir, "lab")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func labLog(t *testing.T, art, name string) io.Writer {
	f, err := os.OpenFile(filepath.Join(art, "relay-daemonset-"+name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
