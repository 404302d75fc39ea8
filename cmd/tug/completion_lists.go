package main

// The clusters and stores completion lists candidates from: as app
// commands are routed (route.go), so a name completes from where the
// command will look.

import (
	"context"
	"errors"
	"slices"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/complete"
)

// routingClusters is tug's cluster map when app commands are routed by it
// (route.go): nil when no cluster is configured or the command line picks
// the context, cluster or identity itself. It reads files only, no request.
func routingClusters(f *cli.Factory) *cluster.Config {
	if cf := f.ConfigFlags; cf.Context != "" || cf.PinsCluster() {
		return nil
	}
	cfg, err := loadClusters()
	if err != nil || len(cfg.Clusters) == 0 {
		return nil
	}
	return cfg
}

// appClusters are where app commands find apps, so where app names
// complete from: every configured cluster, and the current context, which
// commands fall back to, when the map does not name it. None (one
// namespace, as before) when routingClusters is nil.
func appClusters(f *cli.Factory) []cluster.Cluster {
	cfg := routingClusters(f)
	if cfg == nil {
		return nil
	}
	out := slices.Clone(cfg.Clusters)
	if here, err := f.ContextName(); err == nil && here != "" && !slices.ContainsFunc(out, func(c cluster.Cluster) bool { return c.Context == here }) {
		out = append(out, cluster.Cluster{Name: here, Context: here})
	}
	return out
}

// storeForApp is the app store, once an app name has been typed: in the
// cluster that holds the app when clusters are configured, as the command
// will be routed (route.go).
func storeForApp(ctx context.Context, f *cli.Factory, args []string) (*app.Store, error) {
	if len(args) == 0 {
		return nil, errors.New("no app yet")
	}
	if err := app.ValidateName(args[0]); err != nil {
		return nil, err
	}
	if cfg := routingClusters(f); cfg != nil {
		finders := appFinder(f)
		loc, err := cluster.Locate(ctx, cfg, args[0], finders.find)
		if err != nil {
			return nil, err
		}
		if loc.Found {
			return appStore(finders.factory(loc.Context))
		}
	}
	return appStore(f)
}

func unitLister(f *cli.Factory) lister {
	return func(ctx context.Context, c *cobra.Command, args []string) ([]string, error) {
		s, err := storeForApp(ctx, f, args)
		if err != nil {
			return nil, err
		}
		process := ""
		if fl := c.Flags().Lookup("process"); fl != nil {
			process = fl.Value.String()
		}
		return complete.Units(ctx, s.Client, s.Namespace, args[0], process)
	}
}

// jobLister lists the typed app's jobs, from where the command will find
// the app.
func jobLister(f *cli.Factory) lister {
	return func(ctx context.Context, _ *cobra.Command, args []string) ([]string, error) {
		s, err := storeForApp(ctx, f, args)
		if err != nil {
			return nil, err
		}
		return complete.Jobs(ctx, s.Client, s.Namespace, args[0])
	}
}

func poolLister(f *cli.Factory) lister {
	return func(ctx context.Context, c *cobra.Command, _ []string) ([]string, error) {
		ts, err := clusterTargets(f, tugCluster(c))
		if err != nil {
			return nil, err
		}
		return complete.Pools(ctx, ts)
	}
}

// tugCluster is the value of a node command's own --cluster (a tug
// cluster); "" elsewhere, where --cluster is kubectl's.
func tugCluster(c *cobra.Command) string {
	if fl := c.LocalNonPersistentFlags().Lookup("cluster"); fl != nil {
		return fl.Value.String()
	}
	return ""
}
