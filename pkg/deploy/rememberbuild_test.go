package deploy

import (
	"context"
	"testing"

	"tug.dev/tug/pkg/app"
)

// The build settings a build from source worked with are written in the
// record inside the deploy's transaction (under the lock), never by a dry
// run.
func TestRollRemembersTheBuildUnderTheLock(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	ctx := context.Background()
	want := &app.BuildSettings{Builder: "reg/builder:1", Repository: "reg/shop"}
	change := DeployChange("reg/shop@sha256:"+sha64, map[string]string{"web": "./server"}, "")
	if _, err := Roll(ctx, deps(c), "shop", change, Options{NoWait: true, DryRun: true, RememberBuild: want}); err != nil {
		t.Fatal(err)
	}
	if got := getApp(t, s, "shop").Build; got != nil {
		t.Fatalf("a dry run remembered %+v", got)
	}
	if _, err := Roll(ctx, deps(c), "shop", change, Options{NoWait: true, RememberBuild: want}); err != nil {
		t.Fatal(err)
	}
	if got := getApp(t, s, "shop").Build; got == nil || !got.Equal(*want) {
		t.Fatalf("remembered %+v, want %+v", got, want)
	}
	assertNoLease(t, c)
}

const sha64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
