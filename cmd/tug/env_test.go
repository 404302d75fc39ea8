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

func TestNewEnvSetCmd(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prod.env")
	if err := os.WriteFile(file, []byte("DB=postgres://db\n# a comment\nLOG=info\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		argv    []string
		want    string // the keys set, sorted
		check   func(*testing.T, *envSetOptions)
		wantErr string
	}{
		{name: "pairs", argv: []string{"shop", "LOG_LEVEL=debug", "A=1"}, want: "A LOG_LEVEL"},
		{name: "env file", argv: []string{"shop", "--from-env-file", file, "-m", "prod values", "--no-restart"}, want: "DB LOG",
			check: func(t *testing.T, o *envSetOptions) {
				if o.Message != "prod values" || !o.options().NoRestart || o.Set["DB"] != "postgres://db" {
					t.Errorf("options %+v", o)
				}
			}},
		{name: "dry run", argv: []string{"shop", "A=1", "--dry-run", "--skip-release-phase"}, want: "A",
			check: func(t *testing.T, o *envSetOptions) {
				if opts := o.options(); !opts.DryRun || !opts.SkipReleasePhase {
					t.Errorf("deploy options %+v", opts)
				}
			}},
		{name: "no value", argv: []string{"shop", "LOG_LEVEL"}, wantErr: "LOG_LEVEL"},
		{name: "tug's own", argv: []string{"shop", "TUG_APP=x"}, wantErr: "TUG_APP"},
		{name: "bad port", argv: []string{"shop", "PORT=http"}, wantErr: "PORT"},
		{name: "dry run without waiting", argv: []string{"shop", "A=1", "--dry-run", "--no-wait"}, wantErr: "--dry-run and --no-wait"},
		{name: "bad app", argv: []string{"Shop", "A=1"}, wantErr: `"Shop"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newEnvSetCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.App != "shop" || strings.Join(o.Set.Keys(), " ") != tt.want {
				t.Fatalf("error %v, options %+v", err, o)
			}
			if tt.check != nil {
				tt.check(t, o)
			}
		})
	}
}

func TestNewEnvUnsetCmd(t *testing.T) {
	o, err := parseCmd(t, newEnvUnsetCmd, "shop", "LOG_LEVEL", "DEBUG", "-m", "quieter")
	if err != nil || o == nil || o.App != "shop" || strings.Join(o.Unset, " ") != "LOG_LEVEL DEBUG" || o.Message != "quieter" {
		t.Fatalf("error %v, options %+v", err, o)
	}
	for _, c := range []struct{ argv, want string }{{"shop", "missing KEY"}, {"shop TUG_RELEASE", "TUG_RELEASE"}} {
		o, err := parseCmd(t, newEnvUnsetCmd, strings.Fields(c.argv)...)
		wantParseError(t, o, err, c.want)
	}
}

func TestNewEnvGetCmd(t *testing.T) {
	o, err := parseCmd(t, newEnvGetCmd, "shop", "DB", "--show-values")
	if err != nil || o == nil || o.App != "shop" || o.Key != "DB" || !o.KeyGiven || !o.Show {
		t.Fatalf("error %v, options %+v", err, o)
	}
	o, err = parseCmd(t, newEnvGetCmd, "shop", "")
	if err != nil || o == nil || !o.KeyGiven {
		t.Fatalf("an empty KEY is a key asked for: error %v, options %+v", err, o)
	}
	o, err = parseCmd(t, newEnvGetCmd, "shop", "A", "B")
	wantParseError(t, o, err, `unexpected argument "B"`)
}

// env set makes a release with the new config, env get lists its names and
// shows a value only when asked, env unset removes it.
func TestRunEnvSetGetUnset(t *testing.T) {
	p := phaseFixture(t, 0)
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	set := &envSetOptions{Changer: fixtureChanger(p, ios), App: "shop", Set: app.ConfigMap{"LOG": "debug"},
		SkipReleasePhase: true, rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable}}
	if err := runEnvSet(ctx, set); err != nil {
		t.Fatalf("%v; stderr %q", err, errOut)
	}
	get := &envGetOptions{IO: ios, Store: fixtureStore(p), CommandName: "tug", App: "shop", Output: cli.OutputOptions{Format: cli.OutputTable}}
	out.Reset()
	if err := runEnvGet(ctx, get); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "COLOR\t(hidden: --show-values)") || !strings.Contains(out.String(), "LOG\t(hidden") {
		t.Errorf("env get:\n%s", out)
	}
	get.Key, get.KeyGiven, get.Show = "LOG", true, true
	out.Reset()
	if err := runEnvGet(ctx, get); err != nil || out.String() != "debug\n" {
		t.Errorf("env get LOG --show-values: %v, %q", err, out)
	}
	get.Show = false
	errOut.Reset()
	if err := runEnvGet(ctx, get); err != nil || !strings.Contains(errOut.String(), "print it with 'tug env get shop LOG --show-values'") {
		t.Errorf("env get LOG: %v, stderr %q", err, errOut)
	}
	unset := &envSetOptions{Changer: fixtureChanger(p, ios), App: "shop", Unset: []string{"LOG"},
		SkipReleasePhase: true, rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable}}
	if err := runEnvUnset(ctx, unset); err != nil {
		t.Fatal(err)
	}
	if err := runEnvGet(ctx, get); err == nil || err.Error() != `config "LOG" is not set on app "shop"` {
		t.Errorf("env get LOG after unset: %v", err)
	}
}
