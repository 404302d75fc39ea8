package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func TestNewUnitListCmd(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		wantApp string
		all     bool
		wantErr string
	}{
		{name: "an app's", argv: []string{"shop", "-p", "worker", "-o", "wide"}, wantApp: "shop"},
		{name: "runs", argv: []string{"shop", "-p", "run"}, wantApp: "shop"},
		{name: "every app's", argv: []string{"--all", "-o", "json"}, all: true},
		{name: "both", argv: []string{"shop", "--all"}, wantErr: "give an APP or --all, not both"},
		{name: "neither", argv: []string{}, wantErr: "which app?"},
		{name: "a process of every app", argv: []string{"--all", "-p", "web"}, wantErr: "-p needs an APP"},
		{name: "bad format", argv: []string{"shop", "-o", "xml"}, wantErr: "must be one of table, wide"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newUnitListCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.App != tt.wantApp || o.All != tt.all {
				t.Fatalf("error %v, options %+v", err, o)
			}
		})
	}
}

func TestNewUnitAddCmd(t *testing.T) {
	for _, add := range []bool{true, false} {
		newCmd := func(f *cli.Factory, runF func(context.Context, *unitAddOptions) error) *cobra.Command {
			return newUnitAddCmd(f, runF, add)
		}
		o, err := parseCmd(t, newCmd, "shop", "2", "-p", "worker")
		if err != nil || o == nil || o.App != "shop" || o.N != 2 || o.Process != "worker" || (o.Op == '+') != add {
			t.Fatalf("add %v: error %v, options %+v", add, err, o)
		}
		for _, c := range []struct {
			argv []string
			want string
		}{{[]string{"shop", "two"}, "two"}, {[]string{"shop", "1", "-p", "Web"}, "Web"}, {[]string{"shop"}, "missing N"}} {
			o, err := parseCmd(t, newCmd, c.argv...)
			wantParseError(t, o, err, c.want)
		}
	}
}

func TestNewUnitKillCmd(t *testing.T) {
	o, err := parseCmd(t, newUnitKillCmd, "shop", "shop-web-7d9f-b2", "--force")
	if err != nil || o == nil || o.App != "shop" || o.Unit != "shop-web-7d9f-b2" || !o.Force {
		t.Fatalf("error %v, options %+v", err, o)
	}
	o, err = parseCmd(t, newUnitKillCmd, "shop", "Unit_1")
	wantParseError(t, o, err, "Unit_1")
}

func TestNewUnitTopCmd(t *testing.T) {
	o, err := parseCmd(t, newUnitTopCmd, "shop", "-p", "worker", "--sort", "memory", "--once", "--interval", "2s")
	if err != nil || o == nil || o.App != "shop" || o.Process != "worker" || o.sort != "memory" || !o.once || o.interval != 2*time.Second {
		t.Fatalf("error %v, options %+v", err, o)
	}
	for _, c := range []struct {
		argv []string
		want string
	}{{[]string{"shop", "--sort", "disk"}, "--sort must be cpu or memory"}, {[]string{"shop", "--interval", "10ms"}, "--interval must be at least 1s"},
		{[]string{"shop", "-p", "run"}, "one-off runs are not units"}} {
		o, err := parseCmd(t, newUnitTopCmd, c.argv...)
		wantParseError(t, o, err, c.want)
	}
}

// unit list of an app lists its units and runs, not another app's; a
// process it does not have is an error.
func TestRunUnitListAndKill(t *testing.T) {
	p := unitsFixture(t)
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	o := &unitListOptions{IO: ios, Store: fixtureStore(p), format: unitFormat("name")}
	o.App = "shop"
	if err := runUnitList(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "unit/shop-web-7d9f-b2\n") || !strings.Contains(out.String(), "unit/shop-run-x7k2q\n") || strings.Contains(out.String(), "blog") {
		t.Errorf("-o name:\n%s", out)
	}
	o.Process = "cron"
	if err := runUnitList(ctx, o); err == nil || !strings.Contains(err.Error(), "cron") {
		t.Errorf("a process the app lacks: %v", err)
	}
	kill := &unitKillOptions{IO: ios, Store: fixtureStore(p), App: "shop", Unit: "shop-web-7d9f-b2"}
	if err := runUnitKill(ctx, kill); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "unit shop-web-7d9f-b2 killed; a replacement is starting") {
		t.Errorf("stderr %q", errOut)
	}
	if _, err := p.cs.CoreV1().Pods("dev").Get(ctx, "shop-web-7d9f-b2", metav1.GetOptions{}); err == nil {
		t.Error("the unit is still there")
	}
	kill.App = "nope"
	if err := runUnitKill(ctx, kill); !app.IsNotFound(err) {
		t.Errorf("a missing app: %v", err)
	}
}

// unit add puts N units on the app's default process.
func TestRunUnitAdd(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Release: 1, LastRelease: 1, Image: "shop:1", Processes: map[string]app.Process{"web": {Replicas: 1}}})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 1, Image: "shop:1", Kind: app.KindDeploy, Status: app.StatusDeployed,
		Processes: map[string]string{"web": "./serve"}}, nil)
	ctx := context.Background()
	ios, _, _, errOut := cli.TestIOStreams()
	o := &unitAddOptions{Changer: fixtureChanger(p, ios), Rollout: rolloutFlags{NoWait: true, Output: cli.OutputTable}, App: "shop", Op: '+', N: 2}
	if err := runUnitAdd(ctx, o); err != nil {
		t.Fatalf("%v; stderr %q", err, errOut)
	}
	if a, err := p.store.GetApp(ctx, "shop"); err != nil || a.Processes["web"].Replicas != 3 {
		t.Errorf("web after unit add 2: %+v, %v", a.Processes["web"], err)
	}
}
