package deploytest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
)

// The Recorder and ChanProgress are progress reporters.
var (
	_ progress.Reporter = (*Recorder)(nil)
	_ progress.Reporter = ChanProgress(nil)
)

// NewFake starts with the objects given, and its store keeps records in
// Namespace.
func TestNewFakeSeedsObjectsAndStore(t *testing.T) {
	c, s := NewFake(Deployment("web", 2, 1, Done(2, 1)), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "elsewhere"}})
	if s.Namespace != Namespace || s.Client != c {
		t.Errorf("store in %q on %p, want %q on the fake %p", s.Namespace, s.Client, Namespace, c)
	}
	if _, err := c.CoreV1().ConfigMaps("elsewhere").Get(context.Background(), "other", metav1.GetOptions{}); err != nil {
		t.Errorf("seeded ConfigMap: %v", err)
	}
	if d := ListDeployments(t, c); len(d) != 1 || d["shop-web"].Status.ReadyReplicas != 2 {
		t.Errorf("ListDeployments = %v", d)
	}
	if d := ListDeployments(t, FakeClient()); len(d) != 0 {
		t.Errorf("FakeClient() starts with %v", d)
	}
	if _, err := FakeClient(Pod("u1", "web", "1", true)).CoreV1().Pods(Namespace).Get(context.Background(), "u1", metav1.GetOptions{}); err != nil {
		t.Errorf("FakeClient seeded pod: %v", err)
	}
}

// As on an API server, writes get a resourceVersion and a write on a
// stale one conflicts.
func TestNewFakeHonorsResourceVersion(t *testing.T) {
	ctx := context.Background()
	c := FakeClient()
	cms := c.CoreV1().ConfigMaps(Namespace)
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	if err != nil || first.ResourceVersion == "" {
		t.Fatalf("create: %v, resourceVersion %q", err, first.ResourceVersion)
	}
	second := first.DeepCopy()
	second.Data["a"] = "2"
	second, err = cms.Update(ctx, second, metav1.UpdateOptions{})
	if err != nil || second.ResourceVersion == first.ResourceVersion {
		t.Fatalf("update: %v, resourceVersion %q after %q", err, second.ResourceVersion, first.ResourceVersion)
	}
	stale := first.DeepCopy()
	stale.Data["a"] = "3"
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update on a stale read: %v, want a conflict", err)
	}
	if got, _ := cms.Get(ctx, "x", metav1.GetOptions{}); got.Data["a"] != "2" {
		t.Errorf("stored %v after a conflict", got.Data)
	}
}

// A dry-run write answers and stores nothing: a release the store only
// validates is not there afterwards.
func TestNewFakeHonorsDryRun(t *testing.T) {
	c, s := NewFake()
	ctx := context.Background()
	r := &app.Release{App: "shop", Version: 1, Image: "shop:1", Kind: "deploy"}
	if err := s.ValidateRelease(ctx, r, app.ConfigMap{"K": "v"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.GetRelease(ctx, "shop", 1); err == nil {
		t.Error("a dry-run release was stored")
	}
	if _, err := c.CoreV1().ConfigMaps(Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}},
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.CoreV1().ConfigMaps(Namespace).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("a dry-run create stored %d ConfigMaps", len(l.Items))
	}
}

// The fake server-side-applies: an apply creates the object, the field
// manager owns the fields it sets, and another manager's conflicting
// apply fails unless forced.
func TestNewFakeServerSideApply(t *testing.T) {
	ctx := context.Background()
	c := FakeClient()
	cms := c.CoreV1().ConfigMaps(Namespace)
	got, err := cms.Apply(ctx, corev1ac.ConfigMap("x", Namespace).WithData(map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: kube.FieldManager})
	if err != nil {
		t.Fatalf("apply of a new object: %v", err)
	}
	if got.Data["a"] != "1" || len(got.ManagedFields) == 0 || got.ManagedFields[0].Manager != kube.FieldManager {
		t.Errorf("applied %v, managed by %v", got.Data, got.ManagedFields)
	}
	_, err = cms.Apply(ctx, corev1ac.ConfigMap("x", Namespace).WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "someone-else"})
	if !apierrors.IsConflict(err) {
		t.Errorf("another manager's apply of an owned field: %v, want a conflict", err)
	}
	got, err = cms.Apply(ctx, corev1ac.ConfigMap("x", Namespace).WithData(map[string]string{"a": "2"}), metav1.ApplyOptions{FieldManager: "someone-else", Force: true})
	if err != nil || got.Data["a"] != "2" {
		t.Errorf("forced apply: %v, %v", got.Data, err)
	}
}

// SeedApp stores the record in Namespace (with Processes never nil);
// SeedRelease makes the release shop's unless it names an app; GetApp and
// GetRelease read them back.
func TestSeedAndGet(t *testing.T) {
	_, s := NewFake()
	a := &app.App{Name: "shop", Namespace: "ignored", Release: 2}
	SeedApp(t, s, a)
	if a.Namespace != Namespace || a.Processes == nil {
		t.Errorf("seeded %+v", a)
	}
	got := GetApp(t, s, "shop")
	if got.Name != "shop" || got.Namespace != Namespace || got.Release != 2 || got.Processes == nil {
		t.Errorf("GetApp = %+v", got)
	}
	SeedApp(t, s, &app.App{Name: "blog", Processes: map[string]app.Process{"web": {Replicas: 3}}})
	if p := GetApp(t, s, "blog").Processes; p["web"].Replicas != 3 {
		t.Errorf("blog's processes = %v", p)
	}

	r := &app.Release{Version: 2, Image: "shop:2", Kind: "deploy", Status: app.Status("succeeded")}
	SeedRelease(t, s, r, app.ConfigMap{"DATABASE_URL": "postgres://db"})
	if r.App != "shop" {
		t.Errorf("release of app %q, want shop", r.App)
	}
	rel, cfg := GetRelease(t, s, 2)
	if rel.App != "shop" || rel.Version != 2 || rel.Image != "shop:2" || cfg["DATABASE_URL"] != "postgres://db" || len(cfg) != 1 {
		t.Errorf("GetRelease = %+v, %v", rel, cfg)
	}
	SeedRelease(t, s, &app.Release{App: "blog", Version: 1, Image: "blog:1"}, nil)
	if _, _, err := s.GetRelease(context.Background(), "blog", 1); err != nil {
		t.Errorf("blog's release: %v", err)
	}
}

// Lease is shop's lock as another tug holds it: lock.Acquire refuses it
// while it is fresh and names the holder.
func TestLeaseIsHeld(t *testing.T) {
	at := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	l := Lease("bob (pid 7 on box)", at)
	if l.Name != lock.Name("shop") || l.Namespace != Namespace || *l.Spec.HolderIdentity != "bob (pid 7 on box)" ||
		*l.Spec.LeaseDurationSeconds != int32(lock.LeaseDuration/time.Second) || !l.Spec.RenewTime.Time.Equal(at) || !l.Spec.AcquireTime.Time.Equal(at) {
		t.Errorf("Lease = %+v", l)
	}
	c := FakeClient(l)
	if got := GetLease(t, c); *got.Spec.HolderIdentity != "bob (pid 7 on box)" {
		t.Errorf("GetLease holder %q", *got.Spec.HolderIdentity)
	}
	_, err := lock.Acquire(context.Background(), lock.Request{Client: c, Namespace: Namespace, App: "shop", Holder: lock.Holder{User: "alice"}})
	var held *lock.HeldError
	if !errors.As(err, &held) || held.Holder != "bob (pid 7 on box)" {
		t.Errorf("Acquire over Lease: %v, want it held by bob", err)
	}
}

// Acquire takes shop's lock for the holder (the lease names it); once it
// is unlocked no lease is left behind.
func TestAcquireAndAssertNoLease(t *testing.T) {
	c := FakeClient()
	AssertNoLease(t, c)
	l := Acquire(t, c, lock.Holder{User: "carol", PID: 42, Host: "ci"})
	if id := *GetLease(t, c).Spec.HolderIdentity; !strings.HasPrefix(id, "carol (pid 42 on ci) #") {
		t.Errorf("lease held by %q", id)
	}
	l.Unlock()
	AssertNoLease(t, c)
}

func TestDeploymentAndDone(t *testing.T) {
	d := Deployment("worker", 3, 4, Done(3, 4))
	if d.Name != "shop-worker" || d.Namespace != Namespace || *d.Spec.Replicas != 3 || d.Generation != 4 {
		t.Errorf("Deployment = %+v", d)
	}
	if d.Labels[kube.LabelProcess] != "worker" || d.Labels[kube.LabelApp] != "shop" {
		t.Errorf("labels %v", d.Labels)
	}
	want := appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, ReadyReplicas: 3}
	if !reflect.DeepEqual(d.Status, want) {
		t.Errorf("status %+v, want %+v", d.Status, want)
	}
}

func TestPods(t *testing.T) {
	p := Pod("u1", "web", "3", true)
	cs := p.Status.ContainerStatuses[0]
	if p.Name != "u1" || p.Namespace != Namespace || p.Labels[kube.LabelProcess] != "web" || p.Labels[kube.LabelRelease] != "3" || p.Labels[kube.LabelApp] != "shop" {
		t.Errorf("Pod meta %+v", p.ObjectMeta)
	}
	if p.Spec.Containers[0].Name != "web" || p.Spec.Containers[0].Image != "shop:3" || p.Status.Phase != corev1.PodRunning {
		t.Errorf("Pod spec %+v, phase %s", p.Spec.Containers, p.Status.Phase)
	}
	if p.Status.Conditions[0].Type != corev1.PodReady || p.Status.Conditions[0].Status != corev1.ConditionTrue || !cs.Ready || cs.State.Running == nil {
		t.Errorf("ready pod's status %+v", p.Status)
	}
	notReady := Pod("u2", "worker", "1", false, func(p *corev1.Pod) { p.Spec.NodeName = "n1" }, func(p *corev1.Pod) { p.Name += "-x" })
	if notReady.Status.Conditions[0].Status != corev1.ConditionFalse || notReady.Status.ContainerStatuses[0].Ready {
		t.Errorf("unready pod's status %+v", notReady.Status)
	}
	if notReady.Spec.NodeName != "n1" || notReady.Name != "u2-x" {
		t.Errorf("mods not applied in order: node %q, name %q", notReady.Spec.NodeName, notReady.Name)
	}

	crash := CrashPod("5")
	ccs := crash.Status.ContainerStatuses[0]
	if crash.Name != "shop-web-5" || crash.Labels[kube.LabelRelease] != "5" || ccs.Ready || ccs.RestartCount != 2 ||
		ccs.State.Waiting == nil || ccs.State.Waiting.Reason != "CrashLoopBackOff" || ccs.State.Running != nil ||
		ccs.LastTerminationState.Terminated == nil || ccs.LastTerminationState.Terminated.ExitCode != 3 {
		t.Errorf("CrashPod = %+v", crash.Status)
	}

	img := ImagePod("u3", "2", "docker.io/shop@sha256:abc")
	if ics := img.Status.ContainerStatuses[0]; img.Name != "u3" || !ics.Ready || ics.ImageID != "docker.io/shop@sha256:abc" || img.Labels[kube.LabelProcess] != "web" {
		t.Errorf("ImagePod = %+v", img)
	}
}

func TestContainerStates(t *testing.T) {
	if w := Waiting("ImagePullBackOff", "no such image"); w.Waiting == nil || w.Waiting.Reason != "ImagePullBackOff" || w.Waiting.Message != "no such image" || w.Running != nil {
		t.Errorf("Waiting = %+v", w)
	}
	if x := Terminated("OOMKilled", 137, "out of memory"); x.Reason != "OOMKilled" || x.ExitCode != 137 || x.Message != "out of memory" {
		t.Errorf("Terminated = %+v", x)
	}
	since := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	if r := Running(since); r.Running == nil || !r.Running.StartedAt.Time.Equal(since) || r.Waiting != nil {
		t.Errorf("Running = %+v", r)
	}
}

// Recorder keeps every Update (not Done or Fail), safe for concurrent
// use, and All is a copy.
func TestRecorder(t *testing.T) {
	r := &Recorder{}
	if len(r.All()) != 0 {
		t.Errorf("new Recorder has %v", r.All())
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Update(fmt.Sprint("line ", i))
		}()
	}
	wg.Wait()
	r.Done("done")
	r.Fail("failed")
	all := r.All()
	slices.Sort(all)
	if want := []string{"line 0", "line 1", "line 2", "line 3"}; !slices.Equal(all, want) {
		t.Errorf("All = %v, want %v", all, want)
	}
	all[0] = "changed"
	if r.All()[0] == "changed" {
		t.Error("All shares the Recorder's lines")
	}
}

// ChanProgress sends each Update while there is room and drops it
// (without blocking) when there is none.
func TestChanProgressNeverBlocks(t *testing.T) {
	c := make(ChanProgress, 1)
	c.Update("first")
	c.Update("dropped")
	c.Done("done")
	c.Fail("failed")
	if got := <-c; got != "first" {
		t.Errorf("got %q, want first", got)
	}
	select {
	case got := <-c:
		t.Errorf("got %q after the channel was full", got)
	default:
	}
	ChanProgress(nil).Update("nobody reads")
}

// The helpers fail the test when the fake does not have (or will not take)
// what they ask for. The cases run as subtests of one child test process
// (a fake clientset is slow to make): each must fail with its message and,
// for a Fatal, stop there.
func TestHelpersFailTheTest(t *testing.T) {
	cases := []struct {
		name, want string
		fatal      bool
	}{
		{"AssertNoLease", "deploy lock left behind", false},
		{"GetApp", "GetApp: ", true},
		{"SeedApp", "CreateApp: ", true},
		{"SeedRelease", "CreateRelease: ", true},
		{"GetRelease", "GetRelease v7: ", true},
		{"GetLease", "get lease: ", true},
		{"Acquire", "Acquire(bob (pid 1 on box)): ", true},
	}
	if os.Getenv("DEPLOYTEST_FAIL") != "" {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				failingCase(t, c.name)
				t.Log("AFTER-" + c.name)
			})
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelpersFailTheTest$", "-test.v")
	cmd.Env = append(os.Environ(), "DEPLOYTEST_FAIL=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("child test: %v, want it to fail\n%s", err, out)
	}
	// the child's output for each subtest: from its RUN line to the next
	sections := map[string]string{}
	for _, part := range strings.Split(string(out), "=== RUN   TestHelpersFailTheTest/")[1:] {
		name, rest, _ := strings.Cut(part, "\n")
		sections[name] = rest
	}
	for _, c := range cases {
		sec, ok := sections[c.name]
		if !ok {
			t.Errorf("%s: did not run\n%s", c.name, out)
			continue
		}
		if !strings.Contains(sec, c.want) || !strings.Contains(string(out), "--- FAIL: TestHelpersFailTheTest/"+c.name+" ") {
			t.Errorf("%s: want a failure saying %q:\n%s", c.name, c.want, sec)
		}
		if after := strings.Contains(sec, "AFTER-"+c.name); after == c.fatal {
			t.Errorf("%s: went on after the helper: %v, want %v\n%s", c.name, after, !c.fatal, sec)
		}
	}
}

func failingCase(t *testing.T, name string) {
	c, s := NewFake(Lease("carol", time.Now()))
	switch name {
	case "AssertNoLease":
		AssertNoLease(t, c)
	case "GetApp":
		GetApp(t, s, "shop")
	case "SeedApp":
		SeedApp(t, s, &app.App{Name: "shop"})
		SeedApp(t, s, &app.App{Name: "shop"})
	case "SeedRelease":
		SeedRelease(t, s, &app.Release{Version: 1}, nil)
		SeedRelease(t, s, &app.Release{Version: 1}, nil)
	case "GetRelease":
		GetRelease(t, s, 7)
	case "GetLease":
		GetLease(t, FakeClient())
	case "Acquire":
		Acquire(t, c, lock.Holder{User: "bob", PID: 1, Host: "box"})
	}
}
