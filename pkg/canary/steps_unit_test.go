package canary

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/deploy/deploytest"
)

// Blue-green runs the new release at full size with every request; the
// next deploy first makes it the deployed release (the kept units go),
// then rolls out as usual.
func TestBlueGreenIsPromotedByTheNextDeploy(t *testing.T) {
	s, d, cl, rec := deployedShop(t)
	res, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyBlueGreen})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if res.Canary == nil || res.Canary.Strategy != app.StrategyBlueGreen || res.Canary.Weight != 100 || res.Canary.Units != 1 {
		t.Fatalf("result canary %+v; want blue-green, 100%%, every web unit", res.Canary)
	}
	if a := getApp(t, s, "shop"); a.Canary == nil || !a.Canary.KeepUntil.IsZero() {
		t.Errorf("record canary %+v; want v1's units kept until the next deploy", a.Canary)
	}
	res, err = deploy.Roll(context.Background(), d, "shop", deploy.DeployChange("shop:3", map[string]string{"web": "./v3"}, ""), deploy.Options{NoWait: true})
	if err != nil {
		t.Fatalf("the next deploy: %v", err)
	}
	if index(rec.All(), "v1's kept units go first: v2 becomes the deployed release") < 0 {
		t.Errorf("progress %q; want the promote said", rec.All())
	}
	a := getApp(t, s, "shop")
	if res.Release != 3 || a.Release != 3 || a.Canary != nil {
		t.Errorf("result v%d, record v%d canary %+v; want v3 alone", res.Release, a.Release, a.Canary)
	}
	if r, _ := getRelease(t, s, 2); r.Status != app.StatusSuperseded {
		t.Errorf("v2 is %s, want superseded (it was deployed before v3)", r.Status)
	}
	if canary := releaseOf(t, cl, "shop-web-canary"); canary != "" {
		t.Errorf("the kept units' Deployment is left (v%s)", canary)
	}
}

// Past --keep, the next command that takes the lock promotes blue-green;
// an abort then is refused too late only if the promote made it deployed.
func TestBlueGreenPastKeepIsPromotedByTheNextCommand(t *testing.T) {
	s, d, _, _ := deployedShop(t)
	if _, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyBlueGreen, Keep: time.Nanosecond}); err != nil {
		t.Fatalf("start: %v", err)
	}
	txn, err := deploy.Begin(context.Background(), d, "shop", nil)
	if err != nil {
		t.Fatalf("the next command: %v", err)
	}
	txn.End()
	if a := getApp(t, s, "shop"); a.Release != 2 || a.Canary != nil {
		t.Errorf("record v%d canary %+v; want v2 deployed alone", a.Release, a.Canary)
	}
}

// --canary-steps move the share one step each interval while the units
// stay healthy, then promote.
func TestStepsMoveTheShareThenPromote(t *testing.T) {
	s, d, _, rec := deployedShop(t)
	res, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 10, Steps: []int{50, 90}, StepInterval: time.Millisecond})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	a := getApp(t, s, "shop")
	if res.Status != app.StatusDeployed || res.Release != 2 || a.Release != 2 || a.Canary != nil {
		t.Errorf("result %s v%d, record v%d canary %+v; want v2 promoted", res.Status, res.Release, a.Release, a.Canary)
	}
	lines := rec.All()
	order := []int{
		index(lines, "v2 gets 10% of requests, v1 90%"),
		index(lines, "v2 gets 50% of requests, v1 50%"),
		index(lines, "v2 gets 90% of requests, v1 10%"),
		index(lines, "every request to v2"),
	}
	for i := range order {
		if order[i] < 0 || i > 0 && order[i] < order[i-1] {
			t.Fatalf("progress %q; want 10%%, 50%%, 90%%, then the promote", lines)
		}
	}
}

// A canary unit that crashes between steps aborts the canary.
func TestStepsAbortACanaryWhoseUnitCrashes(t *testing.T) {
	s, d, cl, _ := deployedShop(t)
	pod := canaryPod()
	if _, err := cl.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// the garbage collector: the canary's unit goes with its Deployment
	cl.PrependReactor("delete", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() == "shop-web-canary" {
			_ = cl.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, pod.Name)
		}
		return false, nil, nil
	})
	_, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 10, Steps: []int{50}, StepInterval: time.Hour})
	var failed *deploy.Error
	if !errors.As(err, &failed) || !failed.CanaryAborted || failed.Result.Failure == nil || failed.Result.Failure.Unit != "shop-web-canary-x1" {
		t.Fatalf("start = %v; want the canary aborted for shop-web-canary-x1's crash", err)
	}
	if a := getApp(t, s, "shop"); a.Release != 1 || a.Canary != nil {
		t.Errorf("record v%d canary %+v; want v1 alone", a.Release, a.Canary)
	}
}

// cancelling is a progress.Reporter that cancels when a line starts with
// at.
type cancelling struct {
	deploytest.Recorder
	at     string
	cancel context.CancelFunc
}

func (c *cancelling) Update(msg string) {
	c.Recorder.Update(msg)
	if strings.HasPrefix(msg, c.at) {
		c.cancel()
	}
}

// Ctrl-C between steps leaves the canary at its share, its steps recorded
// as stopped (nothing moves it any more), and says how to end it.
func TestStepsCutShortKeepTheShare(t *testing.T) {
	s, d, _, _ := deployedShop(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.Progress = &cancelling{at: "v2 gets 10% of requests; next step in", cancel: cancel}
	o := deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 10, Steps: []int{50}, StepInterval: time.Hour}
	_, err := deploy.Roll(ctx, d, "shop", deploy.DeployChange("shop:2", map[string]string{"web": "./v2"}, ""), deploy.Options{Canary: &o, Timeout: 10 * time.Second})
	want := "the canary v2 keeps 10% of requests: 'tug release promote shop' or 'tug release abort shop' ends it"
	if !errors.Is(err, context.Canceled) || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("start = %v; want context.Canceled and %q", err, want)
	}
	a := getApp(t, s, "shop")
	if a.Canary == nil || a.Canary.Weight != 10 || !a.Canary.StepsStopped || a.Canary.Phase != app.CanaryRunning {
		t.Fatalf("record canary %+v; want running at 10%%, its steps stopped", a.Canary)
	}
	var running *RunningError
	_, err = deploy.Roll(context.Background(), d, "shop", deploy.DeployChange("shop:3", nil, ""), deploy.Options{NoWait: true})
	if !errors.As(err, &running) || !strings.Contains(err.Error(), "(10% of requests, its steps stopped at 10%)") {
		t.Errorf("a deploy then = %v; want a *RunningError saying the steps stopped", err)
	}
}

// What the next command that takes the lock does with each canary a
// stopped tug left, for the phases TestSettleForDecidesFromThePhase
// decides and the other tests here do not end-to-end.
func TestSettleFinishesWhatAStoppedTugLeft(t *testing.T) {
	running := func(c *app.Canary) *app.Canary {
		c.Release, c.Units, c.Strategy = 2, 1, app.StrategyCanary
		return c
	}
	for _, tt := range []struct {
		name    string
		release int
		canary  *app.Canary
		// wantRelease is the record's release after; wantCanary its
		// canary's phase ("" none); status v2's.
		wantRelease int
		wantCanary  string
		status      app.Status
		said        string
	}{
		{"a start", 1, running(&app.Canary{Phase: app.CanaryStarting}), 1, "", app.StatusInterrupted, "aborting the canary v2 that a stopped tug left starting"},
		{"an abort", 1, running(&app.Canary{Phase: app.CanaryAborting}), 1, "", app.StatusAborted, "finishing the abort of v2 that a stopped tug left"},
		// v2's status is deployed: the record names it (issue 34 item 6;
		// before, a promote stopped between its two writes left it canary)
		{"a promote past the deployed release", 2, running(&app.Canary{Phase: app.CanaryRunning, Weight: 100}), 2, "", app.StatusDeployed, "finishing the promote of v2 that a stopped tug left"},
		{"a running canary", 1, running(&app.Canary{Phase: app.CanaryRunning, Weight: 30}), 1, app.CanaryRunning, app.StatusCanary, ""},
		{"running steps", 1, running(&app.Canary{Phase: app.CanaryRunning, Weight: 30, Steps: []int{60}}), 1, app.CanaryRunning, app.StatusCanary,
			"the tug taking v2's steps ([60]) stopped at 30%: it keeps that share until 'tug release promote shop' or 'tug release abort shop'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, d, _ := splitApp(t, tt.release, tt.canary)
			rec := &deploytest.Recorder{}
			d.Progress = rec
			txn, err := deploy.Begin(context.Background(), d, "shop", nil)
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			txn.End()
			a := getApp(t, s, "shop")
			phase := ""
			if a.Canary != nil {
				phase = a.Canary.Phase
			}
			if a.Release != tt.wantRelease || phase != tt.wantCanary {
				t.Errorf("record v%d canary %+v; want v%d, canary phase %q", a.Release, a.Canary, tt.wantRelease, tt.wantCanary)
			}
			if r, _ := getRelease(t, s, 2); r.Status != tt.status {
				t.Errorf("v2 is %s, want %s", r.Status, tt.status)
			}
			if tt.said != "" && index(rec.All(), tt.said) < 0 {
				t.Errorf("progress %q; want %q", rec.All(), tt.said)
			}
			if len(tt.canary.Steps) > 0 && (a.Canary == nil || !a.Canary.StepsStopped) {
				t.Errorf("canary %+v; want its steps recorded stopped", a.Canary)
			}
		})
	}
}

// An abort after a stopped abort (or start) finishes it and succeeds:
// a script that retries an abort after a kill gets what it asked for.
func TestAbortAfterAStoppedAbortSucceeds(t *testing.T) {
	for _, phase := range []string{app.CanaryAborting, app.CanaryStarting} {
		s, d, _ := splitApp(t, 1, &app.Canary{Release: 2, Phase: phase, Units: 1, Strategy: app.StrategyCanary})
		res, err := Abort(context.Background(), d, "shop")
		if err != nil {
			t.Fatalf("%s: Abort = %v", phase, err)
		}
		if a := getApp(t, s, "shop"); res.Release != 1 || a.Release != 1 || a.Canary != nil {
			t.Errorf("%s: result v%d, record v%d canary %+v; want v1 alone", phase, res.Release, a.Release, a.Canary)
		}
	}
}

func TestGateLetsAnAppWithoutACanaryGo(t *testing.T) {
	_, d, _, _ := deployedShop(t)
	txn, err := deploy.Begin(context.Background(), d, "shop", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.End()
	if err := (Runner{}).Gate(txn, "this change"); err != nil {
		t.Errorf("Gate = %v, want nil", err)
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&PromotedError{App: "shop", Release: 4},
			`nothing to abort: a stopped tug had already made v4 the deployed release of app "shop", so its promote was finished; 'tug release rollback shop' goes back to the release before it`},
		{&NoCanaryError{App: "shop", Verb: "promote"},
			`nothing to promote: app "shop" runs no canary or blue-green release ('tug app deploy shop --canary 10%' starts one)`},
		{&RunningError{App: "shop", What: "scale", Stable: 3, Canary: app.Canary{Release: 4, Strategy: app.StrategyBlueGreen, Weight: 100}},
			`scale refused: v4 of app "shop" runs as a blue-green beside v3 (100% of requests); first 'tug release promote shop' (v4 gets every request) or 'tug release abort shop' (v3 keeps them)`},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%T:\n %s\nwant\n %s", tt.err, got, tt.want)
		}
	}
	if plural(1) != "unit" || plural(2) != "units" {
		t.Error("plural")
	}
}
