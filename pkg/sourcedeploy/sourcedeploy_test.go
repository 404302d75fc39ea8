package sourcedeploy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/deploy/deploytest"
	"tug.dev/tug/pkg/imagebuild"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/lock"
)

// folder is a source folder holding files (name -> content).
func folder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPackRefusesBadInput: every refusal is an input error (exit 2),
// found before any request; a good folder packs with its Dockerfile and
// Procfile found.
func TestPackRefusesBadInput(t *testing.T) {
	plain := folder(t, map[string]string{"index.html": "hi", "Procfile": "web: ./serve\n"})
	docker := folder(t, map[string]string{"Dockerfile": "FROM scratch\n", "Other.Dockerfile": "FROM scratch\n"})
	outside := filepath.Join(t.TempDir(), "Dockerfile")
	if err := os.WriteFile(outside, []byte("FROM scratch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		s    Source
		want string
	}{
		{"spaces in the builder", Source{Dir: plain, Want: app.BuildSettings{Builder: "my builder"}}, `invalid --builder "my builder": no spaces`},
		{"spaces in the folder", Source{Dir: plain + " x"}, "invalid --source"},
		{"negative timeout", Source{Dir: plain, Want: app.BuildSettings{Timeout: "-1m0s"}}, "--build-timeout must be positive, not -1m0s"},
		{"no folder", Source{Dir: filepath.Join(plain, "missing")}, "missing"},
		{"build arg without =", Source{Dir: docker, BuildArgs: []string{"A"}}, `invalid --build-arg "A": want K=V`},
		{"build arg without a Dockerfile", Source{Dir: plain, BuildArgs: []string{"A=1"}}, "need a Dockerfile"},
		{"target without a Dockerfile", Source{Dir: plain, Target: "final"}, "need a Dockerfile"},
		{"a Dockerfile outside", Source{Dir: docker, Dockerfile: outside}, "is not inside the source"},
		{"no such Dockerfile", Source{Dir: docker, Dockerfile: filepath.Join(docker, "Nope")}, "not a file"},
		{"bad buildpack", Source{Dir: plain, Want: app.BuildSettings{Buildpacks: []string{"a b"}}}, "a b"},
		{"bad build env", Source{Dir: plain, Want: app.BuildSettings{BuildEnv: []string{"=1"}}}, "=1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Pack(c.s)
			if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Pack: %v (packed %v), want an input error saying %q", err, p != nil, c.want)
			}
		})
	}
	p, err := Pack(Source{Dir: plain, Want: app.BuildSettings{Timeout: "2m0s"}})
	if err != nil || p.dockerfile != "" || p.Procfile() != filepath.Join(plain, "Procfile") || p.Source().Files != 2 {
		t.Errorf("plain folder: %v, Dockerfile %q, Procfile %q", err, p.dockerfile, p.Procfile())
	}
	p, err = Pack(Source{Dir: docker, BuildArgs: []string{"A=1"}})
	if err != nil || p.dockerfile != "Dockerfile" || p.Procfile() != "" {
		t.Errorf("Dockerfile folder: %v, Dockerfile %q, Procfile %q", err, p.dockerfile, p.Procfile())
	}
	t.Chdir(docker)
	if p, err = Pack(Source{Dir: docker, Dockerfile: "Other.Dockerfile"}); err != nil || p.dockerfile != "Other.Dockerfile" {
		t.Errorf("--dockerfile inside: %v, %q", err, p.dockerfile)
	}
}

// fixture is a fake cluster with app shop, which builds with a builder.
func fixture(t *testing.T, a *app.App) (Deps, *app.Store, *bytes.Buffer) {
	t.Helper()
	c, s := deploytest.NewFake()
	deploytest.SeedApp(t, s, a)
	var log bytes.Buffer
	d := Deps{Deploy: deploy.Deps{Client: c, Namespace: deploytest.Namespace, Holder: lock.Holder{User: "alice", PID: 1, Host: "laptop"}},
		Log: &log, Progress: &deploytest.Recorder{}}
	return d, s, &log
}

// TestDeployDryRunBuildsNothing: a dry run resolves the build from the
// app's remembered settings, says what it packed, and returns the plan;
// no pod, no release.
func TestDeployDryRunBuildsNothing(t *testing.T) {
	d, s, log := fixture(t, &app.App{Name: "shop", Build: &app.BuildSettings{Builder: "reg/builder:1", Repository: "reg/shop"}})
	p, err := Pack(Source{Dir: folder(t, map[string]string{"index.html": "hi"})})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Deploy(context.Background(), d, p, Options{App: "shop", Rollout: deploy.Options{DryRun: true}})
	if err != nil || res == nil || res.DryRun == nil || res.Deploy != nil || res.Build != nil {
		t.Fatalf("dry run: %+v, %v", res, err)
	}
	if res.DryRun.Settings.Builder != "reg/builder:1" || res.DryRun.Settings.Repository != "reg/shop" || res.DryRun.RunImage != "reg/builder:1" {
		t.Errorf("plan %+v", res.DryRun.Settings)
	}
	if !strings.HasPrefix(log.String(), "source: "+p.Source().Dir+", 1 files, ") {
		t.Errorf("log %q", log.String())
	}
	pods, _ := d.Deploy.Client.CoreV1().Pods(deploytest.Namespace).List(context.Background(), metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Errorf("a dry run made %d pods", len(pods.Items))
	}
	if rs, _ := s.ListReleases(context.Background(), "shop"); len(rs) != 0 {
		t.Errorf("a dry run made %d releases", len(rs))
	}
}

// TestDeployStopsBeforeTheRolloutWithNoResult: a plan refused (no
// repository, a missing app) returns no result, which callers read as
// "the rollout never ran".
func TestDeployStopsBeforeTheRolloutWithNoResult(t *testing.T) {
	d, _, log := fixture(t, &app.App{Name: "shop"})
	p, err := Pack(Source{Dir: folder(t, map[string]string{"index.html": "hi"})})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"shop", "gone"} {
		res, err := Deploy(context.Background(), d, p, Options{App: name})
		if res != nil || err == nil {
			t.Errorf("%s: %+v, %v; want no result and an error", name, res, err)
		}
	}
	if log.Len() != 0 {
		t.Errorf("a refused plan logged %q", log.String())
	}
}

// TestRollDeploysTheBuiltImage: the release runs the built digest with
// what built it and the build arguments, the settings the build worked
// with are remembered, the result shows the build, and the rollout runs
// inside Hold.
func TestRollDeploysTheBuiltImage(t *testing.T) {
	d, s, _ := fixture(t, &app.App{Name: "shop"})
	held := 0
	d.Hold = func(ctx context.Context, roll func(context.Context) error) error {
		held++
		return roll(ctx)
	}
	p, err := Pack(Source{Dir: folder(t, map[string]string{"Dockerfile": "FROM scratch\n"}), Want: app.BuildSettings{Repository: "reg/shop"}, BuildArgs: []string{"V=1"}})
	if err != nil {
		t.Fatal(err)
	}
	r := run{p: p, o: Options{App: "shop", Message: "first", Rollout: deploy.Options{NoWait: true},
		Processes: app.ProcessChange{Set: map[string]string{"web": "./serve"}, From: "--process"}, ProcessesNamed: true}, d: d}
	plan, err := r.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	built := &imagebuild.Result{Image: "reg/shop@sha256:1"}
	res, err := r.roll(context.Background(), plan, built)
	if err != nil || res == nil || res.Deploy == nil || res.Build != built || held != 1 {
		t.Fatalf("roll: %+v, %v (held %d)", res, err, held)
	}
	if res.Deploy.Build == nil || res.Deploy.Build.Image != built.Image || res.Deploy.Release != 1 {
		t.Errorf("result %+v, build %+v", res.Deploy, res.Deploy.Build)
	}
	rel, _ := deploytest.GetRelease(t, s, 1)
	if rel.Image != built.Image || rel.Processes["web"] != "./serve" || rel.Message != "first" || len(rel.BuildArgs) != 1 {
		t.Errorf("release %+v", rel)
	}
	if a := deploytest.GetApp(t, s, "shop"); a.Build == nil || a.Build.Repository != "reg/shop" {
		t.Errorf("remembered build %+v", a.Build)
	}
	// a build of unchanged source makes the digest that runs: no release
	// then (deploy's unchanged check, proven end to end); the settings
	// are remembered, as the plan says
	if o := r.rollout(plan); !o.SkipUnchanged || !o.NoWait || o.RememberBuild == nil || o.RememberBuild.Repository != "reg/shop" {
		t.Errorf("rollout options %+v", o)
	}
}

// TestRollWithHoldRefused: when Hold fails before the rollout (a
// service's lock held), there is no result and nothing is released.
func TestRollWithHoldRefused(t *testing.T) {
	d, s, _ := fixture(t, &app.App{Name: "shop", Build: &app.BuildSettings{Builder: "reg/b:1", Repository: "reg/shop"}})
	locked := errors.New("service db is locked")
	d.Hold = func(context.Context, func(context.Context) error) error { return locked }
	p, err := Pack(Source{Dir: folder(t, map[string]string{"index.html": "hi"})})
	if err != nil {
		t.Fatal(err)
	}
	r := run{p: p, o: Options{App: "shop", Rollout: deploy.Options{NoWait: true}}, d: d}
	plan, err := r.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.roll(context.Background(), plan, &imagebuild.Result{Image: "reg/shop@sha256:1"})
	if res != nil || !errors.Is(err, locked) {
		t.Errorf("%+v, %v; want no result and the lock's error", res, err)
	}
	if rs, _ := s.ListReleases(context.Background(), "shop"); len(rs) != 0 {
		t.Errorf("%d releases", len(rs))
	}
}

// TestChangeTakesACNBImagesProcesses: a CNB image's process types are the
// release's, through the launcher, unless the deploy named its own; the
// release command goes with them.
func TestChangeTakesACNBImagesProcesses(t *testing.T) {
	p := &Packed{}
	cnb := &imagebuild.Result{Image: "reg/shop@sha256:1", CNB: true, Processes: []string{"web", "worker"}}
	for _, c := range []struct {
		name  string
		named bool
		want  map[string]string
		cmd   string
	}{
		{"from the image", false, map[string]string{"web": "/cnb/process/web", "worker": "/cnb/process/worker"}, ""},
		{"named", true, map[string]string{"web": "./serve"}, "./migrate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run{p: p, o: Options{App: "shop", Yes: true, ReleaseCommand: "./migrate", ProcessesNamed: c.named,
				Processes: app.ProcessChange{Set: map[string]string{"web": "./serve"}, Complete: true, From: "Procfile"}}}
			rel, _, err := r.change(cnb)(&app.App{Name: "shop"}, nil, app.ConfigMap{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rel.Processes) != len(c.want) || rel.ReleaseCommand != c.cmd {
				t.Errorf("processes %v, release command %q; want %v, %q", rel.Processes, rel.ReleaseCommand, c.want, c.cmd)
			}
			for k, v := range c.want {
				if rel.Processes[k] != v {
					t.Errorf("%s: %q, want %q", k, rel.Processes[k], v)
				}
			}
		})
	}
}

// TestRecordFailedBuild: a failed build is a failed release in the
// history, and the error exits as the build's (16), naming it.
func TestRecordFailedBuild(t *testing.T) {
	d, s, _ := fixture(t, &app.App{Name: "shop"})
	r := run{o: Options{App: "shop", Message: "try"}, d: d}
	err := r.recordFailed(context.Background(), &imagebuild.Error{Stage: "build", Message: "step 2 exited 1"})
	var failed *BuildFailedError
	if !errors.As(err, &failed) || failed.Release != 1 || failed.RecordErr != nil {
		t.Fatalf("%v (%+v)", err, failed)
	}
	var coded interface{ ExitCode() int }
	if !errors.As(err, &coded) || coded.ExitCode() != imagebuild.CodeBuildFailed || err.Error() != "build failed: step 2 exited 1" {
		t.Errorf("error %q does not exit as the build's", err)
	}
	rel, _ := deploytest.GetRelease(t, s, 1)
	if rel.Status != app.StatusFailed || !strings.Contains(rel.FailReason, "step 2 exited 1") {
		t.Errorf("release %+v", rel)
	}
	// an app that is gone: the error says why nothing was recorded
	r.o.App = "gone"
	if err := r.recordFailed(context.Background(), &imagebuild.Error{Message: "x"}); !errors.As(err, &failed) || failed.RecordErr == nil {
		t.Errorf("gone app: %v", err)
	}
}

// TestCancelledSaysWhatItLeft: a cancelled build names the app and wraps
// the cause.
func TestCancelledSaysWhatItLeft(t *testing.T) {
	err := &CancelledError{App: "shop", Err: context.Canceled}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.NextStep(), `app "shop" keeps running`) {
		t.Errorf("%v: %s", err, err.NextStep())
	}
	// what stopped the build is a cancellation once the context is done,
	// a failed build's report kept inside it
	r := run{o: Options{App: "shop"}}
	failed := &BuildFailedError{Err: &imagebuild.Error{Message: "x"}, Release: 3}
	if got := r.cancelled(context.Background(), failed); got != error(failed) {
		t.Errorf("not cancelled: %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := r.cancelled(ctx, failed)
	var c *CancelledError
	var f *BuildFailedError
	if !errors.As(got, &c) || !errors.As(got, &f) || f.Release != 3 {
		t.Errorf("cancelled: %v", got)
	}
}
