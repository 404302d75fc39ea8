package canary

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/deploy/deploytest"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/rollout"
)

// deployedShop is shop at v1 (one web unit, rolled out), deployed the way
// a user does. Its canary's Deployment already reports one unit rolled
// out, as the controllers would once a start applies it (the fake has
// none, and keeps that status through server-side applies).
func deployedShop(t *testing.T) (*app.Store, deploy.Deps, *fake.Clientset, *deploytest.Recorder) {
	t.Helper()
	cl, s := deploytest.NewFake()
	deploytest.SeedApp(t, s, &app.App{Name: "shop"})
	rec := &deploytest.Recorder{}
	d := deps(cl)
	d.Progress = rec
	ctx := context.Background()
	if _, err := deploy.Roll(ctx, d, "shop", deploy.DeployChange("shop:1", map[string]string{"web": "./v1"}, ""), deploy.Options{NoWait: true}); err != nil {
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
	labels := kube.AppLabels("shop")
	labels[kube.LabelProcess] = app.WebProcess
	ready := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop-web-canary", Namespace: ns, Labels: labels}, Status: deploytest.Done(1, 0)}
	if _, err := cl.AppsV1().Deployments(ns).Create(ctx, ready, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return s, d, cl, rec
}

// startV2 deploys shop:2 as o says (a canary or blue-green).
func startV2(d deploy.Deps, o deploy.CanaryOptions) (*deploy.Result, error) {
	return deploy.Roll(context.Background(), d, "shop", deploy.DeployChange("shop:2", map[string]string{"web": "./v2"}, ""),
		deploy.Options{Canary: &o, Timeout: 10 * time.Second})
}

// releaseOf is the release a Deployment's units run ("" when it is gone).
func releaseOf(t *testing.T, cl *fake.Clientset, name string) string {
	t.Helper()
	d, ok := deploytest.ListDeployments(t, cl)[name]
	if !ok {
		return ""
	}
	return d.Spec.Template.Labels[kube.LabelRelease]
}

// index is where the first line that starts with prefix is in lines (-1:
// none).
func index(lines []string, prefix string) int {
	return slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) })
}

func TestStartRunsTheCanaryBesideTheDeployedRelease(t *testing.T) {
	s, d, cl, rec := deployedShop(t)
	res, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 25})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	want := deploy.CanaryResult{Release: 2, Stable: 1, Strategy: app.StrategyCanary, Weight: 25, Units: 1}
	if res.Status != app.StatusCanary || res.Release != 2 || res.Canary == nil || !equalCanary(*res.Canary, want) {
		t.Fatalf("result %s v%d canary %+v; want canary v2 %+v", res.Status, res.Release, res.Canary, want)
	}
	a := getApp(t, s, "shop")
	if a.Release != 1 || a.Canary == nil || a.Canary.Phase != app.CanaryRunning || a.Canary.Weight != 25 || a.Canary.Exact {
		t.Errorf("record v%d, canary %+v; want v1 and v2 running at 25%% (split by units, no Gateway)", a.Release, a.Canary)
	}
	if r, _ := getRelease(t, s, 2); r.Status != app.StatusCanary {
		t.Errorf("v2 is %s, want canary", r.Status)
	}
	if web, canary := releaseOf(t, cl, "shop-web"), releaseOf(t, cl, "shop-web-canary"); web != "1" || canary != "2" {
		t.Errorf("web runs v%s, the canary v%s; want v1 and v2", web, canary)
	}
	lines := rec.All()
	started, shared := index(lines, "starting 1 web unit of v2 beside v1"), index(lines, "v2 gets 25% of requests, v1 75%")
	if started < 0 || shared < started {
		t.Errorf("progress %q; want the units started, then their share", lines)
	}
}

func equalCanary(a, b deploy.CanaryResult) bool {
	return a.Release == b.Release && a.Stable == b.Stable && a.Strategy == b.Strategy && a.Weight == b.Weight &&
		a.Units == b.Units && a.Exact == b.Exact && slices.Equal(a.Others, b.Others)
}

// While a canary runs, another change is refused with the way out, and
// nothing changes; promote makes the canary's release the deployed one.
func TestACanaryRefusesChangesUntilPromoted(t *testing.T) {
	s, d, cl, _ := deployedShop(t)
	if _, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 10}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := deploy.Roll(ctx, d, "shop", deploy.DeployChange("shop:3", map[string]string{"web": "./v3"}, ""), deploy.Options{NoWait: true})
	var running *RunningError
	if !errors.As(err, &running) {
		t.Fatalf("a deploy during the canary = %v; want a *RunningError", err)
	}
	wantMsg := `this change refused: v2 of app "shop" runs as a canary beside v1 (10% of requests); first 'tug release promote shop' (v2 gets every request) or 'tug release abort shop' (v1 keeps them)`
	if err.Error() != wantMsg {
		t.Errorf("error\n %s\nwant\n %s", err, wantMsg)
	}
	if a := getApp(t, s, "shop"); a.LastRelease != 2 || a.Canary == nil || a.Canary.Weight != 10 {
		t.Errorf("the refused deploy changed the record: last v%d, canary %+v", a.LastRelease, a.Canary)
	}

	res, err := Promote(ctx, d, "shop")
	if err != nil {
		t.Fatalf("promote: %v", err)
	}
	a := getApp(t, s, "shop")
	if res.Status != app.StatusDeployed || res.Release != 2 || a.Release != 2 || a.Canary != nil {
		t.Errorf("result %s v%d, record v%d canary %+v; want v2 deployed alone", res.Status, res.Release, a.Release, a.Canary)
	}
	if web, canary := releaseOf(t, cl, "shop-web"), releaseOf(t, cl, "shop-web-canary"); web != "2" || canary != "" {
		t.Errorf("web runs v%s, canary %q; want v2 and no canary", web, canary)
	}
	r1, _ := getRelease(t, s, 1)
	r2, _ := getRelease(t, s, 2)
	if r1.Status != app.StatusSuperseded || r2.Status != app.StatusDeployed {
		t.Errorf("v1 %s, v2 %s; want superseded, deployed", r1.Status, r2.Status)
	}
	var none *NoCanaryError
	if _, err := Promote(ctx, d, "shop"); !errors.As(err, &none) || none.Verb != "promote" {
		t.Errorf("a second promote = %v; want a *NoCanaryError", err)
	}
	deploytest.AssertNoLease(t, cl)
}

// An abort and a rollback while a canary runs both send every request
// back to the deployed release and remove the canary's units.
func TestAbortAndRollbackEndTheCanary(t *testing.T) {
	for _, tt := range []struct {
		name   string
		end    func(d deploy.Deps) (*deploy.Result, error)
		reason string
	}{
		{"abort", func(d deploy.Deps) (*deploy.Result, error) { return Abort(context.Background(), d, "shop") }, "aborted by hand"},
		{"rollback", func(d deploy.Deps) (*deploy.Result, error) {
			return deploy.Roll(context.Background(), d, "shop", nil, deploy.Options{Rollback: true})
		}, "rolled back"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, d, cl, _ := deployedShop(t)
			if _, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 50}); err != nil {
				t.Fatal(err)
			}
			res, err := tt.end(d)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			a := getApp(t, s, "shop")
			if res.Release != 1 || res.Status != app.StatusDeployed || a.Release != 1 || a.Canary != nil {
				t.Errorf("result %s v%d, record v%d canary %+v; want v1 alone", res.Status, res.Release, a.Release, a.Canary)
			}
			if r, _ := getRelease(t, s, 2); r.Status != app.StatusAborted || r.FailReason != tt.reason {
				t.Errorf("v2 is %s (%q), want aborted (%q)", r.Status, r.FailReason, tt.reason)
			}
			if web, canary := releaseOf(t, cl, "shop-web"), releaseOf(t, cl, "shop-web-canary"); web != "1" || canary != "" {
				t.Errorf("web runs v%s, canary %q; want v1 and no canary", web, canary)
			}
			var none *NoCanaryError
			if _, err := Abort(context.Background(), d, "shop"); !errors.As(err, &none) ||
				err.Error() != `nothing to abort: app "shop" runs no canary or blue-green release ('tug app deploy shop --canary 10%' starts one)` {
				t.Errorf("a second abort = %v; want a *NoCanaryError", err)
			}
		})
	}
}

// A canary whose unit crashes as it starts is aborted: the deploy fails
// as any failed deploy does (the crash's exit code), the deployed
// release keeps every request.
func TestStartWhoseUnitsCrashIsAborted(t *testing.T) {
	s, d, cl, _ := deployedShop(t)
	if _, err := cl.CoreV1().Pods(ns).Create(context.Background(), deploytest.CrashPod("2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 25})
	var failed *deploy.Error
	if !errors.As(err, &failed) || !failed.CanaryAborted || failed.ExitCode() != 11 {
		t.Fatalf("start = %v; want a *deploy.Error, the canary aborted, exit code 11 (crash)", err)
	}
	if !strings.HasSuffix(err.Error(), "; the canary was aborted: v1 keeps every request") {
		t.Errorf("error %q", err)
	}
	if res.Status != app.StatusFailed || res.RolledBackTo != 1 || res.Failure == nil || res.Failure.Class != rollout.ClassCrash {
		t.Errorf("result %+v", res)
	}
	a := getApp(t, s, "shop")
	if a.Release != 1 || a.Canary != nil {
		t.Errorf("record v%d canary %+v; want v1 alone", a.Release, a.Canary)
	}
	if r, _ := getRelease(t, s, 2); r.Status != app.StatusFailed || !strings.HasPrefix(r.FailReason, "canary aborted: ") {
		t.Errorf("v2 is %s (%q), want failed, the canary aborted", r.Status, r.FailReason)
	}
	if canary := releaseOf(t, cl, "shop-web-canary"); canary != "" {
		t.Errorf("the canary's Deployment is left (v%s)", canary)
	}
}

// failing makes every patch of the Deployment named name fail while *on.
func failing(cl *fake.Clientset, name string, on *bool) {
	cl.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if *on && (name == "" || a.(k8stesting.PatchAction).GetName() == name) {
			return true, nil, errors.New("the API server went away")
		}
		return false, nil, nil
	})
}

// A start cut short before its units run is undone at once: the release
// is interrupted, the deployed one keeps every request.
func TestStartCutShortIsUndone(t *testing.T) {
	s, d, cl, _ := deployedShop(t)
	on := true
	failing(cl, "shop-web-canary", &on)
	_, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 25})
	if err == nil || !strings.Contains(err.Error(), "the API server went away") {
		t.Fatalf("start = %v; want the failed apply", err)
	}
	a := getApp(t, s, "shop")
	if a.Release != 1 || a.Canary != nil {
		t.Errorf("record v%d canary %+v; want v1 alone", a.Release, a.Canary)
	}
	if r, _ := getRelease(t, s, 2); r.Status != app.StatusInterrupted {
		t.Errorf("v2 is %s, want interrupted", r.Status)
	}
}

// A start cut short whose undo fails too says the rollout stopped and
// leaves the record naming the canary; the next command that takes the
// lock ends the split.
func TestStartCutShortThatCannotBeUndoneIsLeftToTheNextCommand(t *testing.T) {
	s, d, cl, _ := deployedShop(t)
	on := true
	failing(cl, "", &on)
	_, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 25})
	var stopped *deploy.InterruptedError
	if !errors.As(err, &stopped) || stopped.Release != 2 || stopped.Previous != 1 {
		t.Fatalf("start = %v; want a *deploy.InterruptedError of v2 after v1", err)
	}
	if a := getApp(t, s, "shop"); a.Canary == nil || a.Canary.Release != 2 {
		t.Fatalf("record canary %+v; want v2's left for the next command", a.Canary)
	}
	on = false
	txn, err := deploy.Begin(context.Background(), d, "shop", nil)
	if err != nil {
		t.Fatalf("the next command: %v", err)
	}
	txn.End()
	if a := getApp(t, s, "shop"); a.Release != 1 || a.Canary != nil {
		t.Errorf("record v%d canary %+v after the next command; want v1 alone", a.Release, a.Canary)
	}
	if canary := releaseOf(t, cl, "shop-web-canary"); canary != "" {
		t.Errorf("the canary's Deployment is left (v%s)", canary)
	}
}
