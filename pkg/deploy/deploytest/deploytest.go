// Package deploytest is the fake cluster the tests of pkg/deploy and of the
// packages built on it (pkg/move, pkg/lifecycle) share: a fake clientset
// that behaves like an API server where it matters to them, app records
// and releases to seed it with, units in the states a rollout meets, and
// the app's lock as another tug would hold it. It does not import
// pkg/deploy, so pkg/deploy's own tests can use it.
package deploytest

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/kube/kubetest"
	"tug.dev/tug/pkg/lock"
)

// Namespace is where the fake cluster keeps its apps.
const Namespace = "dev"

// NewFake is a fake clientset with server-side apply support
// (fake.NewClientset, not NewSimpleClientset), and a Store for its
// records in Namespace. It has no controllers: nothing creates pods or
// updates a Deployment's status. As on a real API server, a write with a
// stale resourceVersion conflicts (kubetest.HonorResourceVersion) and a
// dry-run write stores nothing (kubetest.HonorDryRun).
func NewFake(objs ...runtime.Object) (*fake.Clientset, *app.Store) {
	c := fake.NewClientset(objs...)
	kubetest.HonorResourceVersion(c)
	kubetest.HonorDryRun(c)
	return c, &app.Store{Client: c, Namespace: Namespace}
}

// FakeClient is NewFake without the store.
func FakeClient(objs ...runtime.Object) *fake.Clientset {
	c, _ := NewFake(objs...)
	return c
}

// SeedApp stores a's record in Namespace.
func SeedApp(t *testing.T, s *app.Store, a *app.App) {
	t.Helper()
	a.Namespace = Namespace
	if a.Processes == nil {
		a.Processes = map[string]app.Process{}
	}
	if err := s.CreateApp(context.Background(), a); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
}

// SeedRelease stores r (of app shop unless it names one) with cfg.
func SeedRelease(t *testing.T, s *app.Store, r *app.Release, cfg app.ConfigMap) {
	t.Helper()
	if r.App == "" {
		r.App = "shop"
	}
	if err := s.CreateRelease(context.Background(), r, cfg); err != nil {
		t.Fatalf("CreateRelease: %v", err)
	}
}

// GetApp reads the record of app name.
func GetApp(t *testing.T, s *app.Store, name string) *app.App {
	t.Helper()
	a, err := s.GetApp(context.Background(), name)
	if err != nil {
		t.Fatalf("GetApp: %v", err)
	}
	return a
}

// GetRelease reads release v of shop.
func GetRelease(t *testing.T, s *app.Store, v int) (*app.Release, app.ConfigMap) {
	t.Helper()
	r, cfg, err := s.GetRelease(context.Background(), "shop", v)
	if err != nil {
		t.Fatalf("GetRelease v%d: %v", v, err)
	}
	return r, cfg
}

// ListDeployments are the Deployments in Namespace, by name.
func ListDeployments(t *testing.T, c *fake.Clientset) map[string]appsv1.Deployment {
	t.Helper()
	l, err := c.AppsV1().Deployments(Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]appsv1.Deployment{}
	for _, d := range l.Items {
		m[d.Name] = d
	}
	return m
}

// AssertNoLease fails the test when shop's lock was left behind.
func AssertNoLease(t *testing.T, c *fake.Clientset) {
	t.Helper()
	_, err := c.CoordinationV1().Leases(Namespace).Get(context.Background(), lock.Name("shop"), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("deploy lock left behind (get: %v)", err)
	}
}

// Lease is shop's lock as holder took it, renewed at renewed.
func Lease(holder string, renewed time.Time) *coordinationv1.Lease {
	secs := int32(lock.LeaseDuration / time.Second)
	at := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lock.Name("shop"), Namespace: Namespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &at, RenewTime: &at},
	}
}

// GetLease reads shop's lock.
func GetLease(t *testing.T, c *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(Namespace).Get(context.Background(), lock.Name("shop"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease: %v", err)
	}
	return l
}

// Acquire takes shop's lock for holder, as another tug would.
func Acquire(t *testing.T, c *fake.Clientset, holder lock.Holder) *lock.Lock {
	t.Helper()
	l, err := lock.Acquire(context.Background(), lock.Request{Client: c, Namespace: Namespace, App: "shop", Holder: holder})
	if err != nil {
		t.Fatalf("Acquire(%s): %v", holder, err)
	}
	return l
}

// Deployment is shop's Deployment of process proc: replicas units, at
// generation gen, with status st.
func Deployment(proc string, replicas int32, gen int64, st appsv1.DeploymentStatus) *appsv1.Deployment {
	l := kube.AppLabels("shop")
	l[kube.LabelProcess] = proc
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-" + proc, Namespace: Namespace, Labels: l, Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
		Status:     st,
	}
}

// Done is the status of a Deployment of n units that rolled out
// generation gen.
func Done(n int32, gen int64) appsv1.DeploymentStatus {
	return appsv1.DeploymentStatus{ObservedGeneration: gen, Replicas: n, UpdatedReplicas: n, AvailableReplicas: n, ReadyReplicas: n}
}

// Pod is a unit of shop's release rel of process proc, ready or not.
func Pod(name, proc string, rel string, ready bool, mods ...func(*corev1.Pod)) *corev1.Pod {
	l := kube.AppLabels("shop")
	l[kube.LabelProcess] = proc
	l[kube.LabelRelease] = rel
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: l},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: proc, Image: "shop:" + rel}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: proc, Ready: ready, State: Running(time.Now())}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// CrashPod is a web unit of release rel that crashes (exit 3) and is
// restarted.
func CrashPod(rel string) *corev1.Pod {
	return Pod("shop-web-"+rel, "web", rel, false, func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State = Waiting("CrashLoopBackOff", "")
		p.Status.ContainerStatuses[0].RestartCount = 2
		p.Status.ContainerStatuses[0].LastTerminationState.Terminated = Terminated("Error", 3, "")
	})
}

// ImagePod is a ready web unit of release rel whose container runs
// imageID (its status says so).
func ImagePod(name, rel, imageID string) *corev1.Pod {
	return Pod(name, "web", rel, true, func(p *corev1.Pod) { p.Status.ContainerStatuses[0].ImageID = imageID })
}

// Waiting is a container state waiting for reason.
func Waiting(reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

// Terminated is a container's end with reason and exit code.
func Terminated(reason string, code int32, msg string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, Message: msg}
}

// Running is a container state running since since.
func Running(since time.Time) corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(since)}}
}

// Recorder is a progress.Reporter that keeps every line.
type Recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *Recorder) Update(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, msg)
}

func (r *Recorder) Done(string) {}
func (r *Recorder) Fail(string) {}

// All are the lines so far.
func (r *Recorder) All() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// ChanProgress sends every progress line to a channel (dropping lines
// when nobody reads, so the change never blocks on the test).
type ChanProgress chan string

func (c ChanProgress) Update(msg string) {
	select {
	case c <- msg:
	default:
	}
}

func (c ChanProgress) Done(string) {}
func (c ChanProgress) Fail(string) {}
