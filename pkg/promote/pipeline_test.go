package promote

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/lock"
)

func TestParseStage(t *testing.T) {
	for in, want := range map[string]Stage{"prod/shop": {"prod", "shop"}, "shop": {"dev", "shop"}} {
		got, err := ParseStage(in, "dev")
		if err != nil || got != want {
			t.Errorf("ParseStage(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"Prod/shop", "prod/Shop", "prod/", "/shop"} {
		if _, err := ParseStage(bad, "dev"); err == nil {
			t.Errorf("ParseStage(%q) passed", bad)
		}
	}
}

func pipelineCluster(t *testing.T, stages ...Stage) (*fake.Clientset, deploy.Deps) {
	t.Helper()
	c := fake.NewClientset()
	for _, s := range stages {
		if err := (&app.Store{Client: c, Namespace: s.Namespace}).CreateApp(context.Background(), &app.App{Name: s.App, Namespace: s.Namespace}); err != nil {
			t.Fatal(err)
		}
	}
	return c, deploy.Deps{Client: c, Namespace: "dev", Holder: lock.Holder{User: "alice", PID: 1, Host: "laptop"}}
}

func pipelineOf(t *testing.T, c *fake.Clientset, s Stage) *app.Pipeline {
	t.Helper()
	a, err := (&app.Store{Client: c, Namespace: s.Namespace}).GetApp(context.Background(), s.App)
	if err != nil {
		t.Fatal(err)
	}
	return a.Pipeline
}

// set writes the pipeline on every stage's record; set again without a
// stage takes it off that app; find reads it back from any stage's
// namespace; a missing stage writes nothing.
func TestSetAndFindPipeline(t *testing.T) {
	ctx := context.Background()
	dev, staging, prod := Stage{"dev", "shop"}, Stage{"staging", "shop"}, Stage{"prod", "shop"}
	c, d := pipelineCluster(t, dev, staging, prod)
	if _, err := SetPipeline(ctx, d, "shop", []Stage{dev, staging, prod}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Stage{dev, staging, prod} {
		p := pipelineOf(t, c, s)
		if p == nil || p.Name != "shop" || strings.Join(p.Stages, " ") != "dev/shop staging/shop prod/shop" {
			t.Errorf("%s records %+v", s, p)
		}
	}
	found, err := FindPipeline(ctx, c, "prod", "shop")
	if err != nil || len(found) != 3 || found[0] != dev || found[2] != prod {
		t.Errorf("find from prod: %v %v", found, err)
	}
	removed, err := SetPipeline(ctx, d, "shop", []Stage{staging, prod})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(removed, " ") != "dev/shop" {
		t.Errorf("the stages taken off: %v, want dev/shop", removed)
	}
	if p := pipelineOf(t, c, dev); p != nil {
		t.Errorf("dev is no stage any more but records %+v", p)
	}
	if _, err := FindPipeline(ctx, c, "dev", "shop"); !inputerr.Is(err) {
		t.Errorf("find from a namespace with no stage: %v", err)
	}
	_, err = SetPipeline(ctx, d, "other", []Stage{staging, {"qa", "shop"}})
	if !inputerr.Is(err) {
		t.Errorf("a missing stage: %v", err)
	}
	if p := pipelineOf(t, c, staging); p == nil || p.Name != "shop" {
		t.Errorf("a refused set changed staging: %+v", p)
	}
}

// A pipeline set stopped part way leaves the stages' records disagreeing:
// the pipeline is not found as either list (a promote along it could go
// to the wrong app); the error says both and how to settle it.
func TestFindPipelineRefusesRecordsThatDisagree(t *testing.T) {
	ctx := context.Background()
	web, api, prod := Stage{"dev", "web"}, Stage{"dev", "api"}, Stage{"prod", "shop"}
	c, d := pipelineCluster(t, web, api, prod)
	if _, err := SetPipeline(ctx, d, "shop", []Stage{web, prod}); err != nil {
		t.Fatal(err)
	}
	// a second set, killed after api's record
	d.Namespace = "dev"
	if err := update(ctx, d, api, func(a *app.App) error {
		a.Pipeline = &app.Pipeline{Name: "shop", Stages: []string{"dev/api", "prod/shop"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, err := FindPipeline(ctx, c, "dev", "shop")
	if err == nil || inputerr.Is(err) || !strings.Contains(err.Error(), "disagree") || !strings.Contains(err.Error(), "dev/api -> prod/shop") || !strings.Contains(err.Error(), "dev/web -> prod/shop") {
		t.Errorf("records that disagree: %v", err)
	}
}

// The set the refusal advises settles records that disagree: a set of
// [a, b] killed after a's record left b and c naming [a, b, c]; a new set
// [a, d] takes the pipeline off b and c (named by any record), and the
// pipeline is found again.
func TestSetPipelineSettlesRecordsThatDisagree(t *testing.T) {
	ctx := context.Background()
	a, b, c, dd := Stage{"dev", "a"}, Stage{"dev", "b"}, Stage{"dev", "c"}, Stage{"dev", "d"}
	cs, d := pipelineCluster(t, a, b, c, dd)
	if _, err := SetPipeline(ctx, d, "p", []Stage{a, b, c}); err != nil {
		t.Fatal(err)
	}
	if err := update(ctx, d, a, func(x *app.App) error {
		x.Pipeline = &app.Pipeline{Name: "p", Stages: []string{"dev/a", "dev/b"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	removed, err := SetPipeline(ctx, d, "p", []Stage{a, dd})
	if err != nil || strings.Join(removed, " ") != "dev/b dev/c" {
		t.Fatalf("set over records that disagree: removed %v, %v; want dev/b dev/c", removed, err)
	}
	for _, s := range []Stage{b, c} {
		if p := pipelineOf(t, cs, s); p != nil {
			t.Errorf("%s still records %+v", s, p)
		}
	}
	if found, err := FindPipeline(ctx, cs, "dev", "p"); err != nil || len(found) != 2 || found[1] != dd {
		t.Errorf("after the set: %v %v", found, err)
	}
}

// status reads each stage's release, and a stage it cannot read says why
// without hiding the others.
func TestPipelineStatus(t *testing.T) {
	ctx := context.Background()
	staging, prod := Stage{"staging", "shop"}, Stage{"prod", "shop"}
	c, _ := pipelineCluster(t, staging)
	digest := "reg/shop@sha256:" + strings.Repeat("a", 64)
	st := &app.Store{Client: c, Namespace: "staging"}
	if err := st.CreateRelease(ctx, &app.Release{App: "shop", Version: 1, Image: digest, Status: app.StatusDeployed}, app.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateApp(ctx, "shop", func(a *app.App) error { a.Release, a.LastRelease = 1, 1; return nil }); err != nil {
		t.Fatal(err)
	}
	out := Status(ctx, c, []Stage{staging, prod})
	if len(out) != 2 || out[0].Release != 1 || out[0].Error != "" || out[0].Status != app.StatusDeployed {
		t.Fatalf("staging: %+v", out)
	}
	if out[1].Error == "" || !strings.Contains(out[1].Error, "shop") {
		t.Errorf("a stage that is not there: %+v", out[1])
	}
	if out[0].NextBehind == nil || *out[0].NextBehind != -1 || out[1].NextBehind != nil {
		t.Errorf("behind: %v %v", out[0].NextBehind, out[1].NextBehind)
	}
}
