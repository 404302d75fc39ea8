package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cli/clitest"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/kube/kubetest"
	"tug.dev/tug/pkg/node"
)

// The printer tests run tug's commands against a fake clientset holding
// fixed objects. Ages are computed from the real clock, so every timestamp
// sits half a unit away from a whole one (3h30m ago prints "3h"), which
// keeps the ages stable however long a test takes. Absolute times (the
// "Created:" lines and JSON timestamps) change with the clock and are
// scrubbed to named placeholders before the golden comparison.

// printerFixture is a fake cluster with a kubeconfig whose context "dev"
// has namespace "dev".
type printerFixture struct {
	t          *testing.T
	cs         *fake.Clientset
	store      *app.Store
	kubeconfig string
	now        time.Time
	times      map[string]time.Time // placeholder name -> time
}

func newPrinterFixture(t *testing.T) *printerFixture {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	kubeconfig := `apiVersion: v1
kind: Config
current-context: dev
clusters: [{name: local, cluster: {server: "https://127.0.0.1:6443"}}]
contexts: [{name: dev, context: {cluster: local, user: bob, namespace: dev}}]
users: [{name: bob, user: {token: abc}}]
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}})
	kubetest.HonorDryRun(cs) // as a server does: --dry-run stores nothing
	return &printerFixture{
		t: t, cs: cs, store: &app.Store{Client: cs, Namespace: "dev"}, kubeconfig: path,
		now: time.Now().UTC().Truncate(time.Second), times: map[string]time.Time{},
	}
}

// ago returns a time d before the fixture's now and names it for scrub;
// each name needs its own time, or the placeholder would be ambiguous.
func (p *printerFixture) ago(name string, d time.Duration) time.Time {
	p.t.Helper()
	t := p.now.Add(-d)
	for other, ot := range p.times {
		if ot.Equal(t) && other != name {
			p.t.Fatalf("times %s and %s are equal; give each its own", name, other)
		}
	}
	p.times[name] = t
	return t
}

func (p *printerFixture) add(t *testing.T, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		if err := p.cs.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
}

// scrub replaces every rendering of the fixture's named times with <name>.
func (p *printerFixture) scrub(s string) string {
	for name, t := range p.times {
		for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02 15:04:05"} {
			s = strings.ReplaceAll(s, t.UTC().Format(layout), "<"+name+">")
			s = strings.ReplaceAll(s, t.Local().Format(layout), "<"+name+">")
		}
	}
	return s
}

// run executes tug against the fixture; tty makes stdout a terminal
// (colour off), otherwise output is piped.
func (p *printerFixture) run(t *testing.T, tty bool, args ...string) result {
	t.Helper()
	isolate(t)
	t.Setenv("TUG_CONFIG", filepath.Join(t.TempDir(), "tug.yaml"))
	ios, _, out, errOut := cli.TestIOStreams()
	if tty {
		ios.SetStdoutTTY(true)
		ios.SetColorDisabled(true)
	}
	f := cli.NewFactory(ios, "tug")
	f.KubeClientFunc = func() (kubernetes.Interface, error) { return p.cs, nil }
	return executeWith(f, out, errOut, append([]string{"--kubeconfig", p.kubeconfig}, args...)...)
}

// golden runs args in each output form and compares stdout with
// testdata/<name>-<form>.golden.
func (p *printerFixture) golden(t *testing.T, name string, forms []string, args ...string) {
	t.Helper()
	for _, form := range forms {
		t.Run(form, func(t *testing.T) {
			a := args
			tty := false
			switch form {
			case "tty":
				tty = true
			case "piped":
			default: // an -o value
				a = append(append([]string{}, args...), "-o", form)
			}
			r := p.run(t, tty, a...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			clitest.Golden(t, name+"-"+form, []byte(p.scrub(r.stdout)))
		})
	}
}

func (p *printerFixture) mustCreateApp(t *testing.T, a *app.App) {
	t.Helper()
	a.Namespace = "dev"
	if err := p.store.CreateApp(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}

func (p *printerFixture) mustCreateRelease(t *testing.T, r *app.Release, cfg app.ConfigMap) {
	t.Helper()
	if err := p.store.CreateRelease(context.Background(), r, cfg); err != nil {
		t.Fatal(err)
	}
}

func deploymentOf(appName, proc string, ready int32) *appsv1.Deployment {
	l := kube.AppLabels(appName)
	l[kube.LabelProcess] = proc
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: appName + "-" + proc, Namespace: "dev", Labels: l},
		Status:     appsv1.DeploymentStatus{ReadyReplicas: ready},
	}
}

// shopFixture is an app "shop" at release 2 with a web, a stopped and an
// autoscaled process, domains, an allow list, a service and a failed v3.
func shopFixture(t *testing.T) *printerFixture {
	p := newPrinterFixture(t)
	created := p.ago("app-created", 5*24*time.Hour+12*time.Hour)
	p.mustCreateApp(t, &app.App{
		Name: "shop", Description: "the web shop", Team: "payments", Pool: "web", CreatedAt: created,
		Release: 2, LastRelease: 3, Image: "registry.example/shop:2",
		Processes: map[string]app.Process{
			"web":    {Replicas: 2},
			"worker": {Replicas: 3, Stopped: true},
			"clock":  {Replicas: 2, Autoscale: &app.Autoscale{Min: 2, Max: 5, CPUPercent: 80}},
		},
		Domains:     []app.Domain{{Host: "shop.example.com"}, {Host: "example.com", Path: "/shop"}},
		Maintenance: true,
		Allow:       []string{"10.0.0.0/8", "192.168.1.0/24"},
		Route:       &app.Route{Router: "traefik"}, // the allow list is a Middleware
	})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 1, Image: "registry.example/shop:1", Kind: app.KindDeploy,
		Status: app.StatusSuperseded, Author: "alice", CreatedAt: p.ago("v1-created", 4*24*time.Hour+12*time.Hour),
		Processes: map[string]string{"web": "./server"}}, app.ConfigMap{"A": "1"})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 2, Image: "registry.example/shop:2", ImageID: "registry.example/shop@sha256:" + strings.Repeat("2", 64), Kind: app.KindDeploy,
		Status: app.StatusDeployed, Author: "alice", Message: "faster checkout", CreatedAt: p.ago("v2-created", 3*time.Hour+30*time.Minute),
		Processes: map[string]string{"web": "./server --port $PORT", "worker": "./work", "clock": ""},
		// changed in place after it rolled out (app settings set --history 20)
		Rollout:        app.Rollout{History: 20},
		RolloutChanges: []app.RolloutChange{{At: p.ago("v2-settings-changed", 95*time.Minute), Author: "bob", Message: "settings: history 20"}}},
		app.ConfigMap{"DATABASE_URL": "postgres://secret", "PORT": "8080"})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 3, Image: "registry.example/shop:3", Kind: app.KindDeploy,
		Status: app.StatusFailed, FailReason: "web units crashed: exit code 1", Author: "bob", CreatedAt: p.ago("v3-created", 10*time.Minute+30*time.Second),
		Processes: map[string]string{"web": "./server --port $PORT"}},
		app.ConfigMap{"DATABASE_URL": "postgres://secret", "PORT": "8080", "NEW": "x"})
	svcLabels := kube.AppLabels("shop")
	svcLabels[kube.LabelProcess] = "web"
	p.add(t,
		deploymentOf("shop", "web", 2),
		deploymentOf("shop", "clock", 1),
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "dev", Labels: svcLabels},
			Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.12", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		},
	)
	return p
}

func TestAppInfoGolden(t *testing.T) {
	p := shopFixture(t)
	p.golden(t, "app-info", []string{"tty", "piped", "json"}, "app", "info", "shop")
}

func TestAppInfoBeforeFirstDeployGolden(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "blog", CreatedAt: p.ago("app-created", 2*time.Hour+30*time.Minute), Unroutable: true})
	p.golden(t, "app-info-new", []string{"tty"}, "app", "info", "blog")
}

func TestAppInfoNotFound(t *testing.T) {
	p := newPrinterFixture(t)
	r := p.run(t, false, "app", "info", "nope")
	if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, `app "nope" not found in namespace "dev"`) {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestReleaseInfoGolden(t *testing.T) {
	p := shopFixture(t)
	p.golden(t, "release-info", []string{"tty", "piped", "json"}, "release", "info", "shop", "v2")
	p.golden(t, "release-info-failed", []string{"tty"}, "release", "info", "shop", "3")
}

func TestReleaseInfoErrors(t *testing.T) {
	p := shopFixture(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"release", "info", "shop", "vx"}, 2, `invalid release "vx": want a release number such as v3`},
		{[]string{"release", "info", "shop", "v0"}, 2, `invalid release "v0"`},
		{[]string{"release", "info", "Shop", "v1"}, 2, "invalid app name"},
		{[]string{"release", "info", "shop", "v9"}, 1, `release v9 of app "shop" not found in namespace "dev"`},
		{[]string{"release", "info", "blog", "v1"}, 1, `app "blog" not found`},
	} {
		t.Run(strings.Join(c.args[2:], " "), func(t *testing.T) {
			r := p.run(t, false, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, c.code, c.want)
			}
		})
	}
}

func TestReleaseListGolden(t *testing.T) {
	p := shopFixture(t)
	p.golden(t, "release-list", []string{"tty", "piped"}, "release", "list", "shop")
}

func TestAppListGolden(t *testing.T) {
	p := shopFixture(t)
	p.mustCreateApp(t, &app.App{Name: "blog", CreatedAt: p.ago("blog-created", 45*time.Minute+30*time.Second)})
	p.golden(t, "app-list", []string{"tty", "piped"}, "app", "list")
}

// unitPod is a pod of app's process on node n1.
func unitPod(appName, proc, name string, release int, created time.Time) *corev1.Pod {
	l := kube.AppLabels(appName)
	l[kube.LabelProcess] = proc
	l[kube.LabelRelease] = strconv.Itoa(release)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dev", Labels: l, CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{
			Name: proc, Image: "registry.example/" + appName + ":" + strconv.Itoa(release),
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1." + strconv.Itoa(len(name))},
	}
}

// runPod makes a unit's pod a one-off run's, as pkg/session does: kind run,
// no process or release label (the release in an annotation), no ports.
func runPod(p *corev1.Pod) *corev1.Pod {
	p.Annotations = map[string]string{kube.LabelRelease: p.Labels[kube.LabelRelease]}
	delete(p.Labels, kube.LabelProcess)
	delete(p.Labels, kube.LabelRelease)
	p.Labels[kube.LabelKind] = "run"
	p.Spec.Containers[0].Ports = nil
	return p
}

func running(p *corev1.Pod, ready bool, restarts int32) *corev1.Pod {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: p.Spec.Containers[0].Name, Ready: ready, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: p.CreationTimestamp}},
	}}
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}}
	return p
}

// unitsFixture holds units of shop in several states, and one of blog.
func unitsFixture(t *testing.T) *printerFixture {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Release: 2, Processes: map[string]app.Process{"web": {Replicas: 2}, "worker": {Replicas: 2}}})
	p.mustCreateApp(t, &app.App{Name: "blog", Release: 1, Processes: map[string]app.Process{"web": {Replicas: 1}}})

	crashed := unitPod("shop", "web", "shop-web-7d9f-b2", 2, p.ago("crashed", 10*time.Minute+30*time.Second))
	crashed.Status.PodIP = "10.244.1.17"
	crashed.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "web", RestartCount: 4,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}},
	}}
	pending := unitPod("shop", "worker", "shop-worker-5c4-x1", 2, p.ago("pending", 2*time.Hour+30*time.Minute))
	pending.Spec.NodeName = ""
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/3 nodes are available: 3 Insufficient memory.",
	}}}
	pulling := unitPod("shop", "worker", "shop-worker-5c4-x2", 2, p.ago("pulling", 2*time.Hour+31*time.Minute))
	pulling.Status = corev1.PodStatus{Phase: corev1.PodPending, PodIP: "10.244.1.9", ContainerStatuses: []corev1.ContainerStatus{{
		Name: "worker", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}},
	}}}
	// One-off runs (tug run): listed after the units, as process "run".
	blogRun := runPod(unitPod("blog", "web", "blog-run-abcde", 1, p.ago("run", time.Hour+30*time.Minute)))
	shopRun := running(runPod(unitPod("shop", "web", "shop-run-x7k2q", 2, p.ago("shop-run", 20*time.Minute+30*time.Second))), true, 0)
	p.add(t,
		running(unitPod("shop", "web", "shop-web-7d9f-a1", 2, p.ago("started", 3*24*time.Hour+12*time.Hour)), true, 0),
		crashed, pending, pulling, blogRun, shopRun,
		running(unitPod("blog", "web", "blog-web-66f-q1", 1, p.ago("blog", 26*time.Hour+30*time.Minute)), false, 1),
	)
	return p
}

func TestUnitListGolden(t *testing.T) {
	p := unitsFixture(t)
	p.golden(t, "unit-list", []string{"tty", "piped", "wide", "json"}, "unit", "list", "shop")
	p.golden(t, "unit-list-all", []string{"tty", "piped"}, "unit", "list", "--all")
	p.golden(t, "unit-list-worker", []string{"piped"}, "unit", "list", "shop", "-p", "worker", "--no-headers")
}

func TestUnitListWideTTY(t *testing.T) {
	p := unitsFixture(t)
	r := p.run(t, true, "unit", "list", "shop", "-o", "wide")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	clitest.Golden(t, "unit-list-wide-tty", []byte(p.scrub(r.stdout)))
}

func TestUnitListRefusals(t *testing.T) {
	p := unitsFixture(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"unit", "list"}, 2, "which app? give APP, or --all for every app in the namespace"},
		{[]string{"unit", "list", "shop", "--all"}, 2, "give an APP or --all, not both"},
		{[]string{"unit", "list", "--all", "-p", "web"}, 2, "-p needs an APP; it cannot be used with --all"},
		{[]string{"unit", "list", "shop", "-o", "tsv"}, 2, "must be one of table, wide, json, yaml"},
		{[]string{"unit", "list", "shop", "-p", "clock"}, 2, `app "shop" has no process "clock"; its processes are web, worker`},
		{[]string{"unit", "list", "nope"}, 1, `app "nope" not found`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := p.run(t, false, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, c.code, c.want)
			}
		})
	}
}

func TestUnitListNoUnits(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop"})
	r := p.run(t, false, "unit", "list", "shop")
	if r.code != 0 || r.stdout != "" || r.stderr != "no units\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = p.run(t, false, "unit", "list", "shop", "-o", "json")
	if r.code != 0 || r.stdout != "[]\n" {
		t.Errorf("json: exit %d, stdout %q", r.code, r.stdout)
	}
}

// nodeFixture is node n1 of pool web: ready but cordoned and disabled,
// with metadata, capacity, conditions, taints and two units.
func nodeFixture(t *testing.T) *printerFixture {
	p := newPrinterFixture(t)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "n1", CreationTimestamp: metav1.NewTime(p.ago("node-created", 30*24*time.Hour+12*time.Hour)),
			Labels: map[string]string{kube.LabelPool: "web", "kubernetes.io/hostname": "n1"},
			Annotations: map[string]string{
				node.AnnotationIaaSID: "i-0abc", node.MetadataPrefix + "rack": "r7", node.MetadataPrefix + "owner": "ops",
			},
		},
		Spec: corev1.NodeSpec{ProviderID: "aws:///eu-west-1a/i-0abc", Unschedulable: true, Taints: []corev1.Taint{
			{Key: node.TaintDisabled, Value: "true", Effect: corev1.TaintEffectNoSchedule},
			{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule},
		}},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.11"}, {Type: corev1.NodeHostName, Address: "n1"}},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("3800m"), corev1.ResourceMemory: resource.MustParse("15Gi"), corev1.ResourcePods: resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
					LastTransitionTime: metav1.NewTime(p.ago("ready-since", 6*time.Hour+30*time.Minute))},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory",
					LastTransitionTime: metav1.NewTime(p.ago("memory-since", 30*24*time.Hour+11*time.Hour))},
			},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", OSImage: "Debian GNU/Linux 13", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.1.0"},
		},
	}
	p.add(t, n,
		running(unitPod("shop", "web", "shop-web-7d9f-a1", 2, p.ago("u1", time.Hour+30*time.Minute)), true, 0),
		running(unitPod("blog", "worker", "blog-worker-1", 1, p.ago("u2", time.Hour+31*time.Minute)), false, 0),
	)
	return p
}

func TestNodeInfoGolden(t *testing.T) {
	p := nodeFixture(t)
	p.golden(t, "node-info", []string{"tty", "piped", "json"}, "node", "info", "n1")
	// by address, too
	r := p.run(t, false, "node", "info", "10.0.0.11")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Node:        n1\n") {
		t.Errorf("by address: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestNodeInfoBareNodeGolden(t *testing.T) {
	p := newPrinterFixture(t)
	p.add(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", CreationTimestamp: metav1.NewTime(p.ago("node-created", 30*time.Minute+30*time.Second))}})
	p.golden(t, "node-info-bare", []string{"tty"}, "node", "info", "n2")
}

func TestNodeInfoNotFound(t *testing.T) {
	p := nodeFixture(t)
	r := p.run(t, false, "node", "info", "n9")
	if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, `node "n9" not found`) {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestDoctorGoldenForms covers the forms doctor_test.go does not: the
// admin on a terminal, the namespace user piped, and the JSON report.
func TestDoctorGoldenForms(t *testing.T) {
	for _, c := range []struct {
		name  string
		admin bool
		tty   bool
		args  []string
		code  int
	}{
		{"doctor-admin-tty", true, true, nil, 0},
		{"doctor-namespace-user-piped", false, false, nil, 0},
		{"doctor-namespace-user-json", false, false, []string{"-o", "json"}, 0},
		{"doctor-namespace-user-all-piped", false, false, []string{"--all"}, 1},
		{"doctor-admin-piped-no-headers", true, false, []string{"--no-headers"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			setup, kubeconfig := withCluster(t, c.admin)
			isolate(t)
			ios, _, out, errOut := cli.TestIOStreams()
			if c.tty {
				ios.SetStdoutTTY(true)
				ios.SetColorDisabled(true)
			}
			f := cli.NewFactory(ios, "tug")
			setup(f)
			r := executeWith(f, out, errOut, append([]string{"--kubeconfig", kubeconfig, "doctor"}, c.args...)...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d; stderr %q", r.code, c.code, r.stderr)
			}
			got := strings.ReplaceAll(r.stdout, kubeconfig, "<kubeconfig>")
			clitest.Golden(t, c.name, []byte(got))
		})
	}
}

func TestNodeListGolden(t *testing.T) {
	p := nodeFixture(t)
	p.add(t,
		&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{kube.LabelPool: "web"}},
			Status: corev1.NodeStatus{
				Addresses:  []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "203.0.113.2"}},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{kube.LabelPool: "gpu"}}},
	)
	p.golden(t, "node-list", []string{"tty", "piped"}, "node", "list")
	p.golden(t, "node-list-pool", []string{"piped"}, "node", "list", "--pool", "web", "--no-headers")
	r := p.run(t, false, "node", "list", "--pool", "ml")
	if r.code != 0 || r.stdout != "" || r.stderr != "no nodes in pool \"ml\"\n" {
		t.Errorf("empty pool: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A deploy that stopped midway: the units roll to v2 while the record says
// v1; app info says so.
func TestAppInfoRunningDiffersGolden(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "blog", CreatedAt: p.ago("app-created", 2*time.Hour+30*time.Minute),
		Release: 1, LastRelease: 2, Image: "registry.example/blog:1", Processes: map[string]app.Process{"web": {Replicas: 1}}})
	p.mustCreateRelease(t, &app.Release{App: "blog", Version: 1, Image: "registry.example/blog:1", Kind: app.KindDeploy,
		Status: app.StatusDeployed, Author: "alice", CreatedAt: p.ago("v1-created", 2*time.Hour), Processes: map[string]string{"web": ""}}, nil)
	p.mustCreateRelease(t, &app.Release{App: "blog", Version: 2, Image: "registry.example/blog:2", Kind: app.KindDeploy,
		Status: app.StatusInterrupted, FailReason: "its rollout was interrupted before every unit ran it: the command was cancelled (Ctrl-C or SIGTERM)",
		Author: "alice", CreatedAt: p.ago("v2-created", 5*time.Minute), Processes: map[string]string{"web": ""}}, nil)
	web := deploymentOf("blog", "web", 1)
	web.Spec.Template.Labels = map[string]string{kube.LabelRelease: "2"}
	web.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: "registry.example/blog:2"}}
	p.add(t, web)
	p.golden(t, "app-info-running", []string{"tty", "json"}, "app", "info", "blog")
}
