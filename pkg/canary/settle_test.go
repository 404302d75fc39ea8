package canary

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/deploy/deploytest"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/render"
)

const ns = deploytest.Namespace

var (
	getApp          = deploytest.GetApp
	getRelease      = deploytest.GetRelease
	listDeployments = deploytest.ListDeployments
)

func deps(c *fake.Clientset) deploy.Deps {
	return deploy.Deps{Client: c, Namespace: ns, Holder: lock.Holder{User: "alice", PID: 42, Host: "laptop"}, SideBySide: Runner{}}
}

// What the next command that takes the lock does with each canary a
// stopped tug can leave (docs/reliability.md, "kill -9 during a canary").
func TestSettleForDecidesFromThePhase(t *testing.T) {
	now := time.Now()
	canary := func(phase string, release, weight int) *app.Canary {
		return &app.Canary{Release: release, Phase: phase, Weight: weight, Strategy: app.StrategyCanary}
	}
	steps := canary(app.CanaryRunning, 2, 20)
	steps.Steps = []int{50}
	halted := *steps
	halted.StepsStopped = true
	kept := canary(app.CanaryRunning, 2, 100)
	undoing := canary(app.CanaryPromoting, 2, 100)
	undoing.Undoing = true
	kept.Strategy, kept.KeepUntil = app.StrategyBlueGreen, now.Add(-time.Minute)
	for _, tt := range []struct {
		name     string
		release  int // the record's
		canary   *app.Canary
		aborting bool
		want     settling
	}{
		{"no canary", 1, nil, false, settleNone},
		{"starting", 1, canary(app.CanaryStarting, 2, 0), false, settleAbortStart},
		{"starting, an abort", 1, canary(app.CanaryStarting, 2, 0), true, settleAbortStart},
		{"running", 1, canary(app.CanaryRunning, 2, 25), false, settleReapply},
		{"running with steps nothing takes", 1, steps, false, settleHaltSteps},
		{"running with steps already halted", 1, &halted, false, settleReapply},
		{"promoting", 1, canary(app.CanaryPromoting, 2, 100), false, settleFinishPromote},
		{"promoting, an abort: undone", 1, canary(app.CanaryPromoting, 2, 100), true, settleUndoPromote},
		{"promoting, an undo begun: undone by any command", 1, undoing, false, settleUndoPromote},
		{"promoting past the deployed release", 2, canary(app.CanaryPromoting, 2, 100), false, settleFinishPromote},
		{"promoting past the deployed release, an abort: too late", 2, canary(app.CanaryPromoting, 2, 100), true, settleFinishPromote},
		{"aborting", 1, canary(app.CanaryAborting, 2, 0), false, settleFinishAbort},
		{"ending a promote", 2, canary(app.CanaryEnding, 2, 100), false, settleEnd},
		{"ending an abort", 1, canary(app.CanaryEnding, 2, 0), true, settleEnd},
		{"blue-green past --keep", 1, kept, false, settleKeepExpired},
		{"blue-green past --keep, an abort", 1, kept, true, settleReapply},
	} {
		a := &app.App{Name: "shop", Release: tt.release, Canary: tt.canary}
		if got := settleFor(a, now, tt.aborting); got != tt.want {
			t.Errorf("%s: settleFor = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// splitApp seeds shop at release v (1 or 2; one web unit, running) with
// v2's canary beside it, phase and weight as given, its Deployment made.
func splitApp(t *testing.T, v int, c *app.Canary) (*app.Store, deploy.Deps, *fake.Clientset) {
	t.Helper()
	cl, s := deploytest.NewFake()
	deploytest.SeedApp(t, s, &app.App{Name: "shop"})
	deploytest.SeedRelease(t, s, &app.Release{Version: 1, Image: "shop:1", Processes: map[string]string{"web": "./v1"}, Status: app.StatusDeployed}, nil)
	deploytest.SeedRelease(t, s, &app.Release{Version: 2, Image: "shop:2", Processes: map[string]string{"web": "./v2"}, Status: app.StatusCanary}, nil)
	ctx := context.Background()
	a, err := s.UpdateApp(ctx, "shop", func(x *app.App) error {
		x.Release, x.LastRelease, x.Image = v, 2, fmt.Sprintf("shop:%d", v)
		x.Processes = map[string]app.Process{"web": {Replicas: 1}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r, cfg := getRelease(t, s, v)
	r2, _ := getRelease(t, s, 2)
	a.Canary = c
	objs := render.Release(a, r, cfg)
	objs.Deployments = append(objs.Deployments, render.Canary(a, r2, cfg))
	txn, err := deploy.Begin(ctx, deps(cl), "shop", nil) // the record names no canary yet
	if err != nil {
		t.Fatal(err)
	}
	_, err = txn.Apply(objs)
	txn.End()
	if err != nil {
		t.Fatal(err)
	}
	web, err := cl.AppsV1().Deployments(ns).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web.Status = deploytest.Done(1, 0)
	if _, err := cl.AppsV1().Deployments(ns).UpdateStatus(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateApp(ctx, "shop", func(x *app.App) error { x.Canary = c; return nil }); err != nil {
		t.Fatal(err)
	}
	// v2's status once the record names its canary, as a start writes
	// them (the Begin above settled a 'canary' no record named)
	if err := s.SetReleaseStatus(ctx, "shop", 2, app.StatusCanary, ""); err != nil {
		t.Fatal(err)
	}
	return s, deps(cl), cl
}

// endSplit names the canary (ending) until its objects are gone: a tug
// stopped before they go never leaves units the record does not name, and
// the next command that takes the lock removes them. An abort asked for
// then is too late: the promote made v2 the deployed release.
func TestEndSplitNamesTheCanaryUntilItsUnitsAreGone(t *testing.T) {
	s, d, cl := splitApp(t, 2, &app.Canary{Release: 2, Phase: app.CanaryPromoting, Weight: 100, Units: 1, Strategy: app.StrategyCanary})
	failing := true
	cl.PrependReactor("delete", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if failing && a.(k8stesting.DeleteAction).GetName() == "shop-web-canary" {
			return true, nil, errors.New("the API server went away")
		}
		return false, nil, nil
	})
	ctx := context.Background()
	if _, err := Promote(ctx, d, "shop"); err == nil {
		t.Fatal("Promote with the canary's Deployment undeletable should fail")
	}
	if a := getApp(t, s, "shop"); a.Canary == nil || a.Canary.Phase != app.CanaryEnding {
		t.Fatalf("the canary's Deployment is left, the record says %+v; want the canary, ending", a.Canary)
	}
	failing = false
	_, err := Abort(ctx, d, "shop")
	var promoted *PromotedError
	if !errors.As(err, &promoted) || promoted.Release != 2 {
		t.Errorf("Abort = %v; want a *PromotedError for v2", err)
	}
	if a := getApp(t, s, "shop"); a.Canary != nil || a.Release != 2 {
		t.Errorf("the next command left record v%d, canary %+v; want v2 alone", a.Release, a.Canary)
	}
	if _, err := cl.AppsV1().Deployments(ns).Get(ctx, "shop-web-canary", metav1.GetOptions{}); err == nil {
		t.Error("the next command left the canary's Deployment")
	}
}

// A promote a stopped tug left that then fails gives the canary back the
// share it had before the promote began, not the 100% of the promote.
func TestResumedPromoteThatFailsRestoresTheShareBefore(t *testing.T) {
	s, d, _ := splitApp(t, 1, &app.Canary{Release: 2, Phase: app.CanaryPromoting, Weight: 100, WeightBefore: 25, Units: 1, Strategy: app.StrategyCanary})
	ctx := context.Background()
	if _, err := d.Client.CoreV1().Pods(ns).Create(ctx, deploytest.CrashPod("2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := deploy.Begin(ctx, d, "shop", nil)
	var rollErr *deploy.Error
	if !errors.As(err, &rollErr) || !rollErr.CanaryKept {
		t.Fatalf("Begin = %v; want the failed promote, the canary kept", err)
	}
	a := getApp(t, s, "shop")
	if a.Release != 1 || a.Canary == nil || a.Canary.Phase != app.CanaryRunning || a.Canary.Weight != 25 {
		t.Errorf("record v%d, canary %+v; want v1 and the canary running at 25%%", a.Release, a.Canary)
	}
}

// An abort after a promote a stopped tug left undoes the promote when it
// had not yet made the canary's release the deployed one.
func TestAbortUndoesAPromoteAStoppedTugLeft(t *testing.T) {
	s, d, cl := splitApp(t, 1, &app.Canary{Release: 2, Phase: app.CanaryPromoting, Weight: 100, WeightBefore: 25, Units: 1, Strategy: app.StrategyCanary})
	res, err := Abort(context.Background(), d, "shop")
	if err != nil {
		t.Fatalf("Abort = %v", err)
	}
	a := getApp(t, s, "shop")
	if res.Release != 1 || a.Release != 1 || a.Canary != nil {
		t.Errorf("result v%d, record v%d, canary %+v; want v1 alone", res.Release, a.Release, a.Canary)
	}
	if r, _ := getRelease(t, s, 2); r.Status != app.StatusAborted {
		t.Errorf("v2 is %s, want aborted", r.Status)
	}
	if got := listDeployments(t, cl)["shop-web"].Spec.Template.Labels["tug.dev/release"]; got != "1" {
		t.Errorf("web runs v%s, want v1", got)
	}
}

// promote again after a stopped promote: the settling finishes it, and
// this promote reports the deployed release instead of "nothing to
// promote" (a CI script that retries promote after a kill must not fail).
func TestPromoteAfterAStoppedPromoteSucceeds(t *testing.T) {
	s, d, _ := splitApp(t, 2, &app.Canary{Release: 2, Phase: app.CanaryEnding, Weight: 100, Units: 1, Strategy: app.StrategyCanary})
	res, err := Promote(context.Background(), d, "shop")
	if err != nil {
		t.Fatalf("Promote = %v; want the finished promote", err)
	}
	if a := getApp(t, s, "shop"); res.Release != 2 || a.Release != 2 || a.Canary != nil {
		t.Errorf("result v%d, record v%d, canary %+v; want v2 alone", res.Release, a.Release, a.Canary)
	}
}

// An abort that undoes a stopped promote and is itself stopped while the
// old units come back leaves the record saying so: the next command of
// any kind finishes the undo, not the promote the user aborted.
func TestAnUndoStoppedMidwayIsFinishedByTheNextCommand(t *testing.T) {
	s, d, cl := splitApp(t, 1, &app.Canary{Release: 2, Phase: app.CanaryPromoting, Weight: 100, WeightBefore: 25, Units: 1, Strategy: app.StrategyCanary})
	failing := true
	cl.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if failing {
			return true, nil, errors.New("the API server went away")
		}
		return false, nil, nil
	})
	ctx := context.Background()
	if _, err := Abort(ctx, d, "shop"); err == nil {
		t.Fatal("Abort with Deployments unpatchable should fail")
	}
	if a := getApp(t, s, "shop"); a.Canary == nil || !a.Canary.Undoing {
		t.Fatalf("the stopped undo left canary %+v; want it recorded (undoing)", a.Canary)
	}
	failing = false
	txn, err := deploy.Begin(ctx, d, "shop", nil)
	if err != nil {
		t.Fatalf("the next command: %v", err)
	}
	txn.End()
	if a := getApp(t, s, "shop"); a.Release != 1 || a.Canary != nil {
		t.Errorf("the next command left record v%d, canary %+v; want v1 alone (the promote undone)", a.Release, a.Canary)
	}
	if r, _ := getRelease(t, s, 2); r.Status != app.StatusAborted {
		t.Errorf("v2 is %s, want aborted", r.Status)
	}
}
