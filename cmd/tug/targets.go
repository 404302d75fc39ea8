package main

// Where commands act: tug's cluster map (loadClusters), clients per
// kubeconfig context (connector), the clusters a node command spans
// (clusterTargets) and the cluster that holds a pool (poolTarget,
// routeToPool).

import (
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/inputerr"
)

// loadClusters reads tug's config file ($TUG_CONFIG names another).
func loadClusters() (*cluster.Config, error) {
	return cluster.LoadDefault(os.Getenv(cluster.EnvConfig))
}

// connector builds clients per kubeconfig context with the Factory's
// kubeconfig and flags; "" is the command line's own selection.
func connector(f *cli.Factory) cluster.Connector {
	return func(kubeContext string) (kubernetes.Interface, string, error) {
		g := f
		if kubeContext != "" {
			g = f.ForContext(kubeContext)
		}
		client, err := g.KubeClient()
		if err != nil {
			return nil, "", err
		}
		ns, err := g.Namespace()
		if err != nil {
			return nil, "", err
		}
		return client, ns, nil
	}
}

func selection(f *cli.Factory, only string) cluster.Selection {
	sel := cluster.Selection{Only: only, ExplicitContext: f.ConfigFlags.Context}
	if sel.ExplicitContext == "" {
		if raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig(); err == nil {
			sel.CurrentContext = raw.CurrentContext
		}
	}
	return sel
}

// clusterTargets are the clusters a node command spans.
func clusterTargets(f *cli.Factory, only string) ([]cluster.Target, error) {
	cfg, err := loadClusters()
	if err != nil {
		return nil, err
	}
	ts, err := cluster.Resolve(cfg, connector(f), selection(f, only))
	return ts, err
}

// poolTarget is the cluster that holds a pool.
func poolTarget(f *cli.Factory, pool, only string) (cluster.Target, error) {
	cfg, err := loadClusters()
	if err != nil {
		return cluster.Target{}, err
	}
	t, err := cluster.ResolvePool(cfg, connector(f), pool, selection(f, only))
	if err != nil {
		return t, err
	}
	return t, t.Err
}

// routeToPool sends an app command for an app in pool to the pool's
// cluster, unless --context says where to go (which must be the pool's), or
// the command line pins its own connection (pinnedPoolContext: then the
// pool's cluster must be that connection's). It must run before the command asks the Factory for anything (see
// cli.Factory.UseContext).
func routeToPool(f *cli.Factory, pool string) error {
	if pool == "" {
		return nil
	}
	cfg, err := loadClusters()
	if err != nil {
		return err
	}
	if f.ConfigFlags.PinsCluster() {
		_, err := pinnedPoolContext(f, cfg, pool)
		return err
	}
	kubeContext, err := cfg.RouteToPool(pool, f.ConfigFlags.Context)
	if err != nil || kubeContext == "" {
		return err
	}
	f.UseContext(kubeContext)
	return nil
}

// pinnedPoolContext checks a pool for a command the command line pins to
// its own connection (cli.ConfigFlags.PinsCluster: --server, --token,
// --user, ...), which tug never carries to another cluster. A pool that
// tug's map puts in a configured cluster is accepted only when that
// cluster's context reaches the same API server as the pinned connection:
// then its context is returned (the cluster the command acts in). A pool
// the map gives no cluster is accepted as "" (the pinned connection is all
// there is). Any other pool is a usage error, before anything is asked of a
// cluster: acting on it would take the pinned connection for a cluster it
// is not, or move the command to another cluster without the identity
// given.
func pinnedPoolContext(f *cli.Factory, cfg *cluster.Config, pool string) (string, error) {
	owner, ok := cfg.ForPool(pool)
	if !ok {
		return "", nil
	}
	pinned, err := f.ConfigFlags.ToRESTConfig()
	if err != nil {
		return "", err
	}
	if theirs, err := f.ForContext(owner.Context).ConfigFlags.ToRESTConfig(); err == nil && sameServer(pinned.Host, theirs.Host) {
		return owner.Context, nil
	}
	pins := strings.Join(f.ConfigFlags.Pins(), ", ")
	return "", inputerr.Errorf("pool %q belongs to cluster %q (context %q), but %s pins this command to the API server at %s, which is not that cluster's, and tug does not carry a connection given on the command line to another cluster; nothing changed: leave out %s and pass --context %s, or pick a pool of that server's cluster (see 'tug cluster list')",
		pool, owner.Name, owner.Context, pins, pinned.Host, pins, owner.Context)
}

// sameServer reports whether two API server addresses are the same server:
// scheme, host and port (a missing port is the scheme's), case-insensitive.
func sameServer(a, b string) bool {
	norm := func(s string) string {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return strings.ToLower(strings.TrimRight(s, "/"))
		}
		host, port := strings.ToLower(u.Hostname()), u.Port()
		if port == "" {
			port = map[string]string{"http": "80"}[strings.ToLower(u.Scheme)]
			if port == "" {
				port = "443"
			}
		}
		return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(host, port) + strings.TrimRight(u.Path, "/")
	}
	return norm(a) == norm(b)
}

// addClusterFlag adds node commands' --cluster. It shadows kubectl's
// --cluster (a kubeconfig cluster entry), which node commands do not need:
// they pick clusters by tug's names.
// targetsFor is clusterTargets as a constructor for a command's options:
// the clusters are read when the run asks.
func targetsFor(f *cli.Factory) func(only string) ([]cluster.Target, error) {
	return func(only string) ([]cluster.Target, error) { return clusterTargets(f, only) }
}

func addClusterFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "cluster", "", "Only this tug cluster (see 'tug cluster list'); here it is not kubectl's --cluster")
}

// ---------------------------------------------------------------- add
