package deploy

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/rollout"
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
	if !slices.Contains(rec.All(), "running the release phase of v1") {
		t.Errorf("progress = %q", rec.All())
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
	change = phaseDeploy("shop:3", "./migrate")
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
	if !errors.As(err, &phase) || res == nil {
		t.Fatalf("Roll = %+v, %v; want a result and a *ReleasePhaseError", res, err)
	}
	if phase.ExitCode() != 17 || phase.Code != 4 {
		t.Errorf("exit code %d, phase code %d; want 17, 4", phase.ExitCode(), phase.Code)
	}
	// the result -o json prints: failed, why, the phase's own exit code
	if phase.Result != res || res.Status != app.StatusFailed || res.Release != 2 || res.RolledBackTo != 0 ||
		res.Failure == nil || res.Failure.Class != rollout.ClassReleasePhase || res.Failure.ExitCode() != 17 ||
		res.Failure.Message != "release phase exited with code 4" || res.Failure.Process != "web" ||
		res.Failure.ContainerExitCode == nil || *res.Failure.ContainerExitCode != 4 {
		t.Errorf("result = %+v, failure %+v", res, res.Failure)
	}
	if p := res.ReleasePhase; p == nil || p.Status != PhaseFailed || p.Command != "./migrate" || p.ExitCode == nil || *p.ExitCode != 4 {
		t.Errorf("releasePhase = %+v", p)
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
	_, err = Roll(ctx, d, "shop", phaseDeploy("shop:3", "./migrate"), Options{NoWait: true})
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
	_, err = Roll(ctx, deps(c), "shop", phaseDeploy("shop:4", "./migrate"), Options{NoWait: true})
	if err == nil || !strings.Contains(err.Error(), "nothing can run it") {
		t.Errorf("Roll without a runner = %v", err)
	}
	if a := getApp(t, s, "shop"); a.LastRelease != 3 {
		t.Errorf("last release = %d, want 3", a.LastRelease)
	}
}

// phaseRecorder is a ReleasePhaseRunner that records each run with the
// config of the release it ran for and the Deployments' Secrets at the
// time, and exits with code; with an app "shop" in a fake cluster, and
// deps that run the release phase with it.
type phaseRecorder struct {
	c    *fake.Clientset
	s    *app.Store
	d    Deps
	code int
	runs []phaseRun
}

type phaseRun struct {
	spec    ReleasePhaseSpec
	config  app.ConfigMap       // the config of the release the phase ran for
	applied map[string][]string // Deployment -> the release Secrets its units read, while the phase ran
}

func newPhaseRecorder(t *testing.T) *phaseRecorder {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	p := &phaseRecorder{c: c, s: s, d: deps(c)}
	p.d.ReleasePhase = func(ctx context.Context, spec ReleasePhaseSpec) (int, error) {
		_, cfg := getRelease(t, s, spec.Release)
		applied := map[string][]string{}
		for n, dep := range listDeployments(t, c) {
			applied[n] = secretRefs(dep)
		}
		p.runs = append(p.runs, phaseRun{spec: spec, config: cfg, applied: applied})
		return p.code, nil
	}
	return p
}

// phaseDeploy is a deploy of image with a web process and a release
// command.
func phaseDeploy(image, command string) Change {
	return WithReleaseCommand(DeployChange(image, map[string]string{"web": "./serve"}, ""), command)
}

func secretRefs(d appsv1.Deployment) []string {
	var names []string
	for _, e := range d.Spec.Template.Spec.Containers[0].EnvFrom {
		if e.SecretRef != nil {
			names = append(names, e.SecretRef.Name)
		}
	}
	return names
}

func webSecrets(t *testing.T, c *fake.Clientset) []string {
	t.Helper()
	return secretRefs(listDeployments(t, c)["shop-web"])
}

// A config change runs the release phase of the release it makes, with the
// new config, before the units get it; a failing one leaves the units on
// the old config and records the release failed.
func TestEnvChangeRunsReleasePhase(t *testing.T) {
	p := newPhaseRecorder(t)
	c, s, d, ctx := p.c, p.s, p.d, context.Background()
	change := phaseDeploy("shop:1", "./migrate")
	if _, err := Roll(ctx, d, "shop", EnvChange(app.ConfigMap{"COLOR": "red"}, nil, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err) // staged: the app has no image yet
	}
	if _, err := Roll(ctx, d, "shop", change, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	v2Secrets := webSecrets(t, c)

	res, err := Roll(ctx, d, "shop", EnvChange(app.ConfigMap{"COLOR": "blue"}, nil, ""), Options{NoWait: true})
	if err != nil {
		t.Fatalf("env change: %v", err)
	}
	if len(p.runs) != 2 {
		t.Fatalf("release phase ran %d times, want 2 (deploy, env)", len(p.runs))
	}
	run := p.runs[1]
	if run.spec.Release != 3 || run.config["COLOR"] != "blue" || !slices.Equal(run.spec.Command, []string{"./migrate"}) {
		t.Errorf("env change's phase: release %d, COLOR %q, command %q", run.spec.Release, run.config["COLOR"], run.spec.Command)
	}
	if !slices.Equal(run.applied["shop-web"], v2Secrets) {
		t.Errorf("web read %v while the phase ran, want v2's %v (nothing applied yet)", run.applied["shop-web"], v2Secrets)
	}
	if r, _ := getRelease(t, s, 3); r.Kind != app.KindEnv || r.ReleaseCommand != "./migrate" || r.Status != app.StatusDeployed {
		t.Errorf("v3 = %s %s %q", r.Kind, r.Status, r.ReleaseCommand)
	}
	if p := res.ReleasePhase; p == nil || p.Status != PhaseSucceeded || p.ExitCode == nil || *p.ExitCode != 0 {
		t.Errorf("releasePhase = %+v", res.ReleasePhase)
	}
	v3Secrets := webSecrets(t, c)
	if slices.Equal(v3Secrets, v2Secrets) {
		t.Fatalf("web still reads %v after the env change", v3Secrets)
	}

	// exits 4: nothing applied, the units keep v3's config, v4 failed, and
	// the next change starts from v3's config
	p.code = 4
	res, err = Roll(ctx, d, "shop", EnvChange(app.ConfigMap{"COLOR": "green"}, nil, ""), Options{NoWait: true})
	var phase *ReleasePhaseError
	if !errors.As(err, &phase) || phase.ExitCode() != rollout.CodeReleasePhase || res == nil || res.Status != app.StatusFailed {
		t.Fatalf("Roll = %+v, %v", res, err)
	}
	if got := p.runs[2]; got.spec.Release != 4 || got.config["COLOR"] != "green" {
		t.Errorf("phase ran for v%d with COLOR %q", got.spec.Release, got.config["COLOR"])
	}
	if got := webSecrets(t, c); !slices.Equal(got, v3Secrets) {
		t.Errorf("web reads %v after the failed phase, want v3's %v", got, v3Secrets)
	}
	if r, _ := getRelease(t, s, 4); r.Status != app.StatusFailed || r.FailReason != "release phase exited with code 4" {
		t.Errorf("v4 = %s %q", r.Status, r.FailReason)
	}
	a := getApp(t, s, "shop")
	if a.Release != 3 {
		t.Errorf("deployed release = v%d, want v3", a.Release)
	}
	if _, cfg, _ := BaseRelease(ctx, s, a); cfg["COLOR"] != "blue" {
		t.Errorf("config after the failed change: COLOR=%q, want blue", cfg["COLOR"])
	}

	// --skip-release-phase
	p.code = 0
	res, err = Roll(ctx, d, "shop", EnvChange(nil, []string{"COLOR"}, ""), Options{NoWait: true, SkipReleasePhase: true})
	if err != nil || len(p.runs) != 3 {
		t.Fatalf("env unset --skip-release-phase: %v, %d runs", err, len(p.runs))
	}
	if res.ReleasePhase == nil || res.ReleasePhase.Status != PhaseSkipped || res.ReleasePhase.ExitCode != nil {
		t.Errorf("releasePhase = %+v", res.ReleasePhase)
	}

	// --no-restart stores the change and runs nothing
	if _, err := Roll(ctx, d, "shop", EnvChange(app.ConfigMap{"SIZE": "L"}, nil, ""), Options{NoRestart: true}); err != nil || len(p.runs) != 3 {
		t.Fatalf("env set --no-restart: %v, %d runs", err, len(p.runs))
	}
}

// Settings change neither code nor config: they roll out without the
// release phase, but keep its command for the releases after them, and
// one that takes in staged config runs it.
func TestSettingsChangeSkipsReleasePhase(t *testing.T) {
	p := newPhaseRecorder(t)
	s, d, ctx := p.s, p.d, context.Background()
	if _, err := Roll(ctx, d, "shop", phaseDeploy("shop:1", "./migrate"), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	limits := SettingsChange(app.KindLimits, "limits", func(_ *app.App, r *app.Release) error {
		r.Limits = map[string]app.Limits{"web": {Memory: "256Mi"}}
		return nil
	})
	res, err := Roll(ctx, d, "shop", limits, Options{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.runs) != 1 || res.ReleasePhase != nil {
		t.Errorf("limits change: %d runs (want 1, the deploy's), releasePhase %+v", len(p.runs), res.ReleasePhase)
	}
	if r, _ := getRelease(t, s, 2); r.ReleaseCommand != "./migrate" {
		t.Errorf("v2 (limits) release command = %q, want it kept", r.ReleaseCommand)
	}
	// a config change after the settings change still runs it
	if _, err := Roll(ctx, d, "shop", EnvChange(app.ConfigMap{"A": "1"}, nil, ""), Options{NoWait: true}); err != nil || len(p.runs) != 2 {
		t.Fatalf("env set after limits: %v, %d runs", err, len(p.runs))
	}
	// staged config reaches the units with the next settings change: that
	// is new config, so the phase runs, with it
	if _, err := Roll(ctx, d, "shop", EnvChange(app.ConfigMap{"A": "2"}, nil, ""), Options{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Roll(ctx, d, "shop", limits, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if len(p.runs) != 3 || p.runs[2].spec.Release != 5 || p.runs[2].config["A"] != "2" {
		t.Errorf("limits change taking in staged config: %d runs, last %+v", len(p.runs), p.runs[len(p.runs)-1])
	}
}

// A rollback runs the restored release's release command (with its config),
// not the current one's; --skip-release-phase skips it.
func TestRollbackRunsRestoredReleasePhase(t *testing.T) {
	p := newPhaseRecorder(t)
	c, s, d, ctx := p.c, p.s, p.d, context.Background()
	if _, err := Roll(ctx, d, "shop", phaseDeploy("shop:1", "./migrate --to 1"), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Roll(ctx, d, "shop", EnvChange(app.ConfigMap{"V": "one"}, nil, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Roll(ctx, d, "shop", phaseDeploy("shop:3", "./migrate --to 3"), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Roll(ctx, d, "shop", RollbackChange(ctx, s, 2), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	last := p.runs[len(p.runs)-1]
	if len(p.runs) != 4 || last.spec.Release != 4 || !slices.Equal(last.spec.Command, []string{"./migrate", "--to", "1"}) ||
		last.config["V"] != "one" || last.spec.Deployment.Spec.Template.Spec.Containers[0].Image != "shop:1" {
		t.Errorf("rollback's phase: %d runs, last %+v (config %v)", len(p.runs), last.spec, last.config)
	}
	if r, _ := getRelease(t, s, 4); r.Kind != app.KindRollback || r.ReleaseCommand != "./migrate --to 1" {
		t.Errorf("v4 = %s %q", r.Kind, r.ReleaseCommand)
	}
	// a deploy without a release: line drops it
	if _, err := Roll(ctx, d, "shop", DeployChange("shop:5", map[string]string{"web": "./serve"}, ""), Options{NoWait: true}); err != nil || len(p.runs) != 4 {
		t.Fatalf("deploy without a release command: %v, %d runs", err, len(p.runs))
	}
	if _, err := Roll(ctx, d, "shop", RollbackChange(ctx, s, 3), Options{NoWait: true, SkipReleasePhase: true}); err != nil || len(p.runs) != 4 {
		t.Fatalf("rollback --skip-release-phase: %v, %d runs", err, len(p.runs))
	}
	// a failing rollback phase: nothing applied, v5 keeps running
	p.code = 2
	_, err := Roll(ctx, d, "shop", RollbackChange(ctx, s, 1), Options{NoWait: true})
	var phase *ReleasePhaseError
	if !errors.As(err, &phase) || phase.Previous != 6 {
		t.Fatalf("failing rollback phase: %v", err)
	}
	if img := listDeployments(t, c)["shop-web"].Spec.Template.Spec.Containers[0].Image; img != "shop:3" {
		t.Errorf("web image after the failed rollback = %s, want shop:3 (v6)", img)
	}
}

func TestDryRunSaysReleasePhase(t *testing.T) {
	p := newPhaseRecorder(t)
	d, ctx := p.d, context.Background()
	cmd := "DATABASE_URL=postgres://app:hunter2@db/x ./migrate\n--all"
	if _, err := Roll(ctx, d, "shop", phaseDeploy("shop:1", "./migrate"), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		change Change
		opts   Options
		line   string
		status string
	}{
		{"deploy", phaseDeploy("shop:2", cmd), Options{DryRun: true},
			`release phase: "DATABASE_URL=(hidden) ./migrate --all" would run once in a one-off unit of v2 before anything rolls out`, PhasePlanned},
		{"deploy skipped", phaseDeploy("shop:2", "psql postgres://u:pw@db/x -c 'select 1'"), Options{DryRun: true, SkipReleasePhase: true},
			`release phase: "psql postgres://u:(hidden)@db/x -c 'select 1'" skipped (--skip-release-phase)`, PhaseSkipped},
		{"env", EnvChange(app.ConfigMap{"A": "1"}, nil, ""), Options{DryRun: true},
			`release phase: "./migrate" would run once in a one-off unit of v2 before anything rolls out`, PhasePlanned},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Roll(ctx, d, "shop", c.change, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Plan) == 0 || res.Plan[0] != c.line {
				t.Errorf("plan = %q\nwant first %q", res.Plan, c.line)
			}
			if res.ReleasePhase == nil || res.ReleasePhase.Status != c.status {
				t.Errorf("releasePhase = %+v, want %s", res.ReleasePhase, c.status)
			}
			if strings.Contains(strings.Join(res.Plan, "\n"), "hunter2") || strings.Contains(strings.Join(res.Plan, "\n"), ":pw@") {
				t.Errorf("plan shows a secret: %q", res.Plan)
			}
		})
	}
	if len(p.runs) != 1 {
		t.Errorf("a dry run ran the release phase: %d runs", len(p.runs))
	}
	// a settings change says nothing about it: it would not run
	res, err := Roll(ctx, d, "shop", SettingsChange(app.KindTags, "tags", func(*app.App, *app.Release) error { return nil }), Options{DryRun: true})
	if err != nil || res.ReleasePhase != nil || strings.Contains(strings.Join(res.Plan, "\n"), "release phase") {
		t.Errorf("tags dry run = %+v, %v", res, err)
	}
}

func TestSanitizeCommand(t *testing.T) {
	for in, want := range map[string]string{
		"./migrate --all":                        `./migrate --all`,
		"TOKEN=abc FOO='x y' rake db:migrate":    `TOKEN=(hidden) FOO=(hidden) rake db:migrate`,
		"env PGPASSWORD=\"s e\" psql":            `env PGPASSWORD=(hidden) psql`,
		"curl https://user:secret@example.com/x": `curl https://user:(hidden)@example.com/x`,
		"echo \x1b[31mred":                       "echo \x1b[31mred",
		"./migrate --to=3":                       `./migrate --to=3`,
		"./migrate --password=pw --db-password='a b' --api-token=t -k=1": `./migrate --password=(hidden) --db-password=(hidden) --api-token=(hidden) -k=1`,
		"sh -c 'PGPASSWORD=pw psql -c x'":                                `sh -c 'PGPASSWORD=(hidden) psql -c x'`,
	} {
		if got := SanitizeCommand(in); got != want {
			t.Errorf("SanitizeCommand(%q) = %q, want %q", in, got, want)
		}
	}
}
