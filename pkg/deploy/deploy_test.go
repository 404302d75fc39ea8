package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/rollout"
)

// The rollouts below use the fake clientset's server-side apply
// (fake.NewClientset tracks managed fields). The fake has no controllers, so
// a wait only ends when the test seeds a Deployment status or a pod. Its
// dry-run writes store nothing (kubetest.HonorDryRun), but nothing
// validates them either: the e2e tests cover what a real server refuses.

func deps(c *fake.Clientset) Deps {
	return Deps{Client: c, Namespace: ns, Holder: lock.Holder{User: "alice", PID: 42, Host: "laptop"}}
}

func TestRollFirstDeployNoWait(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	rec := &recorder{}
	d := deps(c)
	d.Progress = rec
	res, err := Roll(context.Background(), d, "shop",
		DeployChange("shop:1", map[string]string{"web": "./server", "worker": "./work"}, "first"), Options{NoWait: true})
	if err != nil {
		t.Fatalf("Roll: %v", err)
	}
	// applied, not waited for: the result says so; the record names the release
	want := &Result{App: "shop", Namespace: ns, Release: 1, Status: StatusApplied, Image: "shop:1",
		Processes: []ProcessResult{{Name: "web", Command: "./server", Units: 1}, {Name: "worker", Command: "./work", Units: 1}}}
	res.DurationMS = 0
	if b, w := mustJSON(t, res), mustJSON(t, want); b != w {
		t.Errorf("result =\n %s\nwant\n %s", b, w)
	}

	ds := listDeployments(t, c)
	if len(ds) != 2 {
		t.Fatalf("deployments = %v", slices.Collect(maps.Keys(ds)))
	}
	web := ds["shop-web"]
	if web.Spec.Template.Labels[kube.LabelRelease] != "1" || web.Spec.Template.Spec.Containers[0].Image != "shop:1" {
		t.Errorf("web deployment = %+v", web.Spec.Template)
	}
	if mf := web.ManagedFields; len(mf) == 0 || mf[0].Manager != kube.FieldManager || mf[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managed fields = %+v, want a server-side apply by %q", mf, kube.FieldManager)
	}
	if _, err := c.CoreV1().Services(ns).Get(context.Background(), "shop", metav1.GetOptions{}); err != nil {
		t.Errorf("web service: %v", err)
	}

	r, cfg := getRelease(t, s, 1)
	if r.Status != app.StatusDeployed || r.Kind != app.KindDeploy || r.Message != "first" || r.Author != "alice" || r.CreatedAt.IsZero() || len(cfg) != 0 {
		t.Errorf("release = %+v", r)
	}
	a := getApp(t, s, "shop")
	if a.Release != 1 || a.LastRelease != 1 || a.Image != "shop:1" ||
		!maps.Equal(a.Processes, map[string]app.Process{"web": {Replicas: 1}, "worker": {Replicas: 1}}) {
		t.Errorf("app = %+v", a)
	}
	if lines := rec.All(); !slices.Contains(lines, "applying release v1") {
		t.Errorf("progress = %q", lines)
	}
	assertNoLease(t, c)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRollSecondDeployNoWait(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": "", "worker": "./w"}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	// scaled between deploys (by another tug: a fresh Store; the fake
	// clientset does not enforce resourceVersion, so a Store holding an old
	// copy would not see the conflict a real API server reports)
	s = &app.Store{Client: c, Namespace: ns}
	if _, err := s.UpdateApp(ctx, "shop", func(a *app.App) error { a.Processes["web"] = app.Process{Replicas: 4}; return nil }); err != nil {
		t.Fatal(err)
	}
	res, err := Roll(ctx, deps(c), "shop", DeployChange("shop:2", map[string]string{"web": "", "clock": "./clock"}, ""), Options{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Release != 2 {
		t.Errorf("release = %d", res.Release)
	}
	ds := listDeployments(t, c)
	if _, ok := ds["shop-worker"]; ok || len(ds) != 2 {
		t.Errorf("deployments = %v, want web and clock (worker removed)", slices.Collect(maps.Keys(ds)))
	}
	if got := *ds["shop-web"].Spec.Replicas; got != 4 {
		t.Errorf("web replicas = %d, want 4 (kept)", got)
	}
	if got := *ds["shop-clock"].Spec.Replicas; got != 1 {
		t.Errorf("clock replicas = %d, want 1 (new process)", got)
	}
	if r, _ := getRelease(t, s, 1); r.Status != app.StatusSuperseded {
		t.Errorf("v1 status = %s, want superseded", r.Status)
	}
	if r, _ := getRelease(t, s, 2); r.Status != app.StatusDeployed {
		t.Errorf("v2 status = %s, want deployed", r.Status)
	}
	a := getApp(t, s, "shop")
	if !maps.Equal(a.Processes, map[string]app.Process{"web": {Replicas: 4}, "clock": {Replicas: 1}}) || a.Release != 2 {
		t.Errorf("app = %+v", a)
	}

	// a release without web: the Service goes
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:3", map[string]string{"worker": "./w"}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Services(ns).Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("service after dropping web: %v", err)
	}
}

func TestRollCarriesConfigAndHistory(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	steps := []Change{
		DeployChange("shop:1", map[string]string{"web": ""}, ""),
		EnvChange(app.ConfigMap{"A": "1"}, nil, ""),
		EnvChange(app.ConfigMap{"B": "2"}, nil, ""),
		DeployChange("shop:2", map[string]string{"web": ""}, ""),
	}
	for i, ch := range steps {
		if _, err := Roll(ctx, deps(c), "shop", ch, Options{NoWait: true, HistoryMax: 2}); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	rels, err := s.ListReleases(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	var vs []int
	for _, r := range rels {
		vs = append(vs, r.Version)
	}
	if !slices.Equal(vs, []int{4, 3}) {
		t.Errorf("releases kept = %v, want [4 3] (history 2)", vs)
	}
	r, cfg := getRelease(t, s, 4)
	if !maps.Equal(cfg, app.ConfigMap{"A": "1", "B": "2"}) || r.Image != "shop:2" {
		t.Errorf("v4 = %+v %v, want the config carried over", r, cfg)
	}
	if r, _ := getRelease(t, s, 3); r.Kind != app.KindEnv || r.Message != "env: +B" || r.Image != "shop:1" {
		t.Errorf("v3 = %+v", r)
	}
	if a := getApp(t, s, "shop"); a.HistoryMax != 2 || a.Release != 4 || a.LastRelease != 4 {
		t.Errorf("app = %+v", a)
	}
	ds := listDeployments(t, c)
	if ef := ds["shop-web"].Spec.Template.Spec.Containers[0].EnvFrom; len(ef) != 1 || ef[0].SecretRef.Name != "tug-release-shop-v4" {
		t.Errorf("envFrom = %+v, want v4's secret", ef)
	}
}

func TestRollNoRestartStages(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	before := listDeployments(t, c)["shop-web"]

	res, err := Roll(ctx, deps(c), "shop", EnvChange(app.ConfigMap{"A": "1"}, nil, ""), Options{NoRestart: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != app.StatusStaged || res.Release != 2 {
		t.Errorf("result = %+v, want v2 staged", res)
	}
	r, cfg := getRelease(t, s, 2)
	if r.Status != app.StatusStaged || cfg["A"] != "1" || r.Image != "shop:1" {
		t.Errorf("v2 = %+v %v", r, cfg)
	}
	a := getApp(t, s, "shop")
	if a.Release != 1 || a.LastRelease != 2 {
		t.Errorf("app release %d last %d, want 1 and 2", a.Release, a.LastRelease)
	}
	after := listDeployments(t, c)["shop-web"]
	if after.ResourceVersion != before.ResourceVersion || after.Spec.Template.Labels[kube.LabelRelease] != "1" {
		t.Error("a staged release changed the running Deployment")
	}
	if r, _ := getRelease(t, s, 1); r.Status != app.StatusDeployed {
		t.Errorf("v1 = %s, want still deployed", r.Status)
	}
	assertNoLease(t, c)

	// a second staged change builds on the first
	if _, err := Roll(ctx, deps(c), "shop", EnvChange(app.ConfigMap{"B": "2"}, nil, ""), Options{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	// the next rollout runs the staged config
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, cfg := getRelease(t, s, 4); !maps.Equal(cfg, app.ConfigMap{"A": "1", "B": "2"}) {
		t.Errorf("v4 config = %v, want the staged A and B", cfg)
	}
}

func TestRollEnvBeforeFirstDeployStages(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	res, err := Roll(ctx, deps(c), "shop", EnvChange(app.ConfigMap{"A": "1"}, nil, ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != app.StatusStaged {
		t.Errorf("status = %s, want staged (nothing to run yet)", res.Status)
	}
	if len(listDeployments(t, c)) != 0 {
		t.Error("a config change before any deploy created Deployments")
	}
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, cfg := getRelease(t, s, 2); cfg["A"] != "1" {
		t.Errorf("first deploy config = %v, want the staged A", cfg)
	}
}

func TestRollDryRun(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": "", "worker": "./w"}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Roll(ctx, deps(c), "shop", EnvChange(app.ConfigMap{"TOKEN": "old-secret"}, nil, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	c.ClearActions()

	res, err := Roll(ctx, deps(c), "shop", EnvChange(app.ConfigMap{"TOKEN": "new-secret", "DB": "db-secret"}, nil, ""), Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "dry-run" || res.Release != 3 {
		t.Errorf("result = %+v", res)
	}
	wantPlan := []string{"web: 1 unit restart", "worker: 1 unit restart", "env: +DB, ~TOKEN (values hidden)"}
	if !slices.Equal(res.Plan, wantPlan) {
		t.Errorf("plan = %q, want %q", res.Plan, wantPlan)
	}
	if b := mustJSON(t, res); strings.Contains(b, "secret") {
		t.Errorf("dry-run result shows a value: %s", b)
	}
	var patches int
	for _, a := range c.Actions() {
		switch a := a.(type) {
		case k8stesting.PatchAction:
			patches++
			if !slices.Equal(a.(k8stesting.PatchActionImpl).PatchOptions.DryRun, []string{metav1.DryRunAll}) {
				t.Errorf("%s %s without dry-run", a.GetVerb(), a.GetResource().Resource)
			}
		case k8stesting.CreateActionImpl:
			// the release's config and record, validated by the server, not stored
			if res := a.GetResource().Resource; !slices.Equal(a.CreateOptions.DryRun, []string{metav1.DryRunAll}) || res != "secrets" && res != "configmaps" {
				t.Errorf("dry run wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
			}
		case k8stesting.CreateAction, k8stesting.UpdateAction, k8stesting.DeleteAction:
			t.Errorf("dry run wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if patches != 3 {
		t.Errorf("%d dry-run applies, want 3 (two Deployments and the Service)", patches)
	}
	if _, _, err := s.GetRelease(ctx, "shop", 3); !app.IsNotFound(err) {
		t.Errorf("dry run stored a release: %v", err)
	}
	if a := getApp(t, s, "shop"); a.LastRelease != 2 || a.Release != 2 {
		t.Errorf("dry run changed the app: %+v", a)
	}
}

func TestRollRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("missing app", func(t *testing.T) {
		c, _ := newFake()
		_, err := Roll(ctx, deps(c), "shop", DeployChange("x", map[string]string{"web": ""}, ""), Options{NoWait: true})
		if !app.IsNotFound(err) {
			t.Fatalf("Roll = %v, want not found", err)
		}
	})
	t.Run("no change", func(t *testing.T) {
		c, s := newFake()
		seedApp(t, s, &app.App{Name: "shop"})
		_, err := Roll(ctx, deps(c), "shop", EnvChange(nil, nil, ""), Options{})
		if !errors.Is(err, ErrNoChange) {
			t.Fatalf("Roll = %v, want ErrNoChange", err)
		}
		if a := getApp(t, s, "shop"); a.LastRelease != 0 {
			t.Errorf("LastRelease = %d", a.LastRelease)
		}
		assertNoLease(t, c)
	})
	t.Run("locked", func(t *testing.T) {
		c, s := newFake(lease("bob (pid 7 on ci)", time.Now()))
		seedApp(t, s, &app.App{Name: "shop"})
		_, err := Roll(ctx, deps(c), "shop", DeployChange("x", map[string]string{"web": ""}, ""), Options{NoWait: true})
		var locked *lock.HeldError
		if !errors.As(err, &locked) || locked.Holder != "bob (pid 7 on ci)" {
			t.Fatalf("Roll = %v, want locked by bob", err)
		}
		if len(listDeployments(t, c)) != 0 || getApp(t, s, "shop").LastRelease != 0 {
			t.Error("a locked Roll changed something")
		}
		if l := getLease(t, c); *l.Spec.HolderIdentity != "bob (pid 7 on ci)" {
			t.Error("a locked Roll touched the lease")
		}
	})
}

func TestRollApplyFailureMarksReleaseFailed(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	c.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(appsv1.Resource("deployments"), "shop-web", errors.New("quota exceeded"))
	})
	_, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true})
	if err == nil || !strings.Contains(err.Error(), "applying deployment shop-web") {
		t.Fatalf("Roll = %v", err)
	}
	r, _ := getRelease(t, s, 1)
	if r.Status != app.StatusFailed || !strings.Contains(r.FailReason, "applying deployment shop-web") {
		t.Errorf("release = %s %q, want failed with the reason", r.Status, r.FailReason)
	}
	if a := getApp(t, s, "shop"); a.Release != 0 || a.LastRelease != 1 {
		t.Errorf("app = %+v", a)
	}
	assertNoLease(t, c)
}

// seedRunning makes the fake look like the controllers finished: the
// Deployment reports every unit of its spec updated and available. (The
// fake sets no generation, so every applied generation is 0.)
func seedRunning(t *testing.T, c *fake.Clientset, name string, n int32) {
	t.Helper()
	d, err := c.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = done(n, 0)
	if _, err := c.AppsV1().Deployments(ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestRollWaitsAndDeploys(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	seedRunning(t, c, "shop-web", 1)
	res, err := Roll(ctx, deps(c), "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Roll = %v", err)
	}
	if res.Status != app.StatusDeployed || res.Release != 2 {
		t.Errorf("result = %+v", res)
	}
}

func TestRollFailureRollsBack(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": "./v1"}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	seedRunning(t, c, "shop-web", 1)
	if _, err := c.CoreV1().Pods(ns).Create(ctx, crashPod("2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	res, err := Roll(ctx, deps(c), "shop", DeployChange("shop:2", map[string]string{"web": "./v2"}, ""), Options{Timeout: 5 * time.Second})
	var rollErr *Error
	if !errors.As(err, &rollErr) {
		t.Fatalf("Roll = %v, want a *deploy.Error", err)
	}
	if rollErr.ExitCode() != 11 {
		t.Errorf("exit code = %d, want 11 (crash)", rollErr.ExitCode())
	}
	if res == nil || res.Status != app.StatusFailed || res.RolledBackTo != 1 || res.Failure == nil || res.Failure.Class != rollout.ClassCrash {
		t.Fatalf("result = %+v", res)
	}
	if !slices.Equal(res.Failure.Logs, []string{"fake logs"}) {
		t.Errorf("failure logs = %q", res.Failure.Logs)
	}
	if want := `release v2 of app "shop" failed: web crashed with exit code 3 (Error); rolled back to v1`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	r2, _ := getRelease(t, s, 2)
	if r2.Status != app.StatusFailed || r2.FailReason != "web crashed with exit code 3 (Error)" {
		t.Errorf("v2 = %s %q", r2.Status, r2.FailReason)
	}
	if r1, _ := getRelease(t, s, 1); r1.Status != app.StatusDeployed {
		t.Errorf("v1 = %s, want still deployed", r1.Status)
	}
	a := getApp(t, s, "shop")
	if a.Release != 1 || a.Image != "shop:1" || a.LastRelease != 2 {
		t.Errorf("app = %+v", a)
	}
	web := listDeployments(t, c)["shop-web"]
	if got := web.Spec.Template.Labels[kube.LabelRelease]; got != "1" {
		t.Errorf("web runs release %s after the rollback, want 1", got)
	}
	if cmd := web.Spec.Template.Spec.Containers[0].Command; !slices.Equal(cmd, []string{"./v1"}) {
		t.Errorf("web command = %q after the rollback", cmd)
	}
	assertNoLease(t, c)
}

func TestRollFailureNoRollback(t *testing.T) {
	c, s := newFake(crashPod("1"))
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	res, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoRollback: true, Timeout: 5 * time.Second})
	var rollErr *Error
	if !errors.As(err, &rollErr) || res.RolledBackTo != 0 {
		t.Fatalf("Roll = %v, %+v", err, res)
	}
	if !strings.HasSuffix(err.Error(), "; not rolled back (--no-rollback): its units are left for inspection; 'tug app remove shop' or a new deploy clears them") {
		t.Errorf("error = %q", err)
	}
	if len(listDeployments(t, c)) != 1 {
		t.Error("with NoRollback the failed release's Deployment should stay for inspection")
	}
}

// --no-rollback after a good release says so, and how to go back: the
// reason nothing was rolled back is the flag (before: "nothing to roll back
// to", with v1 right there).
func TestRollFailureNoRollbackAfterAGoodRelease(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, crashPod("2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := Roll(ctx, deps(c), "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{NoRollback: true, Timeout: 5 * time.Second})
	want := `; not rolled back (--no-rollback): its units are left for inspection beside what still runs of v1; 'tug release rollback shop v1' puts v1 back`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error = %v\nwant suffix %q", err, want)
	}
}

// Before an app's first good deploy there is nothing to go back to: the
// failed release's Deployments are removed.
func TestRollFirstDeployFailureRemovesUnits(t *testing.T) {
	c, s := newFake(crashPod("1"))
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	res, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{Timeout: 5 * time.Second})
	var rollErr *Error
	if !errors.As(err, &rollErr) {
		t.Fatalf("Roll = %v", err)
	}
	if res.RolledBackTo != 0 || !strings.HasSuffix(err.Error(), "; nothing to roll back to") {
		t.Errorf("result %+v, error %q", res, err)
	}
	if ds := listDeployments(t, c); len(ds) != 0 {
		t.Errorf("deployments left: %v", slices.Collect(maps.Keys(ds)))
	}
	if _, err := c.CoreV1().Services(ns).Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("service left: %v", err)
	}
}

// markDeployed tolerates a previous release record that is gone (deleted by
// hand, or pruned by a concurrent tug): it calls app.IsNotFound on the error of
// SetReleaseStatus.
func TestMarkDeployedPreviousReleaseGone(t *testing.T) {
	_, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop", Release: 1, LastRelease: 2})
	seedRelease(t, s, &app.Release{Version: 2, Image: "shop:2", Status: app.StatusPending}, nil)
	a := getApp(t, s, "shop")
	r, _ := getRelease(t, s, 2)
	err := markDeployed(ctx, s, a, r, 1, 0)
	if err != nil {
		t.Fatalf("markDeployed checks app.IsNotFound(err), but store.go SetReleaseStatus returns kube.TranslateError(apierrors NotFound), never an *app.NotFoundError, so a missing previous release fails the deploy after it succeeded: %v", err)
	}
	if got := getApp(t, s, "shop"); got.Release != 2 {
		t.Errorf("app release = %d, want 2", got.Release)
	}
}

func TestPlan(t *testing.T) {
	a := &app.App{Processes: map[string]app.Process{"web": {Replicas: 3}, "worker": {Replicas: 1}, "clock": {Replicas: 1}}}
	base := &app.Release{Image: "shop:1", Processes: map[string]string{"web": "./server", "worker": "./w", "old": "./o"}}
	tests := []struct {
		name       string
		before     map[string]app.Process
		base       *app.Release
		baseConfig app.ConfigMap
		next       *app.Release
		config     app.ConfigMap
		want       []string
	}{
		{
			name: "first deploy",
			next: &app.Release{Image: "shop:1", Processes: map[string]string{"web": "", "worker": "./w"}},
			want: []string{`web: new process, 3 units, command (image default)`, `worker: new process, 1 unit, command "./w"`},
		},
		{
			name: "new image, changed and added and removed processes",
			base: base,
			next: &app.Release{Image: "shop:2", Processes: map[string]string{"web": "./server", "worker": "./w2", "clock": "./c"}},
			want: []string{
				"web: image shop:1 -> shop:2, 3 units restart",
				`clock: new process, 1 unit, command "./c"`,
				`worker: image shop:1 -> shop:2, command "./w" -> "./w2", 1 unit restart`,
				"old: removed",
			},
		},
		{
			name:       "config only",
			base:       base,
			baseConfig: app.ConfigMap{"A": "1", "B": "x"},
			next:       &app.Release{Image: "shop:1", Processes: map[string]string{"web": "./server", "worker": "./w", "old": "./o"}},
			config:     app.ConfigMap{"A": "2", "C": "y"},
			want:       []string{"web: 3 units restart", "old: unchanged", "worker: 1 unit restart", "env: ~A, +C, -B (values hidden)"},
		},
		{
			name:       "nothing",
			base:       base,
			baseConfig: app.ConfigMap{"A": "1"},
			next:       &app.Release{Image: "shop:1", Processes: map[string]string{"web": "./server"}},
			config:     app.ConfigMap{"A": "1"},
			want:       []string{"web: 3 units restart", "old: removed", "worker: removed"},
		},
		{
			// what tug.yaml sets beside the image: units, limits, history
			name:   "units, limits and settings",
			before: map[string]app.Process{"web": {Replicas: 2}, "worker": {Replicas: 1}},
			base:   &app.Release{Image: "shop:1", Processes: map[string]string{"web": "./server", "worker": "./w"}},
			next: &app.Release{Image: "shop:1", Processes: map[string]string{"web": "./server", "worker": "./w"},
				Limits: map[string]app.Limits{"worker": {CPU: "500m"}}, Rollout: app.Rollout{History: 20}},
			want: []string{"web: units 2 -> 3, 2 units restart", "worker: limits (none) -> cpu=500m, 1 unit restart", "settings: history 10 (default) -> 20"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plan(a, tt.before, tt.base, tt.baseConfig, tt.next, tt.config)
			if !slices.Equal(got, tt.want) {
				t.Errorf("plan =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

func TestWithProcesses(t *testing.T) {
	a := &app.App{Processes: map[string]app.Process{"web": {Replicas: 5}, "gone": {Replicas: 2}}}
	WithProcesses(a, &app.Release{Processes: map[string]string{"web": "", "worker": ""}})
	want := map[string]app.Process{"web": {Replicas: 5}, "worker": {Replicas: 1}}
	if !maps.Equal(a.Processes, want) {
		t.Errorf("processes = %v, want %v", a.Processes, want)
	}
}

func TestBaseRelease(t *testing.T) {
	ctx := context.Background()
	t.Run("never released", func(t *testing.T) {
		_, s := newFake()
		r, cfg, err := BaseRelease(ctx, s, &app.App{Name: "shop"})
		if err != nil || r != nil || cfg == nil || len(cfg) != 0 {
			t.Errorf("BaseRelease = %v, %v, %v", r, cfg, err)
		}
	})
	t.Run("failed releases never carry config", func(t *testing.T) {
		_, s := newFake()
		seedRelease(t, s, &app.Release{Version: 1, Image: "a", Status: app.StatusDeployed}, app.ConfigMap{"V": "1"})
		seedRelease(t, s, &app.Release{Version: 2, Image: "b", Status: app.StatusFailed}, app.ConfigMap{"V": "2"})
		seedRelease(t, s, &app.Release{Version: 3, Image: "c", Status: app.StatusPending}, app.ConfigMap{"V": "3"})
		r, cfg, err := BaseRelease(ctx, s, &app.App{Name: "shop", Release: 1, LastRelease: 3})
		if err != nil || r.Version != 1 || cfg["V"] != "1" {
			t.Errorf("BaseRelease = %+v, %v, %v; want v1", r, cfg, err)
		}
	})
	t.Run("staged after current", func(t *testing.T) {
		_, s := newFake()
		seedRelease(t, s, &app.Release{Version: 1, Image: "a", Status: app.StatusStaged}, app.ConfigMap{"V": "1"})
		seedRelease(t, s, &app.Release{Version: 2, Image: "a", Status: app.StatusDeployed}, app.ConfigMap{"V": "2"})
		seedRelease(t, s, &app.Release{Version: 3, Image: "a", Status: app.StatusStaged}, app.ConfigMap{"V": "3"})
		seedRelease(t, s, &app.Release{Version: 4, Image: "a", Status: app.StatusFailed}, app.ConfigMap{"V": "4"})
		r, cfg, err := BaseRelease(ctx, s, &app.App{Name: "shop", Release: 2, LastRelease: 4})
		if err != nil || r.Version != 3 || cfg["V"] != "3" {
			t.Errorf("BaseRelease = %+v, %v, %v; want v3", r, cfg, err)
		}
	})
}

func TestErrorMessage(t *testing.T) {
	f := &rollout.Failure{Class: rollout.ClassImagePull, Message: `image "x" cannot be pulled: not found`}
	tests := []struct {
		res  Result
		want string
	}{
		{Result{App: "shop", Release: 4, Status: app.StatusFailed, RolledBackTo: 3, Failure: f},
			`release v4 of app "shop" failed: image "x" cannot be pulled: not found; rolled back to v3`},
		{Result{App: "shop", Release: 1, Status: app.StatusFailed, Failure: f},
			`release v1 of app "shop" failed: image "x" cannot be pulled: not found; nothing to roll back to`},
	}
	for _, tt := range tests {
		e := &Error{Result: &tt.res}
		if e.Error() != tt.want {
			t.Errorf("Error() = %q, want %q", e.Error(), tt.want)
		}
		if e.ExitCode() != 10 {
			t.Errorf("ExitCode() = %d, want 10", e.ExitCode())
		}
	}
}

// DESIGN: "nothing else is touched". A release without a web process
// removes the app's Service; a Service of the same name that tug does not
// own (GetInfo already checks its labels) must survive.
func TestRollKeepsForeignServiceOfTheSameName(t *testing.T) {
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns,
		Labels: map[string]string{kube.LabelManagedBy: "helm", "app.kubernetes.io/name": "postgres"}}}
	c, s := newFake(foreign)
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(context.Background(), deps(c), "shop", DeployChange("shop:1", map[string]string{"worker": "./w"}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Services(ns).Get(context.Background(), "shop", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Fatal("removeStale deleted a Service that is not tug's")
	}
}

// When the rollback after a failed rollout fails too, the error must still
// carry the failure's class (exit code) and must not claim there was nothing
// to roll back to.
func TestRollRollbackAlsoFails(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, crashPod("2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if strings.Contains(string(a.(k8stesting.PatchAction).GetPatch()), `"tug.dev/release":"1"`) {
			return true, nil, apierrors.NewForbidden(appsv1.Resource("deployments"), "shop-web", errors.New("denied by policy"))
		}
		return false, nil, nil
	})
	res, err := Roll(ctx, deps(c), "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{Timeout: 5 * time.Second})
	if err == nil || res == nil || res.Failure == nil || res.Failure.Class != rollout.ClassCrash || res.RolledBackTo != 0 {
		t.Fatalf("Roll = %+v, %v", res, err)
	}
	if !strings.Contains(err.Error(), "rolling back to v1 also failed") || !strings.Contains(err.Error(), "denied by policy") {
		t.Errorf("error = %q", err)
	}
	var rollErr *Error
	if strings.Contains(err.Error(), "nothing to roll back to") || !errors.As(err, &rollErr) {
		t.Fatalf("Roll: when restore fails, Roll returns fmt.Errorf(\"%%v; rolling back ... also failed: %%w\", (&Error{...}).Error(), ...): the text says \"nothing to roll back to\" (Error() sees RolledBackTo 0 and status failed) right before \"rolling back to v1 also failed\", and the error wraps only the restore error, not *deploy.Error, so main loses the failure's exit code (11 here): %q", err)
	}
}

// A deploy by tag records the digest its units run; a rollback to it runs
// that digest, whatever the tag names by then.
func TestRollRecordsImageIDAndRollbackRunsIt(t *testing.T) {
	digestA := "sha256:" + strings.Repeat("a", 64)
	digestB := "sha256:" + strings.Repeat("b", 64)
	c, s := newFake(
		imagePod("shop-web-2", "2", "docker-pullable://reg.example/shop@"+digestA),
		imagePod("shop-web-3", "3", "reg.example/shop@"+digestB),
	)
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("reg.example/shop:v0", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	seedRunning(t, c, "shop-web", 1)
	for _, image := range []string{"reg.example/shop:moving", "reg.example/shop:v1"} {
		if _, err := Roll(ctx, deps(c), "shop", DeployChange(image, map[string]string{"web": ""}, ""), Options{Timeout: 5 * time.Second}); err != nil {
			t.Fatalf("deploy %s: %v", image, err)
		}
	}
	r2, _ := getRelease(t, s, 2)
	if r2.Image != "reg.example/shop:moving" || r2.ImageID != "reg.example/shop@"+digestA {
		t.Fatalf("v2 image %q, image ID %q", r2.Image, r2.ImageID)
	}
	if sum := app.SummarizeRelease(r2); sum.ImageDigest != digestA || sum.RunImage != "reg.example/shop@"+digestA {
		t.Errorf("v2 summary digest %q, run image %q", sum.ImageDigest, sum.RunImage)
	}
	if r3, _ := getRelease(t, s, 3); r3.ImageID != "reg.example/shop@"+digestB {
		t.Errorf("v3 image ID %q", r3.ImageID)
	}
	if r1, _ := getRelease(t, s, 1); r1.ImageID != "" {
		t.Errorf("v1 (not waited for) image ID %q, want none", r1.ImageID)
	}

	if _, err := Roll(ctx, deps(c), "shop", RollbackChange(ctx, s, 2), Options{NoWait: true}); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	web := listDeployments(t, c)["shop-web"]
	ctr := web.Spec.Template.Spec.Containers[0]
	if ctr.Image != "reg.example/shop@"+digestA || ctr.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("rollback runs %q (%s), want v2's digest", ctr.Image, ctr.ImagePullPolicy)
	}
	if r4, _ := getRelease(t, s, 4); r4.Image != "reg.example/shop:moving" || r4.ImageID != r2.ImageID {
		t.Errorf("v4 image %q, image ID %q: the tag stays, with v2's digest", r4.Image, r4.ImageID)
	}
	// a new image by tag starts without a digest
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("reg.example/shop:v9", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if got := listDeployments(t, c)["shop-web"].Spec.Template.Spec.Containers[0].Image; got != "reg.example/shop:v9" {
		t.Errorf("new deploy runs %q", got)
	}
}

// An image loaded onto the nodes (no registry digest, only the runtime's
// image ID) cannot be pinned: the ID is recorded and shown, but a config
// change or a rollback runs the tag, as nodes without the image could not
// run a bare ID.
func TestRollBareImageIDRunsTheTag(t *testing.T) {
	id := "sha256:" + strings.Repeat("d", 64)
	c, s := newFake(imagePod("shop-web-2", "2", id))
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("localhost/shop:v0", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	seedRunning(t, c, "shop-web", 1)
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("localhost/shop:moving", map[string]string{"web": ""}, ""), Options{Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	r2, _ := getRelease(t, s, 2)
	if r2.ImageID != id {
		t.Fatalf("v2 image ID %q, want the runtime's %q recorded", r2.ImageID, id)
	}
	if sum := app.SummarizeRelease(r2); sum.ImageDigest != id || sum.RunImage != "localhost/shop:moving" {
		t.Errorf("v2 summary digest %q, run image %q; want the ID shown and the tag run", sum.ImageDigest, sum.RunImage)
	}
	if _, err := Roll(ctx, deps(c), "shop", EnvChange(app.ConfigMap{"A": "1"}, nil, ""), Options{NoWait: true}); err != nil {
		t.Fatalf("env: %v", err)
	}
	if got := listDeployments(t, c)["shop-web"].Spec.Template.Spec.Containers[0].Image; got != "localhost/shop:moving" {
		t.Errorf("config change runs %q, want the tag", got)
	}
	if _, err := Roll(ctx, deps(c), "shop", RollbackChange(ctx, s, 1), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Roll(ctx, deps(c), "shop", RollbackChange(ctx, s, 2), Options{NoWait: true}); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	ctr := listDeployments(t, c)["shop-web"].Spec.Template.Spec.Containers[0]
	if ctr.Image != "localhost/shop:moving" || ctr.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("rollback runs %q (%s), want the tag", ctr.Image, ctr.ImagePullPolicy)
	}
	if r5, _ := getRelease(t, s, 5); r5.ImageID != id {
		t.Errorf("v5 image ID %q: the rollback keeps v2's recorded ID", r5.ImageID)
	}
}
