package main

import (
	"context"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

func TestNewAppExportCmd(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		want    appExportOptions
		wantErr string
	}{
		{name: "yaml by default", argv: []string{"shop"}, want: appExportOptions{App: "shop", Format: cli.OutputTable}},
		{name: "json with config", argv: []string{"shop", "--include-config", "-o", "json"},
			want: appExportOptions{App: "shop", Format: cli.OutputJSON, IncludeConfig: true}},
		{name: "manifest", argv: []string{"shop", "--manifest"}, want: appExportOptions{App: "shop", Format: cli.OutputTable, AsManifest: true}},
		{name: "bad app", argv: []string{"-shop"}, wantErr: "unknown shorthand flag"},
		{name: "bad format", argv: []string{"shop", "-o", "xml"}, wantErr: `invalid argument "xml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newAppExportCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil {
				t.Fatalf("error %v", err)
			}
			if o.App != tt.want.App || o.Format != tt.want.Format || o.IncludeConfig != tt.want.IncludeConfig || o.AsManifest != tt.want.AsManifest {
				t.Errorf("options %+v, want %+v", o, tt.want)
			}
		})
	}
}

// --manifest prints a tug.yaml of the deployed release, and refuses
// --include-config; an app never deployed has nothing to export.
func TestRunAppExportManifest(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Release: 1, LastRelease: 1, Image: "shop:1",
		Processes: map[string]app.Process{"web": {Replicas: 2}}})
	p.mustCreateApp(t, &app.App{Name: "blog"})
	p.mustCreateRelease(t, &app.Release{App: "shop", Version: 1, Image: "shop:1", Kind: app.KindDeploy, Status: app.StatusDeployed,
		Processes: map[string]string{"web": "./serve"}}, app.ConfigMap{"TOKEN": "s3cret"})
	ctx := context.Background()
	ios, _, out, _ := cli.TestIOStreams()
	o := &appExportOptions{IO: ios, Store: fixtureStore(p), App: "shop", AsManifest: true, Format: cli.OutputYAML}
	if err := runAppExport(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "./serve") || strings.Contains(out.String(), "s3cret") {
		t.Errorf("manifest:\n%s", out)
	}
	o.IncludeConfig = true
	if err := runAppExport(ctx, o); err == nil || !strings.Contains(err.Error(), "cannot be used together") {
		t.Errorf("--manifest --include-config: %v", err)
	}
	o.IncludeConfig, o.App = false, "blog"
	if err := runAppExport(ctx, o); err == nil || !strings.Contains(err.Error(), "no deployed release") {
		t.Errorf("an app never deployed: %v", err)
	}
}
