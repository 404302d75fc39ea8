package canary

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/deploy/deploytest"
	"tug.dev/tug/pkg/kube"
)

// Failed builds while a canary runs never prune the canary's release (its
// record and the config its units read through envFrom), nor the release
// it would go back to (issue 34, item 1). Before, with the default
// history of 10, nine failed source deploys deleted v2's Secret and the
// promote failed with "release v2 not found".
func TestFailedBuildsDuringACanaryKeepItsRelease(t *testing.T) {
	s, d, _, _ := deployedShop(t)
	if _, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 25}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 12 {
		if _, err := deploy.RecordFailed(ctx, d, "shop", "new header", "build failed: exit 3"); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int{1, 2} {
		if _, _, err := s.GetRelease(ctx, "shop", v); err != nil {
			t.Fatalf("v%d after failed builds during the canary: %v", v, err)
		}
	}
	rels, err := s.ListReleases(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 10 {
		t.Errorf("%d releases kept, want the history's 10", len(rels))
	}
	if res, err := Promote(ctx, d, "shop"); err != nil || res.Release != 2 {
		t.Fatalf("promote after failed builds = %v, %v; want v2 deployed", res, err)
	}
}

// The pruning rule itself: a canary's release and every release a unit
// runs are kept whatever the history limit.
func TestReleasesToPruneKeepsWhatUnitsRun(t *testing.T) {
	rels := []*app.Release{
		{Version: 6, Status: app.StatusFailed}, {Version: 5, Status: app.StatusFailed},
		{Version: 4, Status: app.StatusFailed}, {Version: 3, Status: app.StatusFailed, Image: "x"},
		{Version: 2, Status: app.StatusCanary, Image: "x"}, {Version: 1, Status: app.StatusDeployed, Image: "x"},
	}
	got := app.ReleasesToPrune(rels, 4, 1, 3)
	want := []int{5, 4}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ReleasesToPrune = %v, want %v (v1 runs, v2 is the canary, v3's units run, v6 the newest)", got, want)
	}
}

// shopWith is shop at v1 with procs (each Deployment rolled out at its
// count), and the Deployment a canary of v2 will get reporting units
// ready (the fake has no controllers; its status survives applies).
func shopWith(t *testing.T, procs map[string]app.Process) (*app.Store, deploy.Deps, *fake.Clientset, *deploytest.Recorder) {
	t.Helper()
	cl, s := deploytest.NewFake()
	deploytest.SeedApp(t, s, &app.App{Name: "shop", Processes: procs})
	rec := &deploytest.Recorder{}
	d := deps(cl)
	d.Progress = rec
	ctx := context.Background()
	cmds := map[string]string{}
	for p := range procs {
		cmds[p] = "./" + p
	}
	if _, err := deploy.Roll(ctx, d, "shop", deploy.DeployChange("shop:1", cmds, ""), deploy.Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	for p, n := range procs {
		dep, err := cl.AppsV1().Deployments(ns).Get(ctx, "shop-"+p, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dep.Status = deploytest.Done(n.Replicas, 0)
		if _, err := cl.AppsV1().Deployments(ns).UpdateStatus(ctx, dep, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rollsOut(cl)
	return s, d, cl, rec
}

// rollsOut stands in for the Deployment controller: every Deployment
// applied with a unit count reports that many units rolled out (the fake
// has no controllers; the status it stores survives applies).
func rollsOut(cl *fake.Clientset) {
	gvr := appsv1.SchemeGroupVersion.WithResource("deployments")
	cl.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		var applied struct {
			Spec struct {
				Replicas *int32 `json:"replicas"`
			} `json:"spec"`
		}
		if json.Unmarshal(p.GetPatch(), &applied) != nil || applied.Spec.Replicas == nil {
			return false, nil, nil
		}
		status := deploytest.Done(*applied.Spec.Replicas, 0)
		obj, err := cl.Tracker().Get(gvr, p.GetNamespace(), p.GetName())
		if err != nil { // a new one: made with its status, then applied
			labels := kube.AppLabels("shop")
			_ = cl.Tracker().Create(gvr, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: p.GetName(), Namespace: p.GetNamespace(), Labels: labels}, Status: status}, p.GetNamespace())
			return false, nil, nil
		}
		dep := obj.(*appsv1.Deployment).DeepCopy()
		dep.Status = status
		_ = cl.Tracker().Update(gvr, dep, p.GetNamespace())
		return false, nil, nil
	})
}

// crashWhenRolled makes the web units of release rel crash once the web
// Deployment (not the canary's) is rolled out to it: a promote whose
// rollout fails after the canary grew.
func crashWhenRolled(cl *fake.Clientset, rel string) {
	cl.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetName() == "shop-web" && strings.Contains(string(p.GetPatch()), `"tug.dev/release":"`+rel+`"`) {
			_ = cl.Tracker().Add(deploytest.CrashPod(rel))
		}
		return false, nil, nil
	})
}

// A promote never sends a unit more than its share: the canary's units
// grow to the web process's size while the split stays, and only then
// does every request go to them (issue 40, item 1: before, all requests
// went to one canary unit of four while the others were replaced).
func TestPromoteGrowsTheCanaryBeforeItGetsEveryRequest(t *testing.T) {
	s, d, cl, rec := shopWith(t, map[string]app.Process{"web": {Replicas: 4}})
	if _, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 25}); err != nil {
		t.Fatal(err)
	}
	if a := getApp(t, s, "shop"); a.Canary.Units != 1 {
		t.Fatalf("the 25%% canary of 4 units runs %d", a.Canary.Units)
	}
	var grownAt int = -1
	cl.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetName() == "shop-web-canary" && strings.Contains(string(p.GetPatch()), `"replicas":4`) && grownAt < 0 {
			obj, err := cl.Tracker().Get(corev1.SchemeGroupVersion.WithResource("services"), ns, "shop-web")
			if err == nil && obj.(*corev1.Service).Spec.Selector[kube.LabelRelease] != "" {
				t.Errorf("the canary grew after the web Service was narrowed to one release: %v", obj.(*corev1.Service).Spec.Selector)
			}
			grownAt = len(rec.All())
		}
		return false, nil, nil
	})
	if _, err := Promote(context.Background(), d, "shop"); err != nil {
		t.Fatalf("promote: %v", err)
	}
	said := rec.All()
	every := index(said, "every request to v2's 4 web units")
	if grownAt < 0 || every < 0 || every < grownAt || index(said, "growing v2 to 4 web units before it gets every request") < 0 {
		t.Errorf("progress %q; want the canary grown to 4 units (at line %d) before every request goes to it", said, grownAt)
	}
	if a := getApp(t, s, "shop"); a.Release != 2 || a.Canary != nil || a.Processes["web"].Replicas != 4 {
		t.Errorf("record v%d canary %+v web %+v; want v2 alone with 4 web units", a.Release, a.Canary, a.Processes["web"])
	}
}

// A promote whose rollout fails puts the deployed release back as it
// was: a process the canary's release drops keeps its units and its
// autoscaler, and the canary its units and share (issue 34, item 4;
// before, worker came back with 1 unit and no autoscaler).
func TestFailedPromoteKeepsTheUnitsOfADroppedProcess(t *testing.T) {
	worker := app.Process{Replicas: 5, Autoscale: &app.Autoscale{Min: 5, Max: 8, CPUPercent: 70}}
	s, d, cl, _ := shopWith(t, map[string]app.Process{"web": {Replicas: 2}, "worker": worker})
	ctx := context.Background()
	// v2 has a web process only
	_, err := deploy.Roll(ctx, d, "shop", deploy.DeployChange("shop:2", map[string]string{"web": "./v2"}, ""),
		deploy.Options{Canary: &deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 50}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	crashWhenRolled(cl, "2")
	_, err = Promote(ctx, d, "shop")
	var failed *deploy.Error
	if !errors.As(err, &failed) || !failed.CanaryKept {
		t.Fatalf("promote = %v; want a failed promote, the canary kept", err)
	}
	a := getApp(t, s, "shop")
	if !a.Processes["worker"].Equal(worker) || a.Processes["web"].Replicas != 2 {
		t.Errorf("after the failed promote the record has %+v; want worker %+v and web 2 back", a.Processes, worker)
	}
	if a.Release != 1 || a.Canary == nil || a.Canary.Weight != 50 || a.Canary.Units != 1 || a.Canary.Phase != app.CanaryRunning {
		t.Errorf("record v%d canary %+v; want v1 with the canary running at 50%% on 1 unit", a.Release, a.Canary)
	}
	deps := deploytest.ListDeployments(t, cl)
	if w, ok := deps["shop-worker"]; !ok || *w.Spec.Replicas != 5 || w.Spec.Template.Labels[kube.LabelRelease] != "1" {
		t.Errorf("worker Deployment after the failed promote: %v", w.Spec)
	}
	if c := deps["shop-web-canary"]; *c.Spec.Replicas != 1 {
		t.Errorf("the canary runs %d units after the failed promote, want its 1 back", *c.Spec.Replicas)
	}
	if _, err := cl.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "shop-worker", metav1.GetOptions{}); err != nil {
		t.Errorf("worker's autoscaler after the failed promote: %v", err)
	}
}

// A blue-green past its --keep whose promote fails stays as it was, says
// so once, and does not block the commands after it (issue 34, item 5:
// before, every command that took the lock ran the whole promote again
// and failed).
func TestExpiredBlueGreenWhosePromoteFailsBlocksNothing(t *testing.T) {
	s, d, cl, rec := deployedShop(t)
	if _, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyBlueGreen, Keep: time.Nanosecond}); err != nil {
		t.Fatalf("start: %v", err)
	}
	crashWhenRolled(cl, "2")
	ctx := context.Background()
	txn, err := deploy.Begin(ctx, d, "shop", nil)
	if err != nil {
		t.Fatalf("the command after --keep expired: %v", err)
	}
	txn.End()
	said := rec.All()
	if index(said, "the promote of v2 failed") < 0 {
		t.Errorf("progress %q; want the failed promote said", said)
	}
	a := getApp(t, s, "shop")
	if a.Release != 1 || a.Canary == nil || a.Canary.Weight != 100 || a.Canary.PromoteFailed == "" || !a.Canary.KeepUntil.IsZero() {
		t.Fatalf("record v%d canary %+v; want v2 with every request, its failed promote recorded", a.Release, a.Canary)
	}
	before := len(rec.All())
	txn, err = deploy.Begin(ctx, d, "shop", nil)
	if err != nil {
		t.Fatalf("the next command: %v", err)
	}
	txn.End()
	for _, l := range rec.All()[before:] {
		if strings.Contains(l, "becomes the deployed release") || strings.Contains(l, "rolling the units") {
			t.Errorf("the next command tried the promote again: %q", l)
		}
	}
	// a change that rolls the app says what to do instead of promoting
	_, err = deploy.Roll(ctx, d, "shop", deploy.DeployChange("shop:3", map[string]string{"web": "./v3"}, ""), deploy.Options{NoWait: true})
	var running *RunningError
	if !errors.As(err, &running) || !strings.Contains(err.Error(), "its promote failed") {
		t.Errorf("a deploy after the failed promote = %v; want a *RunningError that says the promote failed", err)
	}
}

// 'release promote' after --keep expired succeeds with the promote that
// taking the lock finished (issue 34, item 7: before, "nothing to
// promote", exit 1).
func TestPromoteAfterKeepExpiredSucceeds(t *testing.T) {
	s, d, _, _ := deployedShop(t)
	if _, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyBlueGreen, Keep: time.Nanosecond}); err != nil {
		t.Fatalf("start: %v", err)
	}
	res, err := Promote(context.Background(), d, "shop")
	if err != nil || res.Release != 2 {
		t.Fatalf("promote = %v, %v; want v2 deployed", res, err)
	}
	if a := getApp(t, s, "shop"); a.Release != 2 || a.Canary != nil {
		t.Errorf("record v%d canary %+v", a.Release, a.Canary)
	}
}

// A promote stopped between its two writes (the record names the canary's
// release, its status still says canary) is repaired by the next command,
// also when the canary itself is already gone (issue 34, item 6).
func TestPromoteStoppedBetweenItsWritesIsRepaired(t *testing.T) {
	s, d, _ := splitApp(t, 2, &app.Canary{Release: 2, Phase: app.CanaryEnding, Weight: 100, Units: 1, Strategy: app.StrategyCanary})
	ctx := context.Background()
	if _, err := s.UpdateApp(ctx, "shop", func(x *app.App) error { x.Canary = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	txn, err := deploy.Begin(ctx, d, "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	txn.End()
	r1, _ := getRelease(t, s, 1)
	r2, _ := getRelease(t, s, 2)
	if r2.Status != app.StatusDeployed || r1.Status != app.StatusSuperseded {
		t.Errorf("v1 %s, v2 %s; want superseded, deployed", r1.Status, r2.Status)
	}
}

// tug.yaml's units apply at the promote of a canary or blue-green deploy
// (issue 34, item 10: before, the app ran web=1 after the promote while
// tug.yaml said 3).
func TestCanaryKeepsTheUnitsTheDeployAskedFor(t *testing.T) {
	for _, strategy := range []string{app.StrategyCanary, app.StrategyBlueGreen} {
		t.Run(strategy, func(t *testing.T) {
			s, d, cl, _ := shopWith(t, map[string]app.Process{"web": {Replicas: 1}})
			ctx := context.Background()
			change := deploy.DeployChange("shop:2", map[string]string{"web": "./v2"}, "")
			withUnits := func(a *app.App, base *app.Release, cfg app.ConfigMap) (*app.Release, app.ConfigMap, error) {
				r, c, err := change(a, base, cfg)
				a.Processes = map[string]app.Process{"web": {Replicas: 3}} // what tug.yaml's units do
				return r, c, err
			}
			_, err := deploy.Roll(ctx, d, "shop", withUnits, deploy.Options{Canary: &deploy.CanaryOptions{Strategy: strategy, Weight: 50}, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if a := getApp(t, s, "shop"); a.Processes["web"].Replicas != 1 || a.Canary == nil {
				t.Fatalf("while the %s runs the record has web %+v; want the deployed release's 1", strategy, a.Processes["web"])
			}
			web, err := cl.AppsV1().Deployments(ns).Get(ctx, "shop-web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			web.Status = deploytest.Done(3, 0) // as the controllers will once it runs 3
			if _, err := cl.AppsV1().Deployments(ns).UpdateStatus(ctx, web, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := Promote(ctx, d, "shop"); err != nil {
				t.Fatal(err)
			}
			if a := getApp(t, s, "shop"); a.Processes["web"].Replicas != 3 {
				t.Errorf("after the promote the record has web %+v; want tug.yaml's 3", a.Processes["web"])
			}
		})
	}
}

// An abort a stopped tug left after it wrote the canary's failure is
// finished with that failure, not a plain "aborted" (issue 34, item 11).
func TestFinishedAbortKeepsItsReason(t *testing.T) {
	s, d, _ := splitApp(t, 1, &app.Canary{Release: 2, Phase: app.CanaryAborting, Units: 1, Strategy: app.StrategyCanary,
		AbortStatus: app.StatusFailed, AbortReason: "canary aborted: crashed (exit 3)"})
	ctx := context.Background()
	if err := s.SetReleaseStatus(ctx, "shop", 2, app.StatusFailed, "canary aborted: crashed (exit 3)"); err != nil {
		t.Fatal(err)
	}
	txn, err := deploy.Begin(ctx, d, "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	txn.End()
	r2, _ := getRelease(t, s, 2)
	if r2.Status != app.StatusFailed || r2.FailReason != "canary aborted: crashed (exit 3)" {
		t.Errorf("v2 is %s (%q); want failed with the crash", r2.Status, r2.FailReason)
	}
	if a := getApp(t, s, "shop"); a.Canary != nil {
		t.Errorf("canary %+v left", a.Canary)
	}
}

// 'release promote' when taking the lock just tried the promote of an
// expired blue-green, and it failed: the failure is the answer, and the
// promote is not run a second time.
func TestPromoteAfterAFailedExpiredPromoteRunsItOnce(t *testing.T) {
	_, d, cl, rec := deployedShop(t)
	if _, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyBlueGreen, Keep: time.Nanosecond}); err != nil {
		t.Fatalf("start: %v", err)
	}
	crashWhenRolled(cl, "2")
	_, err := Promote(context.Background(), d, "shop")
	var failed *deploy.Error
	if !errors.As(err, &failed) || !failed.CanaryKept {
		t.Fatalf("promote = %v; want the failed promote, the blue-green kept", err)
	}
	n := 0
	for _, l := range rec.All() {
		if strings.HasPrefix(l, "rolling the units of v1 out to v2") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the promote ran %d times: %q", n, rec.All())
	}
}

// A promote of a web process an autoscaler moved grows the canary to what
// the web Deployment runs now, not the recorded count.
func TestPromoteGrowsToWhatTheAutoscalerRuns(t *testing.T) {
	web := app.Process{Replicas: 2, Autoscale: &app.Autoscale{Min: 2, Max: 8, CPUPercent: 70}}
	s, d, cl, _ := shopWith(t, map[string]app.Process{"web": web})
	ctx := context.Background()
	dep, err := cl.AppsV1().Deployments(ns).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep.Spec.Replicas = new(int32(5)) // the autoscaler's doing
	dep.Status = deploytest.Done(5, 0)
	if _, err := cl.AppsV1().Deployments(ns).Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 20}); err != nil {
		t.Fatal(err)
	}
	var grewTo int32
	cl.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		var applied struct {
			Spec struct {
				Replicas int32 `json:"replicas"`
			} `json:"spec"`
		}
		if p := a.(k8stesting.PatchAction); p.GetName() == "shop-web-canary" && json.Unmarshal(p.GetPatch(), &applied) == nil {
			grewTo = max(grewTo, applied.Spec.Replicas)
		}
		return false, nil, nil
	})
	if _, err := Promote(ctx, d, "shop"); err != nil {
		t.Fatal(err)
	}
	if grewTo != 5 {
		t.Errorf("the canary grew to %d units before every request; want the 5 the autoscaler runs", grewTo)
	}
	if a := getApp(t, s, "shop"); a.Release != 2 || a.Canary != nil {
		t.Errorf("record v%d canary %+v; want v2 alone", a.Release, a.Canary)
	}
}

// A release left 'canary' with no canary on the record (its canary ended
// without its status written) is settled by the next command rather than
// kept 'canary', and protected from pruning, forever.
func TestCanaryStatusWithNoCanaryIsSettled(t *testing.T) {
	s, d, _ := splitApp(t, 1, &app.Canary{Release: 2, Phase: app.CanaryEnding, Units: 1, Strategy: app.StrategyCanary})
	ctx := context.Background()
	if _, err := s.UpdateApp(ctx, "shop", func(x *app.App) error { x.Canary = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	txn, err := deploy.Begin(ctx, d, "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	txn.End()
	if r2, _ := getRelease(t, s, 2); r2.Status != app.StatusInterrupted {
		t.Errorf("v2 is %s, want interrupted", r2.Status)
	}
}
