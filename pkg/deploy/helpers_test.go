package deploy

import (
	"context"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube/kubetest"
	"tug.dev/tug/pkg/lock"
)

const ns = "dev"

// newFake is a fake clientset with server-side apply support
// (fake.NewClientset, not NewSimpleClientset). It has no controllers: nothing
// creates pods or updates a Deployment's status. As on a real API server, a
// write with a stale resourceVersion conflicts (kubetest.HonorResourceVersion)
// and a dry-run write stores nothing (kubetest.HonorDryRun).
func newFake(objs ...runtime.Object) (*fake.Clientset, *app.Store) {
	c := fake.NewClientset(objs...)
	kubetest.HonorResourceVersion(c)
	kubetest.HonorDryRun(c)
	return c, &app.Store{Client: c, Namespace: ns}
}

// fakeClient is newFake without the store.
func fakeClient(objs ...runtime.Object) *fake.Clientset {
	c, _ := newFake(objs...)
	return c
}

func seedApp(t *testing.T, s *app.Store, a *app.App) {
	t.Helper()
	a.Namespace = ns
	if a.Processes == nil {
		a.Processes = map[string]app.Process{}
	}
	if err := s.CreateApp(context.Background(), a); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
}

func seedRelease(t *testing.T, s *app.Store, r *app.Release, cfg app.ConfigMap) {
	t.Helper()
	if r.App == "" {
		r.App = "shop"
	}
	if err := s.CreateRelease(context.Background(), r, cfg); err != nil {
		t.Fatalf("CreateRelease: %v", err)
	}
}

func getApp(t *testing.T, s *app.Store, name string) *app.App {
	t.Helper()
	a, err := s.GetApp(context.Background(), name)
	if err != nil {
		t.Fatalf("GetApp: %v", err)
	}
	return a
}

func getRelease(t *testing.T, s *app.Store, v int) (*app.Release, app.ConfigMap) {
	t.Helper()
	r, cfg, err := s.GetRelease(context.Background(), "shop", v)
	if err != nil {
		t.Fatalf("GetRelease v%d: %v", v, err)
	}
	return r, cfg
}

// recorder is a Progress that keeps every line.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) Update(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, msg)
}

func (r *recorder) Done(string) {}
func (r *recorder) Fail(string) {}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// lease is shop's lock as holder took it, renewed at renewed.
func lease(holder string, renewed time.Time) *coordinationv1.Lease {
	secs := int32(lock.LeaseDuration / time.Second)
	at := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lock.Name("shop"), Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &at, RenewTime: &at},
	}
}

func getLease(t *testing.T, c *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), lock.Name("shop"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease: %v", err)
	}
	return l
}

// acquire takes shop's lock for holder, as another tug would.
func acquire(t *testing.T, c *fake.Clientset, holder lock.Holder) *lock.Lock {
	t.Helper()
	l, err := lock.Acquire(context.Background(), lock.Request{Client: c, Namespace: ns, App: "shop", Holder: holder})
	if err != nil {
		t.Fatalf("Acquire(%s): %v", holder, err)
	}
	return l
}
