package promote

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
)

func side(procs map[string]string, config app.ConfigMap, build *app.BuildSettings) Side {
	return Side{App: &app.App{Name: "shop", Build: build}, Release: &app.Release{Processes: procs}, Config: config}
}

func TestCompareShowsKeysNeverValues(t *testing.T) {
	src := side(map[string]string{"web": "serve", "worker": "work"}, app.ConfigMap{"A": "secret-a", "SHARED": "1"},
		&app.BuildSettings{Builder: "b:1", BuildEnv: []string{"API=staging", "SAME=x", "ONLY_SRC=1"}})
	dst := side(map[string]string{"web": "serve --prod", "clock": "tick"}, app.ConfigMap{"B": "secret-b", "SHARED": "2"},
		&app.BuildSettings{Builder: "b:2", BuildEnv: []string{"API=prod", "SAME=x", "ONLY_DST=1"}})
	src.Release.BuildArgs, dst.Release.BuildArgs = []string{"VERSION"}, nil
	d := Compare(src, dst)
	if !slices.Equal(d.ConfigOnlyInSource, []string{"A"}) || !slices.Equal(d.ConfigOnlyInTarget, []string{"B"}) {
		t.Errorf("config: %v / %v", d.ConfigOnlyInSource, d.ConfigOnlyInTarget)
	}
	want := []ProcessDiff{{Name: "web", Change: "changed", Source: "serve", Target: "serve --prod"},
		{Name: "clock", Change: "removed", Target: "tick"}, {Name: "worker", Change: "added", Source: "work"}}
	if !slices.Equal(d.Processes, want) {
		t.Errorf("processes: %+v", d.Processes)
	}
	b := d.Build
	if b.SourceBuilder != "b:1" || b.TargetBuilder != "b:2" {
		t.Errorf("builders: %+v", b)
	}
	if !slices.Equal(b.PerStage, []string{"API", "ONLY_DST", "ONLY_SRC"}) {
		t.Errorf("per-stage: %v", b.PerStage)
	}
	if !slices.Equal(b.BuildArgsOnlyInSource, []string{"VERSION"}) {
		t.Errorf("build args: %v", b.BuildArgsOnlyInSource)
	}
	all := strings.Join(d.Lines(), "\n")
	for _, secret := range []string{"secret-a", "secret-b", "staging", "prod\n", "=1"} {
		if strings.Contains(all, secret) {
			t.Errorf("the diff shows a value %q:\n%s", secret, all)
		}
	}
	for _, want := range []string{"config only in the source (not copied): A", "process clock: removed", "build env differing by app (baked into the image): API, ONLY_DST, ONLY_SRC", "builder: the image was built with b:1; the target builds with b:2"} {
		if !strings.Contains(all, want) {
			t.Errorf("the diff lacks %q:\n%s", want, all)
		}
	}
}

func TestCompareSameShowsNothing(t *testing.T) {
	b := &app.BuildSettings{Builder: "b:1", BuildEnv: []string{"K=V"}}
	s := side(map[string]string{"web": "serve"}, app.ConfigMap{"A": "1"}, b)
	d := Compare(s, side(map[string]string{"web": "serve"}, app.ConfigMap{"A": "2"}, b))
	if l := d.Lines(); len(l) != 0 {
		t.Errorf("lines for two alike apps: %v", l)
	}
	// a target never deployed: every source process is added
	d = Compare(s, Side{App: &app.App{Name: "prod"}, Config: app.ConfigMap{}})
	if len(d.Processes) != 1 || d.Processes[0].Change != "added" || len(d.Build.PerStage) != 1 {
		t.Errorf("against an empty target: %+v", d)
	}
}

func TestPlanRefusesPerStageBuildEnv(t *testing.T) {
	p := &Plan{Source: Ref{Namespace: "staging", App: "shop"}, Target: Ref{Namespace: "prod", App: "shop"}}
	if err := p.Refusal(); err != nil {
		t.Fatalf("no per-stage input: %v", err)
	}
	p.Diff.Build.PerStage = []string{"API_URL"}
	err := p.Refusal()
	if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "API_URL") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("refusal: %v", err)
	}
}

func TestPrepareValidates(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	s := &app.Store{Client: c, Namespace: "staging"}
	if err := s.CreateApp(ctx, &app.App{Name: "shop", Namespace: "staging"}); err != nil {
		t.Fatal(err)
	}
	e := func(ns, a string) Endpoint { return Endpoint{Client: c, Namespace: ns, App: a} }
	for _, tc := range []struct {
		src, dst Endpoint
		want     string
	}{
		{e("staging", "shop"), e("staging", "shop"), "the target is the source"},
		{e("staging", "nosuch"), e("prod", "shop"), "not found"},
		{e("staging", "shop"), e("prod", "shop"), "runs no release yet"},
	} {
		_, err := Prepare(ctx, tc.src, tc.dst, "")
		if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: %v, want an input error saying %q", tc.src, tc.dst, err, tc.want)
		}
	}
}

func TestNextStageAndBehind(t *testing.T) {
	stages := []Stage{{"dev", "shop"}, {"staging", "shop"}, {"prod", "shop"}}
	if from, to, err := Next(stages, "staging"); err != nil || from != stages[1] || to != stages[2] {
		t.Errorf("staging: %v %v %v", from, to, err)
	}
	if _, _, err := Next(stages, "prod/shop"); err == nil || !strings.Contains(err.Error(), "last") {
		t.Errorf("the last stage: %v", err)
	}
	if _, _, err := Next(stages, "shop"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("an ambiguous app name: %v", err)
	}
	// a namespace holding two stages names neither
	team := []Stage{{"team", "shop-dev"}, {"team", "shop-staging"}, {"prod", "shop"}}
	if _, _, err := Next(team, "team"); !inputerr.Is(err) || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("a namespace of two stages: %v", err)
	}
	if from, to, err := Next(team, "shop-staging"); err != nil || from != team[1] || to != team[2] {
		t.Errorf("an app name of one stage: %v %v %v", from, to, err)
	}
	if _, _, err := Next(stages, "qa"); err == nil || !inputerr.Is(err) {
		t.Errorf("no such stage: %v", err)
	}
	if err := ValidatePipeline("shop", stages[:1]); err == nil {
		t.Error("a pipeline of one stage")
	}
	if err := ValidatePipeline("Shop!", stages); err == nil {
		t.Error("a bad pipeline name")
	}
	if err := ValidatePipeline("shop", []Stage{stages[0], stages[0]}); err == nil {
		t.Error("a stage twice")
	}
	d := func(n string) string { return "r@sha256:" + strings.Repeat(n, 64) }
	rels := []*app.Release{
		{Version: 1, ImageID: d("a")}, {Version: 2, ImageID: d("b")}, {Version: 3, ImageID: d("b")},
		{Version: 4, ImageID: d("c")}, {Version: 5, ImageID: d("d"), Status: app.StatusFailed},
	}
	for _, tc := range []struct {
		digest string
		want   int
	}{{"sha256:" + strings.Repeat("c", 64), 0}, {"sha256:" + strings.Repeat("b", 64), 1}, {"sha256:" + strings.Repeat("a", 64), 2}, {"sha256:" + strings.Repeat("e", 64), -1}, {"", -1}} {
		if got := behind(rels, 4, tc.digest); got != tc.want {
			t.Errorf("behind %s: %d, want %d", tc.digest, got, tc.want)
		}
	}
}
