package main

import (
	"context"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func TestNewAppCreateCmd(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		pool    string
		team    string
		wantErr string
	}{
		{name: "plain", argv: []string{"shop"}},
		{name: "with pool and team", argv: []string{"shop", "--pool", "gpu", "--team", "payments", "--description", "the web shop"}, pool: "gpu", team: "payments"},
		{name: "bad name", argv: []string{"Shop"}, wantErr: `invalid app name "Shop"`},
		{name: "bad pool", argv: []string{"shop", "--pool", "gpu pool"}, wantErr: "gpu pool"},
		{name: "no name", argv: []string{}, wantErr: "missing NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newAppCreateCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.Name != "shop" || o.Pool != tt.pool || o.Team != tt.team {
				t.Fatalf("error %v, options %+v", err, o)
			}
		})
	}
}

// create routes to the pool's cluster first, creates the record and says
// what to do next; -o json is the app.
func TestRunAppCreate(t *testing.T) {
	p := newPrinterFixture(t)
	ctx := context.Background()
	ios, _, out, _ := cli.TestIOStreams()
	var routed string
	o := &appCreateOptions{IO: ios, Store: fixtureStore(p), CommandName: "kubectl tug",
		RouteToPool: func(pool string) error { routed = pool; return nil }}
	o.Name, o.Pool = "shop", "gpu"
	if err := runAppCreate(ctx, o); err != nil {
		t.Fatal(err)
	}
	if routed != "gpu" || !strings.Contains(out.String(), `app "shop" created in namespace "dev"; deploy it from its source folder with 'kubectl tug app deploy shop`) {
		t.Errorf("routed to %q, stdout %q", routed, out)
	}
	if a, err := p.store.GetApp(ctx, "shop"); err != nil || a.Pool != "gpu" {
		t.Errorf("record %+v, %v", a, err)
	}
	if err := runAppCreate(ctx, o); err == nil {
		t.Error("created twice")
	}
}

func TestRunAppList(t *testing.T) {
	p := newPrinterFixture(t)
	ctx := context.Background()
	ios, _, out, errOut := cli.TestIOStreams()
	o := &appListOptions{IO: ios, Store: fixtureStore(p), CommandName: "tug", Output: cli.OutputOptions{Format: cli.OutputTable}}
	if err := runAppList(ctx, o); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 || errOut.String() != "no apps in namespace \"dev\"; create one with 'tug app create NAME'\n" {
		t.Errorf("no apps: stdout %q, stderr %q", out, errOut)
	}
	p.mustCreateApp(t, &app.App{Name: "shop"})
	if err := runAppList(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\nshop\t-\t-\t") {
		t.Errorf("piped table %q", out)
	}
}

func TestNewAppListCmd(t *testing.T) {
	o, err := parseCmd(t, newAppListCmd, "-o", "json", "--no-headers")
	if err != nil || o == nil || o.Output.Format != cli.OutputJSON || !o.Output.NoHeaders {
		t.Fatalf("error %v, options %+v", err, o)
	}
	o, err = parseCmd(t, newAppListCmd, "shop")
	wantParseError(t, o, err, `takes no arguments, got "shop"`)
}
