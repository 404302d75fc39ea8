package deploy

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube/kubetest"
)

// dryRunFixture is app "shop" with two releases, each rolled out:
// v1 (shop:1, web ./serve and worker ./work, release command ./migrate,
// config A=alpha-secret) and v2 (shop:2, web ./serve2, no worker, no
// release command, config A=beta-secret B=bravo-secret). v2 runs.
func dryRunFixture(t *testing.T) (*phaseRecorder, context.Context) {
	t.Helper()
	p := newPhaseRecorder(t)
	ctx := context.Background()
	v1 := WithReleaseCommand(DeployChange("shop:1", map[string]string{"web": "./serve", "worker": "./work"}, ""), "./migrate")
	if _, err := Roll(ctx, p.d, "shop", v1, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Roll(ctx, p.d, "shop", EnvChange(app.ConfigMap{"A": "alpha-secret"}, nil, ""), Options{NoWait: true, SkipReleasePhase: true}); err != nil {
		t.Fatal(err)
	}
	v3 := DeployChange("shop:2", map[string]string{"web": "./serve2"}, "")
	if _, err := Roll(ctx, p.d, "shop", v3, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Roll(ctx, p.d, "shop", EnvChange(app.ConfigMap{"A": "beta-secret", "B": "bravo-secret"}, nil, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	// a fresh store: p.s remembers the record as seeded
	p.s = &app.Store{Client: p.c, Namespace: ns}
	if _, err := p.s.UpdateApp(ctx, "shop", func(x *app.App) error { x.Processes["web"] = app.Process{Replicas: 3}; return nil }); err != nil {
		t.Fatal(err)
	}
	p.c.ClearActions()
	return p, ctx
}

// assertDryRun checks that a dry run stored nothing: the same objects
// (releases, the app record, lease, Deployments...) before and after, and
// every write it sent was a dry run.
func assertDryRun(t *testing.T, p *phaseRecorder, before map[string]string) {
	t.Helper()
	if d := kubetest.Diff(before, kubetest.Objects(t, p.c, ns)); len(d) > 0 {
		t.Errorf("dry run changed the cluster: %q", d)
	}
	for _, a := range p.c.Actions() {
		var dry []string
		switch a := a.(type) {
		case k8stesting.CreateActionImpl:
			dry = a.CreateOptions.DryRun
		case k8stesting.UpdateActionImpl:
			dry = a.UpdateOptions.DryRun
		case k8stesting.PatchActionImpl:
			dry = a.PatchOptions.DryRun
		case k8stesting.DeleteActionImpl:
			dry = nil
		default:
			continue
		}
		if !slices.Equal(dry, []string{metav1.DryRunAll}) {
			t.Errorf("dry run sent %s %s without dry-run", a.GetVerb(), a.GetResource().Resource)
		}
		if r := a.GetResource().Resource; r == "leases" {
			t.Errorf("dry run touched the deploy lock: %s %s", a.GetVerb(), r)
		}
	}
	if len(p.runs) != 0 {
		t.Errorf("dry run ran the release phase %d times", len(p.runs))
	}
}

func assertNoValues(t *testing.T, res *Result) {
	t.Helper()
	if b := mustJSON(t, res); strings.Contains(b, "-secret") || strings.Contains(b, "hunter2") {
		t.Errorf("dry-run result shows a config value: %s", b)
	}
}

func TestEnvDryRun(t *testing.T) {
	for _, c := range []struct {
		name   string
		change Change
		plan   []string
	}{
		{"set", EnvChange(app.ConfigMap{"A": "gamma-secret", "C": "charlie-secret"}, nil, ""),
			[]string{"web: 3 units restart", "env: ~A, +C (values hidden)"}},
		{"unset", EnvChange(nil, []string{"B"}, ""),
			[]string{"web: 3 units restart", "env: -B (values hidden)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, ctx := dryRunFixture(t)
			p.runs = nil
			before := kubetest.Objects(t, p.c, ns)
			res, err := Roll(ctx, p.d, "shop", c.change, Options{DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "dry-run" || res.Release != 5 || res.Staged || res.Image != "shop:2" {
				t.Errorf("result = %+v", res)
			}
			if !slices.Equal(res.Plan, c.plan) {
				t.Errorf("plan = %q, want %q", res.Plan, c.plan)
			}
			assertNoValues(t, res)
			assertDryRun(t, p, before)
			// the server was asked about the release record and the objects
			var creates, patches int
			for _, a := range p.c.Actions() {
				switch a.GetVerb() {
				case "create":
					if a.GetResource().Resource == "secrets" {
						creates++
					}
				case "patch":
					patches++
				}
			}
			if creates != 1 || patches == 0 {
				t.Errorf("server asked %d release creates, %d applies; want 1 and some", creates, patches)
			}
		})
	}
}

// A release a killed tug stored without counting it (its record still says
// v4) does not make a dry run fail: it numbers the release as the real run
// would, after it, and the server is asked about that name.
func TestDryRunAfterAnUncountedRelease(t *testing.T) {
	p, ctx := dryRunFixture(t)
	left := &app.Release{App: "shop", Version: 5, Status: app.StatusPending, Image: "shop:2", Processes: map[string]string{"web": "./serve2"}}
	if err := p.s.CreateRelease(ctx, left, app.ConfigMap{"A": "beta-secret"}); err != nil {
		t.Fatal(err)
	}
	p.c.ClearActions()
	p.runs = nil
	before := kubetest.Objects(t, p.c, ns)
	res, err := Roll(ctx, p.d, "shop", EnvChange(app.ConfigMap{"C": "charlie-secret"}, nil, ""), Options{DryRun: true})
	if err != nil {
		t.Fatalf("dry run after an uncounted v5: %v", err)
	}
	if res.Release != 6 {
		t.Errorf("dry run numbers v%d, want v6 (after the uncounted v5)", res.Release)
	}
	assertDryRun(t, p, before)
}

// A dry run of a change that would only be stored (--no-restart, or an app
// never deployed) stores nothing, applies nothing and says so.
func TestEnvDryRunStaged(t *testing.T) {
	t.Run("no-restart", func(t *testing.T) {
		p, ctx := dryRunFixture(t)
		p.runs = nil
		before := kubetest.Objects(t, p.c, ns)
		res, err := Roll(ctx, p.d, "shop", EnvChange(app.ConfigMap{"C": "charlie-secret"}, nil, ""), Options{DryRun: true, NoRestart: true})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"release v5 would be stored; it applies at the next deploy (--no-restart: no unit restarts)", "env: +C (values hidden)"}
		if res.Status != "dry-run" || !res.Staged || !slices.Equal(res.Plan, want) || res.ReleasePhase != nil {
			t.Errorf("result = %+v\nwant plan %q", res, want)
		}
		assertNoValues(t, res)
		assertDryRun(t, p, before)
		for _, a := range p.c.Actions() {
			if a.GetVerb() == "patch" {
				t.Errorf("a stored-only dry run applied %s", a.GetResource().Resource)
			}
		}
	})
	t.Run("never deployed", func(t *testing.T) {
		p := newPhaseRecorder(t)
		ctx := context.Background()
		p.c.ClearActions()
		before := kubetest.Objects(t, p.c, ns)
		res, err := Roll(ctx, p.d, "shop", EnvChange(app.ConfigMap{"A": "alpha-secret"}, nil, ""), Options{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"release v1 would be stored; it applies at the next deploy (the app has no image yet)", "env: +A (values hidden)"}
		if res.Status != "dry-run" || !res.Staged || res.Release != 1 || !slices.Equal(res.Plan, want) {
			t.Errorf("result = %+v\nwant plan %q", res, want)
		}
		assertNoValues(t, res)
		assertDryRun(t, p, before)
		if a := getApp(t, p.s, "shop"); a.LastRelease != 0 {
			t.Errorf("dry run moved the app's last release to %d", a.LastRelease)
		}
	})
}

// A rollback dry run says what would change against what runs (v4):
// image, commands, a process back, env keys, and the restored release's
// release phase.
func TestRollbackDryRun(t *testing.T) {
	p, ctx := dryRunFixture(t)
	p.runs = nil
	before := kubetest.Objects(t, p.c, ns)
	res, err := Roll(ctx, p.d, "shop", RollbackChange(ctx, p.s, 2), Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`release phase: "./migrate" would run once in a one-off unit of v5 before anything rolls out`,
		`web: image shop:2 -> shop:1, command "./serve2" -> "./serve", 3 units restart`,
		`worker: new process, 1 unit, command "./work"`,
		"env: ~A, -B (values hidden)",
	}
	if !slices.Equal(res.Plan, want) {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(res.Plan, "\n"), strings.Join(want, "\n"))
	}
	if res.Status != "dry-run" || res.Release != 5 || res.Image != "shop:1" || res.ReleasePhase == nil || res.ReleasePhase.Status != PhasePlanned {
		t.Errorf("result = %+v", res)
	}
	assertNoValues(t, res)
	assertDryRun(t, p, before)

	res, err = Roll(ctx, p.d, "shop", RollbackChange(ctx, p.s, 2), Options{DryRun: true, SkipReleasePhase: true})
	if err != nil || res.ReleasePhase == nil || res.ReleasePhase.Status != PhaseSkipped {
		t.Errorf("--skip-release-phase dry run = %+v, %v", res, err)
	}
}

// With config staged by --no-restart (S, in v5), a dry run that rolls out
// compares with what runs (v4), not with the staged release: an env change
// would roll S out too, and a rollback would not remove an S that never ran.
func TestDryRunPlanComparesWithWhatRuns(t *testing.T) {
	p, ctx := dryRunFixture(t)
	if _, err := Roll(ctx, p.d, "shop", EnvChange(app.ConfigMap{"S": "staged-secret"}, nil, ""), Options{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		change Change
		env    string
	}{
		{"env set", EnvChange(app.ConfigMap{"C": "charlie-secret"}, nil, ""), "env: +C, +S (values hidden)"},
		{"rollback", RollbackChange(ctx, p.s, 3), "env: ~A, -B (values hidden)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Roll(ctx, p.d, "shop", c.change, Options{DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Release != 6 || len(res.Plan) == 0 || res.Plan[len(res.Plan)-1] != c.env {
				t.Errorf("v%d plan %q, want last %q", res.Release, res.Plan, c.env)
			}
			assertNoValues(t, res)
		})
	}
}
