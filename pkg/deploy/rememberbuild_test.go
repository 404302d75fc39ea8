package deploy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/lock"
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

// A roll that stops before it takes the lock (here: held by another
// command, no waiting) cannot remember the build's settings, and its error
// says so: the user passes them again.
func TestRollThatCannotLockSaysTheBuildIsNotRemembered(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	ctx := context.Background()
	held, err := lock.Acquire(ctx, lock.Request{Client: c, Namespace: ns, App: "shop", Holder: lock.Holder{User: "bob", PID: 7, Host: "ci"}})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	want := &app.BuildSettings{Builder: "reg/builder:1", Repository: "reg/shop"}
	change := DeployChange("reg/shop@sha256:"+sha64, map[string]string{"web": "./server"}, "")
	_, err = Roll(ctx, deps(c), "shop", change, Options{NoWait: true, RememberBuild: want})
	var locked *lock.HeldError
	if !errors.As(err, &locked) || !strings.Contains(err.Error(), "build settings not remembered: pass them again") {
		t.Fatalf("Roll with the lock held = %v, want the lock's error saying the build settings are not remembered", err)
	}
	if got := getApp(t, s, "shop").Build; got != nil {
		t.Errorf("remembered %+v without the lock", got)
	}
	// without build settings to remember, the error is the lock's alone
	_, err = Roll(ctx, deps(c), "shop", change, Options{NoWait: true})
	if err == nil || strings.Contains(err.Error(), "remembered") {
		t.Errorf("Roll without build settings = %v", err)
	}
}
