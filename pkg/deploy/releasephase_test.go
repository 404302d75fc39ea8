package deploy

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

func TestRollRunsReleasePhaseBeforeApplying(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	var specs []ReleasePhaseSpec
	var seen [][]string
	d := deps(c)
	rec := &recorder{}
	d.Progress = rec
	d.ReleasePhase = func(ctx context.Context, spec ReleasePhaseSpec) (int, error) {
		specs = append(specs, spec)
		var names []string
		for n, dep := range listDeployments(t, c) {
			names = append(names, n+"="+dep.Spec.Template.Spec.Containers[0].Image)
		}
		seen = append(seen, names)
		return 0, nil
	}
	change := WithReleaseCommand(DeployChange("shop:1", map[string]string{"worker": "./w", "web": "./serve"}, ""), "./migrate --all")
	if _, err := Roll(ctx, d, "shop", change, Options{NoWait: true}); err != nil {
		t.Fatalf("Roll: %v", err)
	}
	if len(specs) != 1 {
		t.Fatalf("release phase ran %d times, want 1", len(specs))
	}
	sp := specs[0]
	if sp.Release != 1 || sp.Process != "web" || !slices.Equal(sp.Command, []string{"./migrate", "--all"}) ||
		sp.Deployment == nil || sp.Deployment.Spec.Template.Spec.Containers[0].Image != "shop:1" ||
		sp.Deployment.Spec.Template.Labels[kube.LabelRelease] != "1" {
		t.Errorf("spec = %+v", sp)
	}
	if len(seen[0]) != 0 {
		t.Errorf("Deployments present while the release phase ran: %v, want none", seen[0])
	}
	if !slices.Contains(rec.all(), "running the release phase of v1") {
		t.Errorf("progress = %q", rec.all())
	}
	if r, _ := getRelease(t, s, 1); r.Status != app.StatusDeployed || r.ReleaseCommand != "./migrate --all" {
		t.Errorf("v1 = %s %q", r.Status, r.ReleaseCommand)
	}

	// the second deploy's phase runs while v1 is what is applied
	change = WithReleaseCommand(DeployChange("shop:2", map[string]string{"worker": "./w", "web": "./serve"}, ""), "./migrate")
	if _, err := Roll(ctx, d, "shop", change, Options{NoWait: true}); err != nil {
		t.Fatalf("Roll v2: %v", err)
	}
	slices.Sort(seen[1])
	if want := []string{"shop-web=shop:1", "shop-worker=shop:1"}; !slices.Equal(seen[1], want) {
		t.Errorf("Deployments while v2's phase ran = %v, want %v", seen[1], want)
	}

	// skipped
	change = WithReleaseCommand(DeployChange("shop:3", map[string]string{"web": "./serve"}, ""), "./migrate")
	if _, err := Roll(ctx, d, "shop", change, Options{NoWait: true, SkipReleasePhase: true}); err != nil {
		t.Fatalf("Roll v3: %v", err)
	}
	if len(specs) != 2 {
		t.Errorf("release phase ran %d times, want 2 (skipped for v3)", len(specs))
	}
}

func TestRollReleasePhaseFailureAppliesNothing(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": "./serve"}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	before := listDeployments(t, c)
	d := deps(c)
	d.ReleasePhase = func(context.Context, ReleasePhaseSpec) (int, error) { return 4, nil }
	change := WithReleaseCommand(DeployChange("shop:2", map[string]string{"web": "./serve", "worker": "./w"}, ""), "./migrate")
	res, err := Roll(ctx, d, "shop", change, Options{NoWait: true})
	var phase *ReleasePhaseError
	if !errors.As(err, &phase) || res != nil {
		t.Fatalf("Roll = %+v, %v; want a *ReleasePhaseError", res, err)
	}
	if phase.ExitCode() != 17 || phase.Code != 4 {
		t.Errorf("exit code %d, phase code %d; want 17, 4", phase.ExitCode(), phase.Code)
	}
	want := `release v2 of app "shop" failed: release phase exited with code 4; nothing was rolled out, v1 keeps running`
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	after := listDeployments(t, c)
	if !slices.Equal(slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before))) ||
		after["shop-web"].Spec.Template.Spec.Containers[0].Image != "shop:1" {
		t.Errorf("Deployments changed: %v", slices.Sorted(maps.Keys(after)))
	}
	if r, _ := getRelease(t, s, 2); r.Status != app.StatusFailed || r.FailReason != "release phase exited with code 4" {
		t.Errorf("v2 = %s %q", r.Status, r.FailReason)
	}
	a := getApp(t, s, "shop")
	if a.Release != 1 || a.LastRelease != 2 || !maps.Equal(a.Processes, map[string]app.Process{"web": {Replicas: 1}}) {
		t.Errorf("app = release %d, last %d, processes %v", a.Release, a.LastRelease, a.Processes)
	}
	assertNoLease(t, c)

	// a phase that cannot be run at all: also nothing applied, release failed
	d.ReleasePhase = func(context.Context, ReleasePhaseSpec) (int, error) {
		return 0, errors.New("creating run pod: forbidden")
	}
	_, err = Roll(ctx, d, "shop", WithReleaseCommand(DeployChange("shop:3", map[string]string{"web": "./serve"}, ""), "./migrate"), Options{NoWait: true})
	if err == nil || errors.As(err, &phase) {
		t.Fatalf("Roll = %v", err)
	}
	if r, _ := getRelease(t, s, 3); r.Status != app.StatusFailed || r.FailReason != "release phase: creating run pod: forbidden" {
		t.Errorf("v3 = %s %q", r.Status, r.FailReason)
	}
	if img := listDeployments(t, c)["shop-web"].Spec.Template.Spec.Containers[0].Image; img != "shop:1" {
		t.Errorf("web image = %s", img)
	}

	// without a runner the release is refused before it is stored
	_, err = Roll(ctx, deps(c), "shop", WithReleaseCommand(DeployChange("shop:4", map[string]string{"web": "./serve"}, ""), "./migrate"), Options{NoWait: true})
	if err == nil || !strings.Contains(err.Error(), "nothing can run it") {
		t.Errorf("Roll without a runner = %v", err)
	}
	if a := getApp(t, s, "shop"); a.LastRelease != 3 {
		t.Errorf("last release = %d, want 3", a.LastRelease)
	}
}
