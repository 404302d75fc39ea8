package deploy

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
)

// progressFunc is a Progress that calls f with each line.
type progressFunc func(string)

func (f progressFunc) Update(msg string) { f(msg) }

func (f progressFunc) Done(string) {}
func (f progressFunc) Fail(string) {}

// deployedV1 makes release v1 (shop:1) deployed, its Deployment rolled out,
// then clears the Deployment's status, so the next rollout's wait blocks
// until the test says the units run (seedRunning).
func deployedV1(t *testing.T) (*fake.Clientset, *app.Store) {
	t.Helper()
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(context.Background(), deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if r, _ := getRelease(t, s, 1); r.Status != app.StatusDeployed {
		t.Fatalf("v1 = %s", r.Status)
	}
	return c, s
}

func releaseStatus(t *testing.T, s *app.Store, v int) (app.Status, string) {
	t.Helper()
	r, _ := getRelease(t, s, v)
	return r.Status, r.FailReason
}

// The units of release v: the Deployment's pod template names it and, with
// rolledOut, the controllers finished.
func setTemplate(t *testing.T, c *fake.Clientset, v string, rolledOut bool) {
	t.Helper()
	ctx := context.Background()
	d, err := c.AppsV1().Deployments(ns).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Labels[kube.LabelRelease] = v
	d.Spec.Template.Spec.Containers[0].Image = "shop:" + v
	d.Status = appsv1.DeploymentStatus{}
	if rolledOut {
		d.Status = done(1, 0)
	}
	if _, err := c.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Ctrl-C (or SIGTERM: both cancel the command's context) while the rollout
// waits: the release is interrupted at once, the record keeps v1, and the
// lock is released.
func TestRollCancelledMidWaitMarksInterrupted(t *testing.T) {
	c, s := deployedV1(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := deps(c)
	d.Progress = progressFunc(func(msg string) {
		if strings.Contains(msg, "0 of 1 new unit ready") {
			cancel() // the wait has started
		}
	})
	_, err := Roll(ctx, d, "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{Timeout: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Roll = %v, want context.Canceled", err)
	}
	st, reason := releaseStatus(t, s, 2)
	if st != app.StatusInterrupted || !strings.Contains(reason, "cancelled (Ctrl-C or SIGTERM)") {
		t.Errorf("v2 = %s %q, want interrupted because cancelled", st, reason)
	}
	if a := getApp(t, s, "shop"); a.Release != 1 || a.Image != "shop:1" {
		t.Errorf("record = v%d %s, want v1 shop:1", a.Release, a.Image)
	}
	assertNoLease(t, c)
}

// Another tug takes the lock while the rollout waits: the wait stops at
// once and the release is interrupted. When the units then finish that
// release anyway, the next command that takes the lock records it deployed.
func TestRollLostLockMarksInterruptedThenReconciles(t *testing.T) {
	c, s := deployedV1(t)
	var stolen atomic.Bool
	gvr := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if stolen.Load() {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), lock.Name("shop"), errors.New("changed"))
		}
		return false, nil, nil
	})
	d := deps(c)
	d.LockTiming.RenewEvery = 20 * time.Millisecond
	d.Progress = progressFunc(func(msg string) {
		if strings.Contains(msg, "0 of 1 new unit ready") && !stolen.Load() {
			// carol's tug takes the lease over
			if _, err := c.CoordinationV1().Leases(ns).Update(context.Background(), lease("carol", time.Now()), metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
			stolen.Store(true)
		}
	})
	_, err := Roll(context.Background(), d, "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), `lost the deploy lock of app "shop"`) {
		t.Fatalf("Roll = %v, want the lost lock", err)
	}
	st, reason := releaseStatus(t, s, 2)
	if st != app.StatusInterrupted || !strings.Contains(reason, "lost the deploy lock") {
		t.Errorf("v2 = %s %q, want interrupted by the lost lock", st, reason)
	}
	if a := getApp(t, s, "shop"); a.Release != 1 {
		t.Errorf("record = v%d, want v1", a.Release)
	}

	// carol's tug is gone; the units finished v2 on their own.
	stolen.Store(false)
	if err := c.CoordinationV1().Leases(ns).Delete(context.Background(), lock.Name("shop"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	setTemplate(t, c, "2", true)
	a := getApp(t, s, "shop")
	a, err = Reconcile(context.Background(), c, s, a)
	if err != nil {
		t.Fatal(err)
	}
	if a.Release != 2 || a.Image != "shop:2" {
		t.Errorf("record after reconcile = v%d %s, want v2 shop:2", a.Release, a.Image)
	}
	if st, reason := releaseStatus(t, s, 2); st != app.StatusDeployed || reason != "" {
		t.Errorf("v2 = %s %q, want deployed", st, reason)
	}
	if st, _ := releaseStatus(t, s, 1); st != app.StatusSuperseded {
		t.Errorf("v1 = %s, want superseded", st)
	}
}

// The final write (the app record naming v2) fails: the release is
// interrupted, not left pending, and the next command that takes the lock
// sees the units run v2 and records it.
func TestRollFinalRecordWriteFails(t *testing.T) {
	c, s := deployedV1(t)
	var failing atomic.Bool
	failing.Store(true)
	c.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		cm, ok := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap)
		if ok && failing.Load() && strings.Contains(cm.Data["app.json"], `"release":2,`) {
			return true, nil, apierrors.NewServiceUnavailable("etcd is sad")
		}
		return false, nil, nil
	})
	d := deps(c)
	d.Progress = progressFunc(func(msg string) {
		if strings.Contains(msg, "0 of 1 new unit ready") {
			seedRunning(t, c, "shop-web", 1)
		}
	})
	_, err := Roll(context.Background(), d, "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{Timeout: time.Minute})
	if err == nil {
		t.Fatal("Roll succeeded although the record could not be written")
	}
	st, reason := releaseStatus(t, s, 2)
	if st != app.StatusInterrupted || !strings.Contains(reason, "etcd is sad") {
		t.Errorf("v2 = %s %q, want interrupted with the API's error", st, reason)
	}
	failing.Store(false)
	// the next deploy reconciles first: v2 runs fully, so v2 was deployed
	// and superseded by v3 (no wait: NoWait)
	res, err := Roll(context.Background(), deps(c), "shop", DeployChange("shop:3", map[string]string{"web": ""}, ""), Options{NoWait: true})
	if err != nil || res.Release != 3 {
		t.Fatalf("Roll v3 = %+v, %v", res, err)
	}
	for v, want := range map[int]app.Status{1: app.StatusSuperseded, 2: app.StatusSuperseded, 3: app.StatusDeployed} {
		if st, _ := releaseStatus(t, s, v); st != want {
			t.Errorf("v%d = %s, want %s", v, st, want)
		}
	}
}

// The record was written but the release's own status write failed (and
// failed again when settling): the release stays pending, and the next
// command that takes the lock records it deployed, since the record names it.
func TestReconcilePendingReleaseTheRecordNames(t *testing.T) {
	c, s := deployedV1(t)
	var failing atomic.Bool
	failing.Store(true)
	c.PrependReactor("patch", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if failing.Load() && p.GetName() == app.ReleaseSecretName("shop", 2) {
			return true, nil, apierrors.NewServiceUnavailable("etcd is sad")
		}
		return false, nil, nil
	})
	d := deps(c)
	d.Progress = progressFunc(func(msg string) {
		if strings.Contains(msg, "0 of 1 new unit ready") {
			seedRunning(t, c, "shop-web", 1)
		}
	})
	if _, err := Roll(context.Background(), d, "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{Timeout: time.Minute}); err == nil {
		t.Fatal("Roll succeeded although the release status could not be written")
	}
	if st, _ := releaseStatus(t, s, 2); st != app.StatusPending {
		t.Fatalf("v2 = %s; the fake should have refused every write", st)
	}
	failing.Store(false)
	// a scale takes the lock too, and reconciles before it applies
	setTemplate(t, c, "2", true)
	if _, err := Reshape(context.Background(), deps(c), "shop", func(a *app.App) error { return nil }, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if st, _ := releaseStatus(t, s, 2); st != app.StatusDeployed {
		t.Errorf("v2 = %s, want deployed", st)
	}
	if st, _ := releaseStatus(t, s, 1); st != app.StatusSuperseded {
		t.Errorf("v1 = %s, want superseded", st)
	}
}

// A tug killed mid-deploy leaves v2 pending. The next lock taker looks at
// what the Deployments run.
func TestReconcileKilledDeploy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		template   string
		rolledOut  bool
		want       app.Status
		wantRecord int
	}{
		{"units run v2 fully", "2", true, app.StatusDeployed, 2},
		{"units still rolling to v2", "2", false, app.StatusInterrupted, 1},
		{"killed before apply", "1", true, app.StatusInterrupted, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := deployedV1(t)
			seedRelease(t, s, &app.Release{Version: 2, Image: "shop:2", Processes: map[string]string{"web": ""}, Status: app.StatusPending}, nil)
			getApp(t, s, "shop") // the store's cached record is from before Roll
			if _, err := s.UpdateApp(context.Background(), "shop", func(a *app.App) error { a.LastRelease = 2; return nil }); err != nil {
				t.Fatal(err)
			}
			setTemplate(t, c, tc.template, tc.rolledOut)

			// app info, which takes no lock, tells what runs
			info, err := app.GetInfo(context.Background(), s, "shop")
			if err != nil {
				t.Fatal(err)
			}
			if tc.template == "2" {
				if info.Running == nil || info.Running.Releases[0] != 2 || info.Running.RollingOut == tc.rolledOut ||
					!strings.Contains(info.Running.Note, "the record says v1; the deploy of v2 is in progress or was interrupted") {
					t.Errorf("info.Running = %+v", info.Running)
				}
			} else if info.Running != nil {
				t.Errorf("info.Running = %+v, want nil: the units run the record's release", info.Running)
			}

			a, err := Reconcile(context.Background(), c, s, getApp(t, s, "shop"))
			if err != nil {
				t.Fatal(err)
			}
			if st, reason := releaseStatus(t, s, 2); st != tc.want {
				t.Errorf("v2 = %s %q, want %s", st, reason, tc.want)
			} else if st == app.StatusInterrupted && !strings.Contains(reason, "the units run v1") {
				t.Errorf("reason = %q", reason)
			}
			if a.Release != tc.wantRecord || getApp(t, s, "shop").Release != tc.wantRecord {
				t.Errorf("record = v%d, want v%d", a.Release, tc.wantRecord)
			}
			wantV1 := app.StatusDeployed
			if tc.wantRecord == 2 {
				wantV1 = app.StatusSuperseded
			}
			if st, _ := releaseStatus(t, s, 1); st != wantV1 {
				t.Errorf("v1 = %s, want %s", st, wantV1)
			}
			if tc.wantRecord == 2 {
				if info, _ := app.GetInfo(context.Background(), s, "shop"); info.Running != nil || info.Image != "shop:2" {
					t.Errorf("after reconcile info = %s running %+v", info.Image, info.Running)
				}
			}
			// nothing left to do: a second look writes nothing
			c.ClearActions()
			if _, err := Reconcile(context.Background(), c, s, getApp(t, s, "shop")); err != nil {
				t.Fatal(err)
			}
			for _, act := range c.Actions() {
				if act.GetVerb() != "get" && act.GetVerb() != "list" {
					t.Errorf("second reconcile wrote: %s %s", act.GetVerb(), act.GetResource().Resource)
				}
			}
		})
	}
}

// An older release left pending under a newer deployed one is interrupted;
// a second release saying deployed is superseded.
func TestReconcileOldLeftovers(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Release: 3, LastRelease: 3, Image: "shop:3"})
	seedRelease(t, s, &app.Release{Version: 1, Image: "shop:1", Status: app.StatusDeployed}, nil)
	seedRelease(t, s, &app.Release{Version: 2, Image: "shop:2", Status: app.StatusPending}, nil)
	seedRelease(t, s, &app.Release{Version: 3, Image: "shop:3", Status: app.StatusPending}, nil)
	if _, err := Reconcile(context.Background(), c, s, getApp(t, s, "shop")); err != nil {
		t.Fatal(err)
	}
	for v, want := range map[int]app.Status{1: app.StatusSuperseded, 2: app.StatusInterrupted, 3: app.StatusDeployed} {
		if st, _ := releaseStatus(t, s, v); st != want {
			t.Errorf("v%d = %s, want %s", v, st, want)
		}
	}
}

// The record names v2 but the release's status write fails once: settle
// writes it again with its own deadline, and the deploy succeeds.
func TestRollStatusWriteFailsOnce(t *testing.T) {
	c, s := deployedV1(t)
	var failures atomic.Int32
	c.PrependReactor("patch", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetName() == app.ReleaseSecretName("shop", 2) && failures.Add(1) == 1 {
			return true, nil, apierrors.NewServiceUnavailable("etcd is sad")
		}
		return false, nil, nil
	})
	d := deps(c)
	d.Progress = progressFunc(func(msg string) {
		if strings.Contains(msg, "0 of 1 new unit ready") {
			seedRunning(t, c, "shop-web", 1)
		}
	})
	res, err := Roll(context.Background(), d, "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{Timeout: time.Minute})
	if err != nil || res.Status != app.StatusDeployed {
		t.Fatalf("Roll = %+v, %v; want deployed", res, err)
	}
	if st, _ := releaseStatus(t, s, 2); st != app.StatusDeployed || failures.Load() < 2 {
		t.Errorf("v2 = %s after %d status writes", st, failures.Load())
	}
}

// A tug killed between storing its release and counting it in the record:
// the next deploy counts it, marks it interrupted, and takes the next number
// instead of failing on "already exists" forever.
func TestReconcileCountsAnOrphanRelease(t *testing.T) {
	c, s := deployedV1(t)
	seedRelease(t, s, &app.Release{Version: 2, Image: "shop:2", Processes: map[string]string{"web": ""}, Status: app.StatusPending}, nil)
	if a := getApp(t, s, "shop"); a.LastRelease != 1 {
		t.Fatalf("LastRelease = %d", a.LastRelease)
	}
	res, err := Roll(context.Background(), deps(c), "shop", DeployChange("shop:3", map[string]string{"web": ""}, ""), Options{NoWait: true})
	if err != nil || res.Release != 3 {
		t.Fatalf("Roll = %+v, %v; want release v3", res, err)
	}
	if st, _ := releaseStatus(t, s, 2); st != app.StatusInterrupted {
		t.Errorf("v2 = %s, want interrupted", st)
	}
	if a := getApp(t, s, "shop"); a.LastRelease != 3 || a.Release != 3 {
		t.Errorf("record = release %d, last %d", a.Release, a.LastRelease)
	}
}
