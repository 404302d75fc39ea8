package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/rollout"
)

// loseLockOn makes every renewal of a lease in c find another holder, as
// when a tug whose renewals stalled had its lock taken over.
func loseLockOn(t *testing.T, c *fake.Clientset) {
	t.Helper()
	if _, err := c.CoordinationV1().Leases(ns).Update(context.Background(), lease("carol", time.Now()), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// refuseLeaseRenewals returns a switch: from when it is set, every lease
// write but carol's is refused with a conflict, as the API server refuses
// a holder's stale resourceVersion once carol took the lease (the fake
// tracker does not check it). Install it before the lock is taken: the
// fake's reactor chain is not safe to change while the renewing goroutine
// uses it. Set it before loseLockOn, so no renewal in between writes over
// carol's lease.
func refuseLeaseRenewals(c *fake.Clientset) *atomic.Bool {
	var on atomic.Bool
	gvr := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	c.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l, _ := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if !on.Load() || l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "carol" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), lock.Name("shop"), errors.New("changed"))
	})
	return &on
}

// The release phase runs under the lock: when the lock is lost while it
// runs, the phase is told to stop (its context ends) and nothing of the
// release is applied afterwards, as another tug may be changing the app.
func TestReleasePhaseStopsWhenTheLockIsLost(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	d := deps(c)
	fastRenewals(&d)
	var cancelled atomic.Bool
	refuse := refuseLeaseRenewals(c)
	d.ReleasePhase = func(ctx context.Context, _ ReleasePhaseSpec) (int, error) {
		refuse.Store(true)
		loseLockOn(t, c)
		select {
		case <-ctx.Done():
			cancelled.Store(true)
			return 0, ctx.Err()
		case <-time.After(5 * time.Second):
			return 0, nil // a phase that was never told: it "succeeded"
		}
	}
	_, err := Roll(ctx, d, "shop", phaseDeploy("shop:1", "./migrate"), Options{NoWait: true})
	if err == nil || !strings.Contains(err.Error(), `lost the deploy lock of app "shop"`) {
		t.Fatalf("Roll = %v; want the lost lock", err)
	}
	if !cancelled.Load() {
		t.Error("the release phase's context did not end when the lock was lost")
	}
	if ds := listDeployments(t, c); len(ds) != 0 {
		t.Errorf("applied %d Deployments after the lock was lost", len(ds))
	}
	if r, _ := getRelease(t, s, 1); r.Status == app.StatusPending || r.Status == app.StatusDeployed {
		t.Errorf("v1 is %s after its rollout lost the lock", r.Status)
	}
}

// Nothing is applied once the lock is lost, even when the phase ends well
// just as it is lost (its unit had exited 0).
func TestNothingAppliedAfterTheLockIsLost(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	d := deps(c)
	fastRenewals(&d)
	refuse := refuseLeaseRenewals(c)
	d.ReleasePhase = func(ctx context.Context, _ ReleasePhaseSpec) (int, error) {
		refuse.Store(true)
		loseLockOn(t, c)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		return 0, nil
	}
	if _, err := Roll(context.Background(), d, "shop", phaseDeploy("shop:1", "./migrate"), Options{NoWait: true}); err == nil {
		t.Fatal("Roll succeeded after losing its lock")
	}
	if ds := listDeployments(t, c); len(ds) != 0 {
		t.Errorf("applied %d Deployments after the lock was lost", len(ds))
	}
}

// A formation change reads the record under the lock: a deploy that was
// under way at the command's first read and finished before its lock is
// not undone (before, that stale read was reconciled under the lock, and
// the release the deploy had just rolled out was marked superseded).
func TestReshapeReadsTheRecordUnderTheLock(t *testing.T) {
	ctx := context.Background()
	// c is the cluster, read while v2 rolls out; other is the same app
	// once v2 is deployed, copied into c as the formation change takes
	// the lock.
	c, s := newFake()
	other, os := newFake()
	for _, st := range []*app.Store{s, os} {
		seedApp(t, st, &app.App{Name: "shop"})
	}
	for _, cl := range []*fake.Clientset{c, other} {
		if _, err := Roll(ctx, deps(cl), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Roll(ctx, deps(other), "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	// v2 under way in c: stored, counted, not yet the record's
	v2, cfg := getRelease(t, os, 2)
	v2.Status = app.StatusPending
	seedRelease(t, s, v2, cfg)
	if _, err := s.UpdateApp(ctx, "shop", func(x *app.App) error { x.LastRelease = 2; return nil }); err != nil {
		t.Fatal(err)
	}
	var copied atomic.Bool
	c.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if copied.Swap(true) {
			return false, nil, nil
		}
		copyRecords(t, other, c)
		return false, nil, nil
	})
	if _, err := Reshape(ctx, deps(c), "shop", func(a *app.App) error {
		return a.ApplyScale([]app.ScaleOp{{Process: "web", Op: '=', N: 2}})
	}, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	a := getApp(t, s, "shop")
	if a.Release != 2 || a.Processes["web"].Replicas != 2 {
		t.Errorf("record: release v%d, web=%d; want v2, web=2", a.Release, a.Processes["web"].Replicas)
	}
	if r, _ := getRelease(t, s, 2); r.Status != app.StatusDeployed {
		t.Errorf("the running release v2 is %s, want deployed", r.Status)
	}
	if got := listDeployments(t, c)["shop-web"].Spec.Template.Labels["tug.dev/release"]; got != "2" {
		t.Errorf("units run release %s, want 2", got)
	}
}

// copyRecords writes the app's records of from (ConfigMaps and Secrets)
// into to through its tracker (callable from a reactor of to).
func copyRecords(t *testing.T, from, to *fake.Clientset) {
	t.Helper()
	ctx := context.Background()
	cms, _ := from.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	secs, _ := from.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	put := func(gvr schema.GroupVersionResource, obj runtime.Object, name string) {
		if _, err := to.Tracker().Get(gvr, ns, name); err == nil {
			if err := to.Tracker().Update(gvr, obj, ns); err != nil {
				t.Error(err)
			}
		} else if err := to.Tracker().Add(obj); err != nil {
			t.Error(err)
		}
	}
	for i := range cms.Items {
		put(corev1.SchemeGroupVersion.WithResource("configmaps"), &cms.Items[i], cms.Items[i].Name)
	}
	for i := range secs.Items {
		put(corev1.SchemeGroupVersion.WithResource("secrets"), &secs.Items[i], secs.Items[i].Name)
	}
}

// fastRenewals makes d's lock renew every few milliseconds.
func fastRenewals(d *Deps) { d.LockTiming.RenewEvery = 10 * time.Millisecond }

// cancelOn is a Progress that cancels the command when a line starts with
// prefix, as a Ctrl-C at that moment would.
type cancelOn struct {
	prefix string
	cancel context.CancelFunc
}

func (c cancelOn) Update(msg string) {
	if strings.HasPrefix(msg, c.prefix) {
		c.cancel()
	}
}

func (c cancelOn) Done(string) {}
func (c cancelOn) Fail(string) {}

// A Ctrl-C mid-rollout ends with what runs and the command that finishes
// or undoes the release, and still reads as a cancellation (exit 130).
func TestInterruptedRolloutSaysWhatToRunNext(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(context.Background(), deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := deps(c)
	d.Progress = cancelOn{"applying release", cancel}
	_, err := Roll(ctx, d, "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{})
	var in *InterruptedError
	if !errors.As(err, &in) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Roll = %v; want an InterruptedError that is a cancellation", err)
	}
	want := `the rollout of v2 of app "shop" stopped before it finished: no unit runs; 'tug release rollback shop v2' finishes it, 'tug release rollback shop v1' goes back`
	if got := in.NextStep(); got != want {
		t.Errorf("NextStep = %q\nwant       %q", got, want)
	}
	if r, _ := getRelease(t, s, 2); r.Status != app.StatusInterrupted {
		t.Errorf("v2 is %s", r.Status)
	}
}

// waitingFor is a Progress that signals once a line says tug waits for the
// lock.
type waitingFor struct{ ch chan string }

func (w waitingFor) Update(msg string) {
	if strings.HasPrefix(msg, "waiting for ") {
		select {
		case w.ch <- msg:
		default:
		}
	}
}

func (w waitingFor) Done(string) {}
func (w waitingFor) Fail(string) {}

// --wait-lock: a change started while another holds the lock waits for it,
// says for whom, and goes on once it is released.
func TestWaitLockGoesOnOnceTheLockIsFree(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	other := acquire(t, c, lock.Holder{User: "alice", PID: 1, Host: "laptop"})
	d := deps(c)
	d.WaitLock = time.Minute
	waiting := waitingFor{make(chan string, 1)}
	d.Progress = waiting
	done := make(chan error, 1)
	go func() {
		_, err := Roll(context.Background(), d, "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true})
		done <- err
	}()
	select {
	case msg := <-waiting.ch:
		if !strings.Contains(msg, "alice (pid 1 on laptop)") || !strings.Contains(msg, "up to 1m0s") {
			t.Errorf("progress %q", msg)
		}
	case err := <-done:
		t.Fatalf("Roll ended while the lock was held: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no progress line says tug waits for the lock")
	}
	other.Unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Roll after the lock came free: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Roll still waits after the lock came free")
	}
	if a := getApp(t, s, "shop"); a.Release != 1 {
		t.Errorf("record release v%d", a.Release)
	}
}

// --wait-lock gives up after its time with the holder named; without it
// the refusal is at once.
func TestWaitLockGivesUp(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	other := acquire(t, c, lock.Holder{User: "alice"})
	defer other.Unlock()
	d := deps(c)
	d.WaitLock = 300 * time.Millisecond
	_, err := Roll(context.Background(), d, "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true})
	var waited *lock.WaitError
	var held *lock.HeldError
	if !errors.As(err, &waited) || !errors.As(err, &held) || held.Holder != "alice" || !strings.Contains(err.Error(), "after waiting") {
		t.Fatalf("Roll = %v; want a lock.WaitError naming alice", err)
	}
	if rels, _ := s.ListReleases(context.Background(), "shop"); len(rels) != 0 {
		t.Errorf("%d releases made while waiting", len(rels))
	}
}

// Every failed change shares one shape: its kind and diagnosis decide the
// exit code, and the kind is found through any wrapping.
func TestChangeErrorsShareOneShape(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind Kind
		code int
	}{
		{&Error{Result: &Result{App: "shop", Release: 2, Failure: &rollout.Failure{Class: rollout.ClassCrash, Message: "web crashed"}}}, KindRollout, 11},
		{&ReshapeError{App: "shop", Failure: &rollout.Failure{Class: rollout.ClassUnschedulable, Message: "no node"}}, KindFormation, 13},
		{&ReleasePhaseError{App: "shop", Release: 2, Code: 4}, KindReleasePhase, 17},
		{&RemovalError{App: "shop", Processes: []string{"worker"}}, KindRefused, 2},
	} {
		wrapped := fmt.Errorf("context: %w", c.err)
		var failed ChangeError
		if !errors.As(wrapped, &failed) || failed.Kind() != c.kind {
			t.Errorf("%T: not a ChangeError of kind %s through wrapping (%v)", c.err, c.kind, failed)
			continue
		}
		var coded interface{ ExitCode() int }
		if !errors.As(wrapped, &coded) || coded.ExitCode() != c.code || failed.Kind().ExitCode(failed.Diagnosis()) != c.code {
			t.Errorf("%T: exit code %d, kind's %d; want %d", c.err, coded.ExitCode(), failed.Kind().ExitCode(failed.Diagnosis()), c.code)
		}
	}
	if d := (&ReleasePhaseError{App: "shop", Release: 2, Code: 4}).Diagnosis(); d == nil || d.Class != rollout.ClassReleasePhase || *d.ContainerExitCode != 4 {
		t.Errorf("a release phase's diagnosis %+v", d)
	}
	if (&RemovalError{}).Diagnosis() != nil {
		t.Error("a refusal has no diagnosis")
	}
}

// Taking the lock gives a route through a Gateway that has no token yet
// (made by a tug before route tokens; a canary running across the upgrade)
// its token, once, so a split rendered from the record has the probe rule
// that answers Tug-Split.
func TestBeginGivesARouteWithoutATokenOne(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Route: &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com"}})
	tx, err := Begin(context.Background(), deps(c), "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	a := tx.App()
	tx.End()
	if a.Route == nil || a.Route.Token == "" {
		t.Fatalf("route after the lock was taken: %+v, want a token", a.Route)
	}
	token := a.Route.Token
	tx, err = Begin(context.Background(), deps(c), "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.End()
	if a := tx.App(); a.Route.Token != token {
		t.Errorf("the next command changed the token: %+v", a.Route)
	}
	if got, _ := s.GetApp(context.Background(), "shop"); got.Route.Token != token {
		t.Errorf("stored token %q, want %q", got.Route.Token, token)
	}
}
