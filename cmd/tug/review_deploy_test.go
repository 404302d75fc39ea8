package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReviewDeployIsAppDeploy: review up deploys the review app through
// app deploy's options, set as 'tug app deploy NAME --yes ...' sets them
// (it once parsed those words in process): the same defaults, the same
// checks, the source packed with its Procfile.
func TestReviewDeployIsAppDeploy(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "Procfile"), []byte("web: ./serve\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	f, _, _ := noClusterFactory(t)
	for _, c := range []struct {
		name string
		r    reviewDeploy
		argv []string
	}{
		{"source", reviewDeploy{Message: "review pr-1 of shop", Source: src, Timeout: 2 * time.Minute, WaitLock: time.Minute},
			[]string{"shop-pr-1", "--yes", "-m", "review pr-1 of shop", "--source", src, "--timeout", "2m", "--wait-lock", "1m"}},
		{"image", reviewDeploy{Message: "m", Image: "shop:2", Source: ".", NoWait: true},
			[]string{"shop-pr-1", "--yes", "-m", "m", "--image", "shop:2", "--no-wait"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.r.options(f, "shop-pr-1")
			if err != nil {
				t.Fatal(err)
			}
			want, err := parseCmd(t, newAppDeployCmd, c.argv...)
			if err != nil {
				t.Fatal(err)
			}
			if got.App != want.App || got.Yes != want.Yes || got.Message != want.Message || got.Image != want.Image ||
				got.Procfile != want.Procfile || got.procs.From != want.procs.From || len(got.procs.Set) != len(want.procs.Set) ||
				got.build.active != want.build.active || got.build.Source != want.build.Source || got.build.autoProcfile != want.build.autoProcfile ||
				got.rollout.Timeout != want.rollout.Timeout || got.rollout.NoWait != want.rollout.NoWait || got.rollout.Output != want.rollout.Output ||
				got.Changer.WaitLock != want.Changer.WaitLock || got.canary.Strategy != want.canary.Strategy || (got.canaryOpts == nil) != (want.canaryOpts == nil) {
				t.Errorf("review deploy options\n%+v\nwant app deploy's\n%+v", got, want)
			}
		})
	}
	// bad input is refused as app deploy refuses it
	if _, err := (reviewDeploy{Source: filepath.Join(src, "missing")}).options(f, "shop-pr-1"); err == nil {
		t.Error("a missing source folder was accepted")
	}
}
