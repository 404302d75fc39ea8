package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/kube/kubetest"
)

// dryRunResult is the part of a rollout's -o json result a dry run fills.
type dryRunResult struct {
	App          string   `json:"app"`
	Release      int      `json:"release"`
	Status       string   `json:"status"`
	Image        string   `json:"image"`
	Plan         []string `json:"plan"`
	Staged       bool     `json:"staged"`
	ReleasePhase *struct {
		Command string `json:"command"`
		Status  string `json:"status"`
	} `json:"releasePhase"`
}

// secretValues are the config values the dry-run fixtures hold or set; no
// output may show one.
var secretValues = []string{"red-s3cret", "blue-s3cret", "tok-s3cret"}

// dryRunFixture is phaseFixture(0) with secret-looking config values: app
// shop at v1 (shop:1, web ./serve x2, release command ./migrate, COLOR).
// With v2, a v2 (shop:2, COLOR changed) runs and v1 is superseded.
func dryRunFixture(t *testing.T, v2 bool) *printerFixture {
	t.Helper()
	p := newPrinterFixture(t)
	rel := 1
	if v2 {
		rel = 2
	}
	p.mustCreateApp(t, &app.App{Name: "shop", Release: rel, LastRelease: rel, Image: "shop:1", CreatedAt: p.ago("created", time.Hour),
		Processes: map[string]app.Process{"web": {Replicas: 2}}})
	st := app.StatusDeployed
	if v2 {
		st = app.StatusSuperseded
	}
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 1, Image: "shop:1", Kind: app.KindDeploy, Status: st,
		Processes: map[string]string{"web": "./serve"}, ReleaseCommand: "./migrate", CreatedAt: p.ago("v1", 30*time.Minute)},
		app.ConfigMap{"COLOR": "red-s3cret"})
	if v2 {
		p.mustCreateRelease(t, &app.Release{App: "shop", Version: 2, Image: "shop:2", Kind: app.KindDeploy, Status: app.StatusDeployed,
			Processes: map[string]string{"web": "./serve"}, CreatedAt: p.ago("v2", 20*time.Minute)},
			app.ConfigMap{"COLOR": "blue-s3cret"})
	}
	return p
}

// runDry runs a dry run and checks what every dry run owes: exit 0,
// nothing in the cluster changed, no config value in its output, and no
// line that reads as a change made.
func runDry(t *testing.T, p *printerFixture, args ...string) result {
	t.Helper()
	before := kubetest.Objects(t, p.cs, "dev")
	r := p.run(t, false, args...)
	if r.code != 0 {
		t.Fatalf("%q: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
	}
	if d := kubetest.Diff(before, kubetest.Objects(t, p.cs, "dev")); len(d) > 0 {
		t.Errorf("%q changed the cluster: %q", args, d)
	}
	for _, v := range secretValues {
		if strings.Contains(r.stdout+r.stderr, v) {
			t.Errorf("%q shows the config value %q:\nstdout:\n%s\nstderr:\n%s", args, v, r.stdout, r.stderr)
		}
	}
	done := regexp.MustCompile(`(?m)\b(config set|config unset|rolled back|deployed|is running|stored;)`)
	if m := done.FindString(r.stderr); m != "" {
		t.Errorf("%q printed %q, which reads as a change made; stderr:\n%s", args, m, r.stderr)
	}
	if !strings.Contains(r.stderr, "nothing changed") {
		t.Errorf("%q: stderr does not say nothing changed:\n%s", args, r.stderr)
	}
	return r
}

func decodeDry(t *testing.T, r result, yamlOut bool) dryRunResult {
	t.Helper()
	var res dryRunResult
	var err error
	if yamlOut {
		err = yaml.Unmarshal([]byte(r.stdout), &res)
	} else {
		err = json.Unmarshal([]byte(r.stdout), &res)
	}
	if err != nil {
		t.Fatalf("stdout is not one result: %v\n%s", err, r.stdout)
	}
	if res.Status != "dry-run" {
		t.Errorf("status %q, want dry-run:\n%s", res.Status, r.stdout)
	}
	return res
}

func TestEnvDryRunCommands(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		plan []string
	}{
		{"set", []string{"env", "set", "shop", "COLOR=blue-s3cret", "TOKEN=tok-s3cret"},
			[]string{`release phase: "./migrate" would run once in a one-off unit of v2 before anything rolls out`, "web: 2 units restart", "env: ~COLOR, +TOKEN (values hidden)"}},
		{"unset", []string{"env", "unset", "shop", "COLOR"},
			[]string{`release phase: "./migrate" would run once in a one-off unit of v2 before anything rolls out`, "web: 2 units restart", "env: -COLOR (values hidden)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := dryRunFixture(t, false)
			r := runDry(t, p, append(c.args, "--dry-run")...)
			want := "dry run: release v2 of shop would change:\n  " + strings.Join(c.plan, "\n  ") + "\n"
			if r.stdout != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
			}
			if !strings.Contains(r.stderr, "dry run of v2 passed server-side validation; nothing changed") {
				t.Errorf("stderr:\n%s", r.stderr)
			}
			for _, form := range []string{"json", "yaml"} {
				r := runDry(t, p, append(c.args, "--dry-run", "-o", form)...)
				res := decodeDry(t, r, form == "yaml")
				if res.Release != 2 || res.Staged || strings.Join(res.Plan, "\n") != strings.Join(c.plan, "\n") ||
					res.ReleasePhase == nil || res.ReleasePhase.Status != "planned" {
					t.Errorf("-o %s:\n%s", form, r.stdout)
				}
			}
		})
	}
}

// A change that would only be stored says so and applies nothing.
func TestEnvDryRunStagedCommands(t *testing.T) {
	t.Run("no-restart", func(t *testing.T) {
		p := dryRunFixture(t, false)
		r := runDry(t, p, "env", "set", "shop", "TOKEN=tok-s3cret", "--no-restart", "--dry-run")
		want := "dry run: release v2 of shop would change:\n" +
			"  release v2 would be stored; it applies at the next deploy (--no-restart: no unit restarts)\n" +
			"  env: +TOKEN (values hidden)\n"
		if r.stdout != want {
			t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
		}
		res := decodeDry(t, runDry(t, p, "env", "unset", "shop", "COLOR", "--no-restart", "--dry-run", "-o", "json"), false)
		if !res.Staged || len(res.Plan) != 2 || res.Plan[1] != "env: -COLOR (values hidden)" || res.ReleasePhase != nil {
			t.Errorf("unset --no-restart -o json: %+v", res)
		}
	})
	t.Run("never deployed", func(t *testing.T) {
		p := newPrinterFixture(t)
		p.mustCreateApp(t, &app.App{Name: "shop", CreatedAt: p.ago("created", time.Hour)})
		r := runDry(t, p, "env", "set", "shop", "TOKEN=tok-s3cret", "--dry-run")
		want := "dry run: release v1 of shop would change:\n" +
			"  release v1 would be stored; it applies at the next deploy (the app has no image yet)\n" +
			"  env: +TOKEN (values hidden)\n"
		if r.stdout != want {
			t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
		}
		res := decodeDry(t, runDry(t, p, "env", "set", "shop", "TOKEN=tok-s3cret", "--dry-run", "-o", "json"), false)
		if !res.Staged || res.Release != 1 || res.Image != "" {
			t.Errorf("-o json: %+v", res)
		}
	})
}

func TestRollbackDryRunCommand(t *testing.T) {
	p := dryRunFixture(t, true)
	plan := []string{
		`release phase: "./migrate" would run once in a one-off unit of v3 before anything rolls out`,
		"web: image shop:2 -> shop:1, 2 units restart",
		"env: ~COLOR (values hidden)",
	}
	r := runDry(t, p, "release", "rollback", "shop", "--dry-run")
	want := "dry run: release v3 of shop would change:\n  " + strings.Join(plan, "\n  ") + "\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	res := decodeDry(t, runDry(t, p, "release", "rollback", "shop", "v1", "--dry-run", "--skip-release-phase", "-o", "json"), false)
	if res.Release != 3 || res.Image != "shop:1" || res.ReleasePhase == nil || res.ReleasePhase.Status != "skipped" ||
		len(res.Plan) != 3 || !strings.HasSuffix(res.Plan[0], "skipped (--skip-release-phase)") {
		t.Errorf("-o json: %+v", res)
	}
	// a rollback the change itself refuses fails as it would for real
	r = p.run(t, false, "release", "rollback", "shop", "v2", "--dry-run")
	if r.code == 0 || !strings.Contains(r.stderr, "v2 is already the deployed release") {
		t.Errorf("rollback to the running release: exit %d\n%s", r.code, r.stderr)
	}
}

// --dry-run with --no-wait is a usage error on every command that has
// both, before anything is asked of the cluster.
func TestDryRunNoWaitRefused(t *testing.T) {
	p := dryRunFixture(t, true)
	for _, args := range [][]string{
		{"app", "deploy", "shop", "--image", "shop:3"},
		{"env", "set", "shop", "A=1"},
		{"env", "unset", "shop", "COLOR"},
		{"release", "rollback", "shop"},
		{"app", "pool", "set", "shop", "gpu"},
	} {
		p.cs.ClearActions()
		r := p.run(t, false, append(args, "--dry-run", "--no-wait")...)
		if r.code != 2 || !strings.Contains(r.stderr, "--dry-run and --no-wait cannot be used together") {
			t.Errorf("%q: exit %d, stderr:\n%s", args, r.code, r.stderr)
		}
		if a := p.cs.Actions(); len(a) > 0 {
			t.Errorf("%q asked the cluster %d times first, e.g. %s %s", args, len(a), a[0].GetVerb(), a[0].GetResource().Resource)
		}
	}
}

// --dry-run is one flag, with one meaning, on the commands that make a
// release through deploy.Roll.
func TestDryRunFlagShared(t *testing.T) {
	ios, _, _, _ := cli.TestIOStreams()
	root := newRootCmd(cli.NewFactory(ios, "tug"))
	for _, path := range [][]string{{"app", "deploy"}, {"env", "set"}, {"env", "unset"}, {"release", "rollback"}} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		fl := cmd.Flags().Lookup("dry-run")
		if fl == nil || fl.Usage != dryRunUsage {
			t.Errorf("%q: --dry-run = %+v", path, fl)
		}
		if !strings.Contains(cmd.Example, "--dry-run") {
			t.Errorf("%q: no example with --dry-run", path)
		}
	}
}
