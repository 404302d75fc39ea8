package main

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/manifest"
	"tug.dev/tug/pkg/service"
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
	if o.build.active && o.build.packed != nil {
		dir = o.build.packed.Source().Dir
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

// servicesLocked runs the deploy's rollout so that the file's services
// section binds as 'tug service bind' does: under the lock of each service
// whose binding the file changes (bound, unbound, or given another
// prefix; taken in name order, before the app's lock, waiting as
// --wait-lock says), so such a deploy does not run beside a rotate or a
// remove of the service; a service the release does not bind yet is read
// from the cluster (service.Binding). The config clash check is the
// manifest's own (manifest.Change). A dry run takes no lock.
func (f *manifestFlag) servicesLocked(ctx context.Context, o *appDeployOptions, appName string, run func(context.Context) error) error {
	m := f.m
	if m == nil || m.Services == nil {
		return run(ctx)
	}
	s, err := o.Store()
	if err != nil {
		return err
	}
	names := bindingChanges(ctx, s, appName, m.Services)
	m.ResolveService = func(name, prefix string) (app.ServiceBinding, error) {
		// the locks were chosen from a read before the app's lock: a
		// service unbound in between would be bound here unlocked
		if !o.rollout.DryRun && !slices.Contains(names, name) {
			return app.ServiceBinding{}, fmt.Errorf("service %q was unbound from app %q while this deploy began; deploy again", name, appName)
		}
		return service.Binding(ctx, s.Client, s.Namespace, name, prefix)
	}
	return servicesLocked(ctx, o.Changer, names, o.rollout.DryRun, run)
}

// bindingChanges are the services, sorted, whose binding to the app a file
// whose services section is file changes from what the app's base release
// binds: read without the app's lock, as the deploy's confirmation is
// (a read that fails leaves every service of the file).
func bindingChanges(ctx context.Context, s *app.Store, appName string, file map[string]string) []string {
	var cur []app.ServiceBinding
	if a, err := s.GetApp(ctx, appName); err == nil {
		if base, _, err := deploy.BaseRelease(ctx, s, a); err == nil && base != nil {
			cur = base.Services
		}
	}
	changed := map[string]bool{}
	for name, prefix := range file {
		i := slices.IndexFunc(cur, func(b app.ServiceBinding) bool { return b.Service == name })
		if i < 0 || (prefix != "" && cur[i].Prefix != prefix) {
			changed[name] = true
		}
	}
	for _, b := range cur {
		if _, ok := file[b.Service]; !ok {
			changed[b.Service] = true
		}
	}
	return slices.Sorted(maps.Keys(changed))
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
