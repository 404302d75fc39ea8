package deploy

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// A build of unchanged source makes the image that runs: with
// SkipUnchanged no release is made and the result is the running release;
// anything else that differs (the image, a process type, a staged config
// change, a unit count) still makes one.
func TestSkipUnchangedMakesNoReleaseForTheRunningImage(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	ctx := context.Background()
	built := &app.BuiltWith{Builder: "reg/cnb@sha256:1", Buildpacks: []string{"tug.test/shell@0.1.0"}}
	procs := map[string]string{"web": "/cnb/process/web", "worker": "/cnb/process/worker"}
	deployBuild := func(image string, procs map[string]string) *Result {
		t.Helper()
		res, err := Roll(ctx, deps(c), "shop", WithBuiltWith(DeployChange(image, procs, ""), built), Options{NoWait: true, SkipUnchanged: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	releases := func() int {
		t.Helper()
		rels, err := s.ListReleases(ctx, "shop")
		if err != nil {
			t.Fatal(err)
		}
		return len(rels)
	}

	if res := deployBuild("reg/shop@sha256:a", procs); res.Unchanged || res.Release != 1 {
		t.Fatalf("first deploy: release v%d, unchanged %v", res.Release, res.Unchanged)
	}
	res := deployBuild("reg/shop@sha256:a", procs)
	if !res.Unchanged || res.Release != 1 || res.Status != app.StatusDeployed || len(res.Processes) != 2 || releases() != 1 {
		t.Fatalf("the same image again: %+v, %d releases; want v1 unchanged and no new release", res, releases())
	}

	// units of another release run (a failed deploy with --no-rollback
	// left them): the deploy rolls the image out again
	web, err := c.AppsV1().Deployments(ns).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web.Spec.Template.Labels[kube.LabelRelease] = "9"
	if _, err := c.AppsV1().Deployments(ns).Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := deployBuild("reg/shop@sha256:a", procs); res.Unchanged || res.Release != 2 {
		t.Fatalf("the same image while other units run: v%d unchanged %v; want a release", res.Release, res.Unchanged)
	}

	// another image, another process list: releases
	if res := deployBuild("reg/shop@sha256:b", procs); res.Unchanged || res.Release != 3 {
		t.Errorf("a new image: v%d unchanged %v", res.Release, res.Unchanged)
	}
	if res := deployBuild("reg/shop@sha256:b", map[string]string{"web": "/cnb/process/web"}); res.Unchanged || res.Release != 4 {
		t.Errorf("a process type fewer: v%d unchanged %v", res.Release, res.Unchanged)
	}
	// a config change stored for the next deploy: the deploy applies it
	if _, err := Roll(ctx, deps(c), "shop", EnvChange(app.ConfigMap{"A": "1"}, nil, ""), Options{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	if res := deployBuild("reg/shop@sha256:b", map[string]string{"web": "/cnb/process/web"}); res.Unchanged || res.Release != 6 {
		t.Errorf("after a staged config change: v%d unchanged %v", res.Release, res.Unchanged)
	}
	// without SkipUnchanged (an --image deploy) the same image is a release
	if res, err := Roll(ctx, deps(c), "shop", DeployChange("reg/shop@sha256:b", map[string]string{"web": "/cnb/process/web"}, ""), Options{NoWait: true}); err != nil || res.Unchanged || res.Release != 7 {
		t.Errorf("an image deploy of the running image: %+v, %v; want release v7", res, err)
	}
}

func TestSameRunIgnoresWhatDescribesARelease(t *testing.T) {
	a := &app.Release{App: "shop", Version: 1, Image: "i@sha256:1", ImageID: "i@sha256:1", Kind: app.KindDeploy, Message: "one",
		Processes: map[string]string{"web": "w"}, Status: app.StatusDeployed, ConfigKeys: []string{"A"}}
	b := &app.Release{App: "shop", Version: 2, Image: "i@sha256:1", Kind: app.KindDeploy, Message: "two",
		Processes: map[string]string{"web": "w"}, Status: app.StatusPending}
	if !sameRun(a, b) {
		t.Error("releases differing only in number, message, status and image ID: not the same run")
	}
	for name, change := range map[string]func(r *app.Release){
		"image":           func(r *app.Release) { r.Image = "i@sha256:2" },
		"command":         func(r *app.Release) { r.Processes["web"] = "other" },
		"release command": func(r *app.Release) { r.ReleaseCommand = "./migrate" },
		"limits":          func(r *app.Release) { r.Limits = map[string]app.Limits{"web": {Memory: "1Gi"}} },
		"pool":            func(r *app.Release) { r.Pool = "east" },
		"built with":      func(r *app.Release) { r.BuiltWith = &app.BuiltWith{Builder: "x"} },
	} {
		c := *b
		c.Processes = map[string]string{"web": "w"}
		change(&c)
		if sameRun(a, &c) {
			t.Errorf("releases differing in %s: the same run", name)
		}
	}
}
