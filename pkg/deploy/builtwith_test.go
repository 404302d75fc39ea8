package deploy

import (
	"context"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
)

// What built a release's image travels with that image: a config change
// and a rollback to it keep it, a deploy of another image drops it, and
// app info shows the deployed release's.
func TestBuiltWithTravelsWithTheImage(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	ctx := context.Background()
	roll := func(change Change) {
		t.Helper()
		if _, err := Roll(ctx, deps(c), "shop", change, Options{NoWait: true}); err != nil {
			t.Fatal(err)
		}
	}
	built := &app.BuiltWith{Builder: "reg/cnb-builder@sha256:1", Buildpacks: []string{"tug.test/shell@0.1.0"}}
	web := map[string]string{"web": "/cnb/process/web"}
	roll(WithBuiltWith(DeployChange("reg/shop@sha256:a", web, ""), built))
	built.Buildpacks[0] = "changed/after@9" // the release keeps its own copy
	roll(EnvChange(app.ConfigMap{"A": "1"}, nil, ""))
	roll(DeployProcesses("reg/other:1", app.ProcessChange{Set: web, Complete: true}, nil, true, ""))
	if info, err := app.GetInfo(ctx, s, "shop"); err != nil || info.BuiltWith != nil {
		t.Errorf("app info of an image deployed as is: built with %+v (%v), want nothing", info.BuiltWith, err)
	}
	roll(RollbackChange(ctx, s, 2))

	want := map[int]string{1: "tug.test/shell@0.1.0", 2: "tug.test/shell@0.1.0", 3: "", 4: "tug.test/shell@0.1.0"}
	for v, bp := range want {
		r, _ := getRelease(t, s, v)
		got := ""
		if r.BuiltWith != nil {
			got = strings.Join(r.BuiltWith.Buildpacks, ",")
			if r.BuiltWith.Builder != "reg/cnb-builder@sha256:1" {
				t.Errorf("v%d: builder %q", v, r.BuiltWith.Builder)
			}
		}
		if got != bp {
			t.Errorf("v%d (%s): buildpacks %q, want %q", v, r.Kind, got, bp)
		}
	}
	info, err := app.GetInfo(ctx, s, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if info.Release != 4 || info.BuiltWith == nil || info.BuiltWith.Buildpacks[0] != "tug.test/shell@0.1.0" {
		t.Errorf("app info of v%d: built with %+v", info.Release, info.BuiltWith)
	}
	if WithBuiltWith(nil, nil) != nil {
		t.Error("WithBuiltWith(change, nil) changed the change")
	}
}
