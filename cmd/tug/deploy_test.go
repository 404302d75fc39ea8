package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func TestNewAppDeployCmd(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "Procfile"), []byte("web: ./serve\nworker: ./work\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // no Procfile here
	tests := []struct {
		name    string
		argv    []string
		check   func(*testing.T, *appDeployOptions)
		wantErr string
	}{
		{name: "an image", argv: []string{"shop", "--image", "shop:1.4", "--process", "web=shop serve", "-m", "new front page"},
			check: func(t *testing.T, o *appDeployOptions) {
				if o.Image != "shop:1.4" || o.Message != "new front page" || o.procs.Set["web"] != "shop serve" || o.build.active {
					t.Errorf("options %+v", o)
				}
			}},
		{name: "from source", argv: []string{"shop", "--source", src, "--builder", "b:1", "--repository", "reg/shop"},
			check: func(t *testing.T, o *appDeployOptions) {
				if !o.build.active || o.build.packed == nil || o.Procfile != filepath.Join(src, "Procfile") || len(o.procs.Set) != 2 {
					t.Errorf("build %+v, procfile %q, processes %+v", o.build, o.Procfile, o.procs)
				}
			}},
		{name: "canary", argv: []string{"shop", "--image", "shop:2", "--strategy", "canary", "--canary", "10%"},
			check: func(t *testing.T, o *appDeployOptions) {
				if o.canaryOpts == nil {
					t.Error("no canary options")
				}
			}},
		{name: "bad image", argv: []string{"shop", "--image", "Shop Image"}, wantErr: "Shop Image"},
		{name: "bad process", argv: []string{"shop", "--image", "shop:1", "--process", "web"}, wantErr: "web"},
		{name: "canary without waiting", argv: []string{"shop", "--image", "shop:2", "--strategy", "canary", "--canary", "10%", "--no-wait"}, wantErr: "--no-wait and --no-rollback do not apply"},
		{name: "spaces in a build flag", argv: []string{"shop", "--source", src, "--builder", "my builder"}, wantErr: `invalid --builder "my builder"`},
		{name: "build args without a Dockerfile", argv: []string{"shop", "--source", src, "--build-arg", "A=1"}, wantErr: "need a Dockerfile"},
		{name: "negative build timeout", argv: []string{"shop", "--source", src, "--build-timeout", "-1m"}, wantErr: "--build-timeout must be positive"},
		{name: "bad app", argv: []string{"Shop", "--image", "shop:1"}, wantErr: `"Shop"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newAppDeployCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.App != "shop" {
				t.Fatalf("error %v, options %+v", err, o)
			}
			tt.check(t, o)
		})
	}
}

// A deploy that would remove a process type running units asks first: off
// a terminal it needs --yes, and nothing changes; with it, the new release
// runs without the type.
func TestRunAppDeployRemovesAProcessOnlyWithYes(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Release: 1, LastRelease: 1, Image: "shop:1",
		Processes: map[string]app.Process{"web": {Replicas: 1}, "worker": {Replicas: 2}}})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 1, Image: "shop:1", Kind: app.KindDeploy, Status: app.StatusDeployed,
		Processes: map[string]string{"web": "./serve", "worker": "./work"}}, nil)
	ctx := context.Background()
	deployWith := func(yes bool) (*appDeployOptions, string, error) {
		ios, _, _, errOut := cli.TestIOStreams()
		o, err := parseCmd(t, newAppDeployCmd, "shop", "--image", "shop:2", "--remove-process", "worker", "--no-wait")
		if err != nil {
			t.Fatal(err)
		}
		o.Changer, o.Store, o.Prompter, o.Yes = fixtureChanger(p, ios), fixtureStore(p), func() cli.Prompter { return nil }, yes
		return o, errOut.String(), runAppDeploy(ctx, o)
	}
	if _, _, err := deployWith(false); err == nil || !strings.Contains(err.Error(), "remove process worker (2 units) of app \"shop\"") {
		t.Fatalf("without --yes: %v", err)
	}
	if a, _ := p.store.GetApp(ctx, "shop"); a.Release != 1 {
		t.Errorf("refused, yet release v%d", a.Release)
	}
	if _, stderr, err := deployWith(true); err != nil {
		t.Fatalf("--yes: %v; stderr %q", err, stderr)
	}
	a, err := p.store.GetApp(ctx, "shop")
	if err != nil || a.Release != 2 || a.Image != "shop:2" {
		t.Fatalf("after --yes: %+v, %v", a, err)
	}
	if _, ok := a.Processes["worker"]; ok {
		t.Errorf("worker still in %v", a.ProcessNames())
	}
}
