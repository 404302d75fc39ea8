package deploy

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
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

	// rolledOut plays the Deployment controller: every unit ready
	rolledOut := func() {
		t.Helper()
		list, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range list.Items {
			n := *d.Spec.Replicas
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, AvailableReplicas: n}
			if _, err := c.AppsV1().Deployments(ns).UpdateStatus(ctx, &d, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := func(what string, res *Result, release int, unchanged bool) {
		t.Helper()
		if res.Release != release || res.Unchanged != unchanged {
			t.Fatalf("%s: release v%d, unchanged %v; want v%d, unchanged %v", what, res.Release, res.Unchanged, release, unchanged)
		}
	}

	want("first deploy", deployBuild("reg/shop@sha256:a", procs), 1, false)
	// its units never got ready (a --no-wait deploy): a release
	want("the same image, units not ready", deployBuild("reg/shop@sha256:a", procs), 2, false)
	rolledOut()
	res := deployBuild("reg/shop@sha256:a", procs)
	if !res.Unchanged || res.Release != 2 || res.Status != app.StatusDeployed || len(res.Processes) != 2 || releases() != 2 {
		t.Fatalf("the same image again: %+v, %d releases; want v2 unchanged and no new release", res, releases())
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
	rolledOut()
	want("the same image while other units run", deployBuild("reg/shop@sha256:a", procs), 3, false)

	// another image, another process list: releases
	rolledOut()
	want("a new image", deployBuild("reg/shop@sha256:b", procs), 4, false)
	rolledOut()
	web1 := map[string]string{"web": "/cnb/process/web"}
	want("a process type fewer", deployBuild("reg/shop@sha256:b", web1), 5, false)
	// a config change stored for the next deploy: the deploy applies it
	if _, err := Roll(ctx, deps(c), "shop", EnvChange(app.ConfigMap{"A": "1"}, nil, ""), Options{NoRestart: true}); err != nil {
		t.Fatal(err)
	}
	rolledOut()
	want("after a staged config change", deployBuild("reg/shop@sha256:b", web1), 7, false)
	// without SkipUnchanged (an --image deploy) the same image is a release
	rolledOut()
	res, err = Roll(ctx, deps(c), "shop", DeployChange("reg/shop@sha256:b", web1, ""), Options{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	want("an image deploy of the running image", res, 8, false)

	// a release phase runs with each release: the same build makes one
	// (here it cannot run: no runner), unless the deploy skips the phase
	phased := func(skip bool) (*Result, error) {
		change := WithReleaseCommand(WithBuiltWith(DeployChange("reg/shop@sha256:b", web1, ""), built), "./migrate")
		return Roll(ctx, deps(c), "shop", change, Options{NoWait: true, SkipUnchanged: true, SkipReleasePhase: skip})
	}
	rolledOut()
	if res, err := phased(true); err != nil || res.Release != 9 {
		t.Fatalf("a release with a release phase: %+v %v", res, err)
	}
	rolledOut()
	if _, err := phased(false); err == nil || !strings.Contains(err.Error(), "release-phase") {
		t.Errorf("the same build with a release phase to run: %v; want a release (its phase cannot run here)", err)
	}
	if res, err := phased(true); err != nil || !res.Unchanged || res.Release != 9 {
		t.Errorf("the same build, release phase skipped: %+v %v; want v9 unchanged", res, err)
	}
}
