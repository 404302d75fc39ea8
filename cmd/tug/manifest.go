package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/manifest"
)

// manifestFlag is app deploy's --manifest: tug.yaml (docs/manifest.md).
type manifestFlag struct {
	Path string
	m    *manifest.Manifest
}

func (f *manifestFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.Path, "manifest", "", "tug.yaml to read the app's processes, units, limits, healthchecks, settings and jobs from (default ./tug.yaml, or the source folder's, when present; see docs/manifest.md)")
}

// resolve reads the manifest (the source folder's when building from one)
// and merges its processes into o's, before any request: a bad key or value
// exits 2 naming its line.
func (f *manifestFlag) resolve(o *appDeployOptions) error {
	dir := ""
	if o.build.active && o.build.source != nil {
		dir = o.build.source.Dir
	}
	m, err := manifest.Find(f.Path, dir)
	if err != nil || m == nil {
		return err
	}
	if m.App != "" && m.App != o.App {
		// another app's folder (or --source pointing at it): its
		// processes and units are not this app's
		return inputerr.Errorf("%s is app %s's (app: %s), not %s's: deploy %s, or name another file with --manifest", m.Path, m.App, m.App, o.App, m.App)
	}
	f.m = m
	o.procs, o.release, err = m.MergeProcesses(o.procs, o.release)
	return err
}

// exportManifest prints app name's deployed release as a tug.yaml.
func exportManifest(ctx context.Context, ios *cli.IOStreams, s *app.Store, name string, includeConfig bool) error {
	if includeConfig {
		return inputerr.Errorf("--manifest and --include-config cannot be used together: a tug.yaml holds no config (see 'tug env')")
	}
	a, err := s.GetApp(ctx, name)
	if err != nil {
		return err
	}
	if a.Release == 0 {
		return fmt.Errorf("app %q has no deployed release to export; deploy it first", name)
	}
	r, err := s.GetReleaseRecord(ctx, name, a.Release)
	if err != nil {
		return err
	}
	b, err := manifest.Export(a, r)
	if err != nil {
		return err
	}
	_, err = ios.Out.Write(b)
	return err
}
