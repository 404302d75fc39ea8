package deploy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/rollout"
)

func TestReshape(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": "", "worker": "./w"}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	res, err := Reshape(ctx, deps(c), "shop", func(a *app.App) error {
		return a.ApplyScale([]app.ScaleOp{{Process: "web", Op: '=', N: 3}})
	}, Options{NoWait: true})
	if err != nil {
		t.Fatalf("Reshape: %v", err)
	}
	if res.Release != 1 || res.Status != StatusApplied || res.Processes[0].Units != 3 { // --no-wait: applied, not waited for
		t.Errorf("result = %+v", res)
	}
	ds := listDeployments(t, c)
	if got := *ds["shop-web"].Spec.Replicas; got != 3 {
		t.Errorf("web replicas = %d, want 3", got)
	}
	if got := ds["shop-web"].Spec.Template.Labels["tug.dev/release"]; got != "1" {
		t.Errorf("reshape changed the release to %s", got)
	}
	if a := getApp(t, s, "shop"); a.Processes["web"].Replicas != 3 || a.LastRelease != 1 {
		t.Errorf("app = %+v, want 3 web units and no new release", a)
	}
	rels, _ := s.ListReleases(ctx, "shop")
	if len(rels) != 1 {
		t.Errorf("%d releases, want 1: scaling makes none", len(rels))
	}
	assertNoLease(t, c)
}

func TestReshapeRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("bad change leaves no trace", func(t *testing.T) {
		c, s := newFake()
		seedApp(t, s, &app.App{Name: "shop", Release: 1, LastRelease: 1, Processes: map[string]app.Process{"web": {Replicas: 1}}})
		c.ClearActions()
		_, err := Reshape(ctx, deps(c), "shop", func(a *app.App) error {
			return a.ApplyScale([]app.ScaleOp{{Process: "nope", Op: '=', N: 1}})
		}, Options{NoWait: true})
		var unknown *app.UnknownProcessError
		if !errors.As(err, &unknown) {
			t.Fatalf("Reshape = %v, want an unknown process", err)
		}
		for _, a := range c.Actions() {
			if a.GetVerb() != "get" {
				t.Errorf("a refused reshape did %s %s", a.GetVerb(), a.GetResource().Resource)
			}
		}
	})
	t.Run("never deployed", func(t *testing.T) {
		c, s := newFake()
		seedApp(t, s, &app.App{Name: "shop"})
		_, err := Reshape(ctx, deps(c), "shop", func(*app.App) error { return nil }, Options{NoWait: true})
		if err == nil || !strings.Contains(err.Error(), "has not been deployed yet") {
			t.Fatalf("Reshape = %v", err)
		}
	})
}

func TestSettingsChange(t *testing.T) {
	a := &app.App{Name: "shop"}
	base := &app.Release{Image: "shop:4", Processes: map[string]string{"web": "./s"},
		Limits: map[string]app.Limits{"web": {Memory: "128Mi"}}}
	cfg := app.ConfigMap{"A": "1"}
	edit := func(_ *app.App, r *app.Release) error {
		r.Limits["web"] = app.Limits{Memory: "512Mi"}
		return nil
	}
	r, next, err := SettingsChange(app.KindLimits, "more memory", edit)(a, base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != app.KindLimits || r.Image != "shop:4" || r.Message != "more memory" || r.Limits["web"].Memory != "512Mi" || next["A"] != "1" {
		t.Errorf("release = %+v, config %v", r, next)
	}
	if base.Limits["web"].Memory != "128Mi" {
		t.Error("SettingsChange edited the base release's limits")
	}
	if _, _, err := SettingsChange(app.KindLimits, "", edit)(a, nil, nil); err == nil || !strings.Contains(err.Error(), "has not been deployed yet") {
		t.Errorf("settings before a deploy = %v", err)
	}
	boom := errors.New("unknown process")
	if _, _, err := SettingsChange(app.KindLimits, "", func(*app.App, *app.Release) error { return boom })(a, base, cfg); !errors.Is(err, boom) {
		t.Errorf("edit error = %v", err)
	}
}

func TestUnsetAutoscaleKeepsTheCountReached(t *testing.T) {
	ctx := context.Background()
	seven := int32(7)
	c := fakeClient(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Namespace: ns}, Spec: appsv1.DeploymentSpec{Replicas: &seven}})
	autoscaled := func() *app.App {
		return &app.App{Name: "shop", Processes: map[string]app.Process{
			"web":    {Replicas: 2, Autoscale: &app.Autoscale{Min: 2, Max: 10, CPUPercent: 70}},
			"worker": {Replicas: 1, Autoscale: &app.Autoscale{Min: 1, Max: 3, CPUPercent: 70}},
		}}
	}

	a := autoscaled()
	if err := UnsetAutoscale(ctx, c, ns, "web")(a); err != nil {
		t.Fatal(err)
	}
	if p := a.Processes["web"]; p.Autoscale != nil || p.Replicas != 7 {
		t.Errorf("web = %+v, want no autoscale and the 7 units its Deployment has", p)
	}
	// no Deployment (never applied): the recorded count stays
	a = autoscaled()
	if err := UnsetAutoscale(ctx, c, ns, "worker")(a); err != nil {
		t.Fatal(err)
	}
	if p := a.Processes["worker"]; p.Autoscale != nil || p.Replicas != 1 {
		t.Errorf("worker = %+v, want no autoscale and 1 unit", p)
	}
	if err := UnsetAutoscale(ctx, c, ns, "worker")(a); err == nil || !strings.Contains(err.Error(), "does not autoscale") {
		t.Errorf("unset twice: %v", err)
	}
	if err := UnsetAutoscale(ctx, c, ns, "cron")(a); !inputerr.Is(err) {
		t.Errorf("unknown process: %v, want an input error", err)
	}
}

func unschedulablePod(name string) *corev1.Pod {
	return pod(name, "web", "1", false, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = nil
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/2 nodes are available: 2 Insufficient cpu.", LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}
	})
}

// A scale whose new units cannot be placed puts the previous count back,
// in the record and the Deployment, and says so with exit code 13.
func TestReshapeScaleIsAllOrNothing(t *testing.T) {
	c, s := newFake(pod("shop-web-a", "web", "1", true), unschedulablePod("shop-web-b"))
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": "", "worker": "./w"}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	seedRunning(t, c, "shop-web", 1)
	seedRunning(t, c, "shop-worker", 1)
	rec := &recorder{}
	d := deps(c)
	d.Progress = rec
	res, err := Reshape(ctx, d, "shop", func(a *app.App) error {
		return a.ApplyScale([]app.ScaleOp{{Process: "web", Op: '=', N: 50}, {Process: "worker", Op: '=', N: 2}})
	}, Options{Timeout: 5 * time.Second})
	var rerr *ReshapeError
	if !errors.As(err, &rerr) {
		t.Fatalf("Reshape = %v, want a *ReshapeError", err)
	}
	if rerr.ExitCode() != 13 || rerr.Restored != "web=1, worker=1" || rerr.RestoreErr != nil {
		t.Errorf("error %+v, exit code %d", rerr, rerr.ExitCode())
	}
	if want := `changing the units of app "shop" failed: web units cannot be placed on any node: 0/2 nodes are available: 2 Insufficient cpu.; restored the previous units (web=1, worker=1)`; err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	var f *rollout.Failure
	if !errors.As(err, &f) || f.Class != rollout.ClassUnschedulable {
		t.Errorf("the failure is not reachable with errors.As: %v", f)
	}
	if res == nil || res.Failure == nil || res.Processes[0].Units != 1 {
		t.Errorf("result = %+v", res)
	}
	a := getApp(t, s, "shop")
	if a.Processes["web"].Replicas != 1 || a.Processes["worker"].Replicas != 1 {
		t.Errorf("record keeps %+v, want the previous counts", a.Processes)
	}
	ds := listDeployments(t, c)
	if *ds["shop-web"].Spec.Replicas != 1 || *ds["shop-worker"].Spec.Replicas != 1 {
		t.Errorf("replicas web %d worker %d, want 1 and 1", *ds["shop-web"].Spec.Replicas, *ds["shop-worker"].Spec.Replicas)
	}
	if !slices.Contains(rec.All(), "putting the previous units back") {
		t.Errorf("progress %q does not say the units are put back", rec.All())
	}
	assertNoLease(t, c)
}

// --no-rollback (Options.NoRollback) keeps the new count for inspection.
func TestReshapeNoRollbackKeepsCount(t *testing.T) {
	c, s := newFake(unschedulablePod("shop-web-b"))
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	_, err := Reshape(ctx, deps(c), "shop", func(a *app.App) error {
		return a.ApplyScale([]app.ScaleOp{{Process: "web", Op: '=', N: 5}})
	}, Options{Timeout: 5 * time.Second, NoRollback: true})
	var f *rollout.Failure
	if !errors.As(err, &f) || f.ExitCode() != 13 {
		t.Fatalf("Reshape = %v", err)
	}
	if a := getApp(t, s, "shop"); a.Processes["web"].Replicas != 5 {
		t.Errorf("record %+v, want 5 kept", a.Processes)
	}
}
