// Package deploy holds the Kubernetes deployment of syncloop: the Helm
// chart (helm/syncloop) and a kustomize base made from it
// (kustomize/base). Its tests render the chart with the Helm SDK and
// decode every object strictly as the k8s.io/api type of its kind: a
// field Kubernetes does not know fails, as a typo in a template would be
// dropped silently by the API server's lenient decoding.
package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/syncloop/syncloop/server/relay"
)

var update = flag.Bool("update", false, "rewrite kustomize/base from the chart rendered with kustomizeValues")

// objects is a rendered chart, decoded: each object by kind and name.
type objects struct {
	byKind map[string][]any
}

func (o objects) kinds() []string {
	var ks []string
	for k, v := range o.byKind {
		for range v {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}

// one is the only object of kind K; it fails the test when there is not
// exactly one.
func one[K any](t *testing.T, o objects, kind string) *K {
	t.Helper()
	if len(o.byKind[kind]) != 1 {
		t.Fatalf("%d objects of kind %s, want 1 (kinds: %v)", len(o.byKind[kind]), kind, o.kinds())
	}
	return o.byKind[kind][0].(*K)
}

// newOf is a new object of the k8s.io/api type of kind.
func newOf(kind string) (any, bool) {
	switch kind {
	case "Namespace":
		return new(corev1.Namespace), true
	case "Secret":
		return new(corev1.Secret), true
	case "Service":
		return new(corev1.Service), true
	case "StatefulSet":
		return new(appsv1.StatefulSet), true
	case "DaemonSet":
		return new(appsv1.DaemonSet), true
	case "PodDisruptionBudget":
		return new(policyv1.PodDisruptionBudget), true
	case "Ingress":
		return new(networkingv1.Ingress), true
	}
	return nil, false
}

// decode decodes every YAML document of files (name → text) strictly as
// its kind's type: unknown or duplicated fields fail the test.
func decode(t *testing.T, files map[string]string) objects {
	t.Helper()
	o, err := decodeFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func decodeFiles(files map[string]string) (objects, error) {
	o := objects{byKind: map[string][]any{}}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(files[name], -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				return o, fmt.Errorf("%s, document %d: %v\n%s", name, i+1, err, doc)
			}
			obj, ok := newOf(tm.Kind)
			if !ok {
				return o, fmt.Errorf("%s, document %d: kind %q (%s) is not one the test knows", name, i+1, tm.Kind, tm.APIVersion)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				return o, fmt.Errorf("%s, document %d (%s): not a strict %T: %v\n%s", name, i+1, tm.Kind, obj, err, doc)
			}
			o.byKind[tm.Kind] = append(o.byKind[tm.Kind], obj)
		}
	}
	return o, nil
}

// TestDecodeIsStrict: what the API server would drop silently fails here.
func TestDecodeIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"a misspelt field":  "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  selectr: {a: b}\n",
		"a field twice":     "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  type: ClusterIP\n  type: NodePort\n",
		"a field misplaced": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          readOnly: true\n",
		"an unknown kind":   "apiVersion: v1\nkind: Pdo\nmetadata: {name: p}\n",
	} {
		if _, err := decodeFiles(map[string]string{"x.yaml": doc}); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := decodeFiles(map[string]string{"x.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  selector: {a: b}\n"}); err != nil {
		t.Errorf("a good Service: %v", err)
	}
}

func stripComments(doc string) string {
	var b strings.Builder
	for l := range strings.Lines(doc) {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// render renders the chart as `helm template syncloop helm/syncloop
// --namespace syncloop` with vals over its values.yaml.
func render(vals map[string]any) (map[string]string, error) {
	chrt, err := loader.Load(filepath.Join("helm", "syncloop"))
	if err != nil {
		return nil, err
	}
	opts := common.ReleaseOptions{Name: "syncloop", Namespace: "syncloop", Revision: 1, IsInstall: true}
	rv, err := util.ToRenderValues(chrt, vals, opts, common.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	out, err := engine.Render(chrt, rv)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for name, text := range out {
		files[strings.TrimPrefix(name, "syncloop/templates/")] = text
	}
	return files, nil
}

func mustRender(t *testing.T, vals map[string]any) (map[string]string, objects) {
	t.Helper()
	files, err := render(vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return files, decode(t, files)
}

func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

func probePath(p *corev1.Probe) string {
	if p == nil || p.HTTPGet == nil {
		return ""
	}
	return p.HTTPGet.Path
}

// tokenRef is where the container's SYNCLOOP_TOKEN comes from.
func tokenRef(c corev1.Container) *corev1.SecretKeySelector {
	for _, e := range c.Env {
		if e.Name == "SYNCLOOP_TOKEN" && e.ValueFrom != nil {
			return e.ValueFrom.SecretKeyRef
		}
	}
	return nil
}

func secretNamed(o objects, ns, name string) *corev1.Secret {
	for _, s := range o.byKind["Secret"] {
		if s := s.(*corev1.Secret); s.Namespace == ns && s.Name == name {
			return s
		}
	}
	return nil
}

func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// TestChartDefaults: the chart as installed with no values, what a course
// operator gets.
func TestChartDefaults(t *testing.T) {
	_, o := mustRender(t, nil)
	if got, want := o.kinds(), []string{"DaemonSet", "Namespace", "PodDisruptionBudget", "Secret", "Secret", "Service", "Service", "StatefulSet"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	t.Run("site", func(t *testing.T) { checkSite(t, o) })
	t.Run("relay", func(t *testing.T) { checkRelay(t, o) })
}

func checkSite(t *testing.T, o objects) {
	sts := one[appsv1.StatefulSet](t, o, "StatefulSet")
	if sts.Namespace != "syncloop" || sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
		t.Errorf("StatefulSet %s/%s, replicas %v", sts.Namespace, sts.Name, sts.Spec.Replicas)
	}
	pod := sts.Spec.Template
	c := container(t, pod.Spec, "syncloop")
	if got := []string{probePath(c.StartupProbe), probePath(c.ReadinessProbe), probePath(c.LivenessProbe)}; !reflect.DeepEqual(got, []string{"/livez", "/healthz", "/livez"}) {
		t.Errorf("probes (startup, readiness, liveness) on %v", got)
	}
	if p := c.StartupProbe; p.PeriodSeconds*p.FailureThreshold < 600 {
		t.Errorf("the startup probe gives up after %d s: opening a large store takes longer", p.PeriodSeconds*p.FailureThreshold)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		t.Error("no preStop sleep: the Service sends to a pod that is closing")
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g < 15 {
		t.Errorf("terminationGracePeriodSeconds %v: the drain (5 s sleep, 5 s of requests) needs more", g)
	}
	for _, want := range []string{"serve", "--data-dir=/data", "--cache-dir=/cache", "--addr=:8080"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %q lack %q", c.Args, want)
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || mounts["/data"].Name != sts.Spec.VolumeClaimTemplates[0].Name || mounts["/cache"].Name != mounts["/data"].Name ||
		mounts["/data"].SubPath == mounts["/cache"].SubPath {
		t.Errorf("the pod's volume: claims %d, mounts %+v", len(sts.Spec.VolumeClaimTemplates), mounts)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("the site's root filesystem is writable")
	}
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("the site's pods get an API token they never use")
	}
	ref := tokenRef(c)
	if ref == nil || secretNamed(o, "syncloop", ref.Name) == nil || secretNamed(o, "syncloop", ref.Name).StringData[ref.Key] == "" {
		t.Fatalf("the site's token: from %+v, no such Secret in syncloop", ref)
	}
	var headless, plain *corev1.Service
	for _, s := range o.byKind["Service"] {
		s := s.(*corev1.Service)
		if !selects(s.Spec.Selector, pod.Labels) {
			t.Errorf("Service %s selects %v, not the site's pods %v", s.Name, s.Spec.Selector, pod.Labels)
		}
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = s
		} else {
			plain = s
		}
	}
	if headless == nil || plain == nil || sts.Spec.ServiceName != headless.Name {
		t.Errorf("the StatefulSet's serviceName %q: want the headless Service", sts.Spec.ServiceName)
	}
	pdb := one[policyv1.PodDisruptionBudget](t, o, "PodDisruptionBudget")
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || !selects(pdb.Spec.Selector.MatchLabels, pod.Labels) {
		t.Errorf("PDB maxUnavailable %v, selector %v", pdb.Spec.MaxUnavailable, pdb.Spec.Selector)
	}
}

func checkRelay(t *testing.T, o objects) {
	ns := one[corev1.Namespace](t, o, "Namespace")
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("the relay's namespace labels %v", ns.Labels)
	}
	ds := one[appsv1.DaemonSet](t, o, "DaemonSet")
	if ds.Namespace != ns.Name {
		t.Errorf("DaemonSet in %q, not the relay's namespace %q", ds.Namespace, ns.Name)
	}
	spec := ds.Spec.Template.Spec
	c := container(t, spec, "relay")
	// A pod that mounts the host's root holds no API token it does not
	// use, and keeps the runtime's seccomp profile (chroot is allowed with
	// CAP_SYS_CHROOT).
	if a := spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("the relay's pods get an API token they never use")
	}
	if sc := spec.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("the relay's seccomp profile: %+v", spec.SecurityContext)
	}
	if !slices.Contains(c.Args, "--cmd=chroot /host journalctl -u kubelet -f -o json --all") || !slices.Contains(c.Args, "--state=/state/relay.state") ||
		!slices.Contains(c.Args, "--server=http://syncloop.syncloop.svc:80") {
		t.Errorf("relay args %q", c.Args)
	}
	// The command is one the relay resumes by cursor after a restart.
	for _, a := range c.Args {
		if cmd, ok := strings.CutPrefix(a, "--cmd="); ok {
			resumed, err := relay.ResumeCommand(cmd, "s=0a;i=1f;b=0b;m=1;t=1;x=1")
			if !relay.IsJournalctl(cmd) || err != nil || !strings.HasSuffix(resumed, " '--after-cursor=s=0a;i=1f;b=0b;m=1;t=1;x=1' --no-tail") {
				t.Errorf("the relay's command %q does not resume by cursor: %q %v", cmd, resumed, err)
			}
		}
	}
	tolerated := false
	for _, tol := range spec.Tolerations {
		tolerated = tolerated || (tol.Key == "node-role.kubernetes.io/control-plane" && tol.Operator == corev1.TolerationOpExists && tol.Effect == corev1.TaintEffectNoSchedule)
	}
	if !tolerated {
		t.Errorf("tolerations %+v: not control-plane nodes", spec.Tolerations)
	}
	hostPaths := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	want := map[string]string{"/host": "/", "/var/log/journal": "/var/log/journal", "/run/log/journal": "/run/log/journal", "/etc/machine-id": "/etc/machine-id"}
	for _, m := range c.VolumeMounts {
		host, isHost := hostPaths[m.Name]
		if m.MountPath == "/host" {
			// A plain read-only bind leaves the host's other mounts
			// writable under it; containerd refuses HostToContainer on a
			// host whose / is private, and the API server refuses it
			// beside recursiveReadOnly.
			if m.RecursiveReadOnly == nil || *m.RecursiveReadOnly != corev1.RecursiveReadOnlyIfPossible || (m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone) {
				t.Errorf("/host: recursiveReadOnly %v, mountPropagation %v; want IfPossible and none", m.RecursiveReadOnly, m.MountPropagation)
			}
		}
		if w, ok := want[m.MountPath]; ok {
			if !isHost || host != w || !m.ReadOnly {
				t.Errorf("%s: from host %q (%v), read-only %v; want %s read-only", m.MountPath, host, isHost, m.ReadOnly, w)
			}
			delete(want, m.MountPath)
		} else if m.MountPath == "/state" {
			if !isHost || host != "/var/lib/syncloop-relay" || m.ReadOnly {
				t.Errorf("the cursor's state: host %q, read-only %v", host, m.ReadOnly)
			}
			delete(want, "/state")
		}
	}
	if len(want) > 0 {
		t.Errorf("not mounted: %v", want)
	}
	checkRelayExec(t, c)
	ref := tokenRef(c)
	site := tokenRef(container(t, one[appsv1.StatefulSet](t, o, "StatefulSet").Spec.Template.Spec, "syncloop"))
	rs, ss := secretNamed(o, ds.Namespace, ref.Name), secretNamed(o, "syncloop", site.Name)
	if rs == nil || ss == nil || rs.StringData[ref.Key] != ss.StringData[site.Key] {
		t.Errorf("the relay's token (Secret %s/%s) is not the site's (%s)", ds.Namespace, ref.Name, site.Name)
	}
}

// checkRelayExec: the relay's container runs the image's syncloop whatever
// the image's entrypoint (the lab's image has none), and its chrooted
// command finds the host's journalctl.
func checkRelayExec(t *testing.T, c corev1.Container) {
	t.Helper()
	df, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stage := regexp.MustCompile(`(?s)FROM [^\n]* AS relay\n(.*?)(\nFROM |$)`).FindSubmatch(df)
	if len(c.Command) != 1 || stage == nil || !strings.Contains(string(stage[1]), "COPY --from=build /out/syncloop "+c.Command[0]+"\n") {
		t.Errorf("the relay's command %q is not where the Dockerfile's relay stage puts syncloop", c.Command)
	}
	path := ""
	for _, e := range c.Env {
		if e.Name == "PATH" {
			path = e.Value
		}
	}
	if dirs := strings.Split(path, ":"); !slices.Contains(dirs, "/usr/bin") || !slices.Contains(dirs, "/bin") {
		t.Errorf("the relay's PATH %q: the chrooted journalctl is in the host's /usr/bin or /bin", path)
	}
}

// TestChartValues: values a course operator sets.
func TestChartValues(t *testing.T) {
	t.Run("an Ingress with websocket timeouts", func(t *testing.T) {
		_, o := mustRender(t, map[string]any{"ingress": map[string]any{"enabled": true, "host": "loop.example", "tlsSecret": "loop-tls"}})
		ing := one[networkingv1.Ingress](t, o, "Ingress")
		for _, a := range []string{"proxy-read-timeout", "proxy-send-timeout"} {
			if v := ing.Annotations["nginx.ingress.kubernetes.io/"+a]; v != "3600" {
				t.Errorf("%s %q", a, v)
			}
		}
		if ing.Annotations["nginx.ingress.kubernetes.io/proxy-request-buffering"] != "off" {
			t.Error("request buffering on: a curl-fed journal would wait for its end")
		}
		b := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service
		if ing.Spec.Rules[0].Host != "loop.example" || len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "loop-tls" || b.Name != "syncloop" || b.Port.Name != "http" {
			t.Errorf("Ingress %+v", ing.Spec)
		}
	})
	t.Run("more replicas need a NATS cluster", func(t *testing.T) {
		if _, err := render(map[string]any{"replicas": 3}); err == nil || !strings.Contains(err.Error(), "replicas > 1 needs nats.urls") {
			t.Fatalf("replicas 3 with the embedded NATS: %v; want a refusal that says why", err)
		}
		_, o := mustRender(t, map[string]any{"replicas": 3, "nats": map[string]any{"urls": "nats://nats-0.nats:4222,nats://nats-1.nats:4222", "tokenSecret": "nats-token"}})
		sts := one[appsv1.StatefulSet](t, o, "StatefulSet")
		c := container(t, sts.Spec.Template.Spec, "syncloop")
		if *sts.Spec.Replicas != 3 || !slices.Contains(c.Args, "--nats=nats://nats-0.nats:4222,nats://nats-1.nats:4222") || !slices.Contains(c.Args, "--nats-token-file=/etc/syncloop/nats/token") {
			t.Errorf("replicas %d, args %q", *sts.Spec.Replicas, c.Args)
		}
	})
	t.Run("a token of the operator's own", func(t *testing.T) {
		if _, err := render(map[string]any{"token": map[string]any{"existingSecret": "mine"}}); err == nil || !strings.Contains(err.Error(), "relay.existingSecret") {
			t.Fatalf("existingSecret without the relay's: %v", err)
		}
		_, o := mustRender(t, map[string]any{"token": map[string]any{"existingSecret": "mine"}, "relay": map[string]any{"existingSecret": "mine-too"}})
		if n := len(o.byKind["Secret"]); n != 0 {
			t.Errorf("%d Secrets made beside the operator's", n)
		}
		if ref := tokenRef(container(t, one[appsv1.DaemonSet](t, o, "DaemonSet").Spec.Template.Spec, "relay")); ref.Name != "mine-too" {
			t.Errorf("the relay's token from %s", ref.Name)
		}
		_, o = mustRender(t, map[string]any{"token": map[string]any{"value": "s3cret"}})
		for _, s := range o.byKind["Secret"] {
			s := s.(*corev1.Secret)
			for _, v := range s.StringData {
				if v != "s3cret" {
					t.Errorf("Secret %s/%s holds %q", s.Namespace, s.Name, v)
				}
			}
		}
	})
	t.Run("no relay", func(t *testing.T) {
		_, o := mustRender(t, map[string]any{"relay": map[string]any{"enabled": false}})
		if len(o.byKind["DaemonSet"]) != 0 || len(o.byKind["Namespace"]) != 0 {
			t.Errorf("kinds %v", o.kinds())
		}
	})
}

// kustomizeValues are the chart's values the kustomize base is rendered
// with: a token an overlay replaces (kustomize/base/README.md).
var kustomizeValues = map[string]any{"token": map[string]any{"value": "replace-me-in-an-overlay"}}

// helmOnly are the lines of a rendered object that only Helm means.
var helmOnly = regexp.MustCompile(`(?m)^\s*(helm\.sh/chart|app\.kubernetes\.io/managed-by): .*\n`)

// TestKustomizeBase: kustomize/base is the chart rendered with
// kustomizeValues (go test -update rewrites it), and decodes as strictly.
func TestKustomizeBase(t *testing.T) {
	files, err := render(kustomizeValues)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("kustomize", "base")
	var want []string
	for name, text := range files {
		if !strings.HasSuffix(name, ".yaml") || strings.TrimSpace(stripComments(text)) == "" {
			continue
		}
		want = append(want, name)
		text = "# Made from deploy/helm/syncloop (templates/" + name + ") by `go test ./deploy -update`: edit the chart, not this.\n" +
			helmOnly.ReplaceAllString(strings.TrimLeft(text, "-\n"), "")
		path := filepath.Join(dir, name)
		if *update {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, []byte(text)) {
			t.Errorf("%s is not the chart's %s (%v): run go test ./deploy -update", path, name, err)
		}
	}
	sort.Strings(want)
	// kustomization.yaml lists exactly those files.
	k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kust struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(k, &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if kust.Kind != "Kustomization" || !reflect.DeepEqual(kust.Resources, want) {
		t.Errorf("kustomization.yaml: %s, resources %v; want %v", kust.Kind, kust.Resources, want)
	}
	base := map[string]string{}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		base[name] = string(b)
	}
	o := decode(t, base)
	t.Run("site", func(t *testing.T) { checkSite(t, o) })
	t.Run("relay", func(t *testing.T) { checkRelay(t, o) })
	if t.Failed() {
		fmt.Fprintln(os.Stderr, "kustomize/base: run go test ./deploy -update after changing the chart")
	}
}
