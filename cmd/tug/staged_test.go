package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cli/clitest"
)

// stagedFixture is shop (v2 runs) with v4 staged by env set --no-restart:
// NEW set, PORT changed, DATABASE_URL unset.
func stagedFixture(t *testing.T) *printerFixture {
	p := shopFixture(t)
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 4, Image: "registry.example/shop:2", Kind: app.KindEnv,
		Status: app.StatusStaged, Author: "bob", CreatedAt: p.ago("v4-created", 5*time.Minute+30*time.Second),
		Processes: map[string]string{"web": "./server --port $PORT", "worker": "./work", "clock": ""}},
		app.ConfigMap{"PORT": "9090", "NEW": "x"})
	if _, err := p.store.UpdateApp(t.Context(), "shop", func(a *app.App) error { a.LastRelease = 4; return nil }); err != nil {
		t.Fatal(err)
	}
	return p
}

// env get marks staged keys (and -o json says how each is staged) and says
// what applies them; before, a staged key was listed like a live one.
func TestEnvGetMarksStagedKeys(t *testing.T) {
	p := stagedFixture(t)
	for _, form := range []string{"tty", "json"} {
		t.Run(form, func(t *testing.T) {
			args := []string{"env", "get", "shop"}
			if form != "tty" {
				args = append(args, "-o", form)
			}
			r := p.run(t, form == "tty", args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			clitest.Golden(t, "env-get-staged-"+form, []byte(r.stdout))
			clitest.Golden(t, "env-get-staged-stderr", []byte(r.stderr))
		})
	}
}

// app restart says it did not apply staged config.
func TestAppRestartSaysStagedConfigIsNotApplied(t *testing.T) {
	fixture := func(t *testing.T, staged bool) *printerFixture {
		p := newPrinterFixture(t)
		last := 1
		if staged {
			last = 2
		}
		p.mustCreateApp(t, &app.App{Name: "cart", Release: 1, LastRelease: last, Image: "registry.example/cart:1",
			Processes: map[string]app.Process{"web": {Replicas: 1}}})
		p.mustCreateRelease(t, &app.Release{App: "cart", Version: 1, Image: "registry.example/cart:1", Kind: app.KindDeploy,
			Status: app.StatusDeployed, Processes: map[string]string{"web": ""}}, app.ConfigMap{"A": "1"})
		if staged {
			p.mustCreateRelease(t, &app.Release{App: "cart", Version: 2, Image: "registry.example/cart:1", Kind: app.KindEnv,
				Status: app.StatusStaged, Processes: map[string]string{"web": ""}}, app.ConfigMap{"A": "1", "K": "V"})
		}
		return p
	}
	restart := func(p *printerFixture) string {
		ios, _, _, errOut := cli.TestIOStreams()
		o := &appLifecycleOptions{Changer: fixtureChanger(p, ios), Store: fixtureStore(p), CommandName: "tug",
			Verb: "restart", App: "cart", Now: time.Now, Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable}}
		if err := runAppLifecycle(context.Background(), o); err != nil {
			t.Fatalf("restart: %v\n%s", err, errOut)
		}
		return errOut.String()
	}
	if got := restart(fixture(t, true)); !strings.Contains(got, "note: the restart brought back the same release; it did not apply config staged in v2 with --no-restart (+K): the units run v1's config without it") {
		t.Errorf("stderr does not say the staged config is not applied:\n%s", got)
	}
	if got := restart(fixture(t, false)); strings.Contains(got, "staged") {
		t.Errorf("restart with nothing staged: %s", got)
	}
}
