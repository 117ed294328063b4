package lab

// The course's exercise on the lab's cluster (issue 37): its commands as the site
// serves them (content/notes/config.md), and the recorded journal of a run of them
// (TestCluster, cluster_test.go, behind the cluster build tag) checked here in every
// `go test`.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// clusterTag is the tag TestCluster runs and recorded at: one no other test
// builds a kubelet for (the lab's default is labTag; testdata has v1.33.0).
const clusterTag = "v1.32.0"

// clusterJournal is TestCluster's journal (`journalctl -u kubelet -o json --all`
// from the lab's cursor), recorded with -update-cluster.
const clusterJournal = "testdata/kubelet-" + clusterTag + "-cluster-journal.json.gz"

// seedCommands finds the exercise's two kubectl commands in a text (the
// config note's Markdown, or its code block as the page shows it): the
// `kubectl … run probe-me` line with the lines it continues on (a trailing
// backslash), and `kubectl delete pod probe-me --now`, each as written.
func seedCommands(text string) (run, del string, err error) {
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		switch {
		case run == "" && strings.HasPrefix(l, "kubectl ") && strings.Contains(l, " run probe-me "):
			cmd := []string{lines[i]}
			for strings.HasSuffix(strings.TrimSpace(lines[i]), `\`) && i+1 < len(lines) {
				i++
				cmd = append(cmd, lines[i])
			}
			run = strings.Join(cmd, "\n")
		case del == "" && strings.HasPrefix(l, "kubectl delete pod probe-me"):
			del = l
		}
	}
	if run == "" || del == "" {
		return run, del, errors.New("no `kubectl … run probe-me` and `kubectl delete pod probe-me` lines in the text")
	}
	return run, del, nil
}

// clusterSightings are what the exercise makes the kubelet log on the lab's
// cluster, in this order.
var clusterSightings = []sighting{
	{"ADD from the API server", contains(`"SyncLoop ADD" source="api" pods=["default/probe-me"]`)},
	{"RECONCILE", contains(`"SyncLoop RECONCILE" source="api" pods=["default/probe-me"]`)},
	{"liveness failure", contains(`"SyncLoop (probe)" probe="liveness" status="unhealthy" pod="default/probe-me"`)},
	{"DELETE", contains(`"SyncLoop DELETE" source="api" pods=["default/probe-me"]`)},
	{"REMOVE", contains(`"SyncLoop REMOVE" source="api" pods=["default/probe-me"]`)},
}

// TestSeedCommands: the config note serves the exercise's commands, and they
// name what the lab's cluster has: its node, and the image it makes.
func TestSeedCommands(t *testing.T) {
	md, err := os.ReadFile("../../content/notes/config.md")
	if err != nil {
		t.Fatal(err)
	}
	run, del, err := seedCommands(string(md))
	if err != nil {
		t.Fatal(err)
	}
	sh, err := os.ReadFile("cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"nodeName":"pair-worker"`, "--image=registry.k8s.io/e2e-test-images/agnhost:2.47",
		`"args":["netexec","--http-port=8080"]`, `"port":8081`} {
		if !strings.Contains(run, want) {
			t.Errorf("the exercise's run command lacks %s:\n%s", want, run)
		}
	}
	for _, want := range []string{"NODE=pair-worker", "AGNHOST_IMAGE=registry.k8s.io/e2e-test-images/agnhost:2.47"} {
		if !bytes.Contains(sh, []byte("\n\t"+want+"\n")) && !bytes.Contains(sh, []byte("\n"+want+"\n")) {
			t.Errorf("cluster.sh does not set %s, which the exercise's command names", want)
		}
	}
	if del != "kubectl delete pod probe-me --now" {
		t.Errorf("delete command %q", del)
	}
	// As the shell reads it: one command of the run line and its continuation.
	out, err := exec.Command("bash", "-n", "-c", run).CombinedOutput()
	if err != nil {
		t.Errorf("bash cannot parse the run command: %v\n%s", err, out)
	}
}

func TestSeedCommandsParse(t *testing.T) {
	run, del, err := seedCommands("x\n  kubectl run probe-me --image=i \\\n   --overrides='{}'\nkubectl get pods\nkubectl delete pod probe-me --now\n")
	if err != nil || run != "  kubectl run probe-me --image=i \\\n   --overrides='{}'" || del != "kubectl delete pod probe-me --now" {
		t.Errorf("got %q, %q, %v", run, del, err)
	}
	if _, _, err := seedCommands("kubectl delete pod probe-me --now\n"); err == nil {
		t.Error("a text without the run command parsed")
	}
}

// TestRecordedCluster classifies the recorded journal of the exercise on the
// lab's cluster: the API server's ADD, RECONCILE, the liveness failures, DELETE
// and REMOVE are all there, in that order, each classified to its case at the
// kubelet's tag (config; liveness).
func TestRecordedCluster(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: builds syncloop and loads the " + clusterTag + " Reading")
	}
	raw := gunzip(t, clusterJournal)
	es, err := parseJournal(raw)
	if err != nil {
		t.Fatal(err)
	}
	first := firstSightings(es, clusterSightings)
	for i, at := range first {
		if at < 0 {
			t.Errorf("no %s line in %s", clusterSightings[i].name, clusterJournal)
		} else if i > 0 && at < first[i-1] {
			t.Errorf("the first %s (entry %d) comes before the first %s (entry %d)", clusterSightings[i].name, at, clusterSightings[i-1].name, first[i-1])
		}
	}
	failures := 0
	for _, e := range es {
		if clusterSightings[2].match(e.Message) {
			failures++
		}
	}
	if failures < 2 {
		t.Errorf("%d liveness failures of default/probe-me, want 2 or more (failureThreshold 2)", failures)
	}
	counts := checkClassifiedAt(t, raw, logLines(t, clusterTag), clusterTag)
	t.Logf("classified SyncLoop lines per case: %v", counts)
	byCase := classifiedCases(t, raw, clusterTag)
	for _, s := range clusterSightings {
		want := "config"
		if strings.Contains(s.name, "liveness") {
			want = "liveness"
		}
		if got := byCase[s.name]; len(got) == 0 || strings.Join(got, ",") != strings.Repeat(want+",", len(got)-1)+want {
			t.Errorf("%s lines classified %v, want each %s", s.name, got, want)
		}
	}
}

// classifiedCases runs data through syncloop classify at tag and returns, per
// cluster sighting, the case of each line that matches it.
func classifiedCases(t *testing.T, data []byte, tag string) map[string][]string {
	t.Helper()
	bin, err := syncloop()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "classify", "--tag", tag, "--format", "json")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("syncloop classify: %v", err)
	}
	got := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		var r struct {
			Case *string
			Text string // the kubelet's own line
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		for _, s := range clusterSightings {
			if s.match(r.Text) {
				c := "(none)"
				if r.Case != nil {
					c = *r.Case
				}
				got[s.name] = append(got[s.name], c)
			}
		}
	}
	return got
}
