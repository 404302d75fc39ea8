// Package complete lists the names a shell completes on tug's command line:
// apps, processes, units, releases, jobs, volumes, nodes, pools, clusters,
// kubeconfig contexts and namespaces. Each list comes from the package that
// owns the object (pkg/app, pkg/node, ...); this package only turns results
// into candidates, "value" or "value\tdescription", filtered by the prefix
// the user has typed.
//
// Completion must never get in the way: callers give it a short deadline
// and show nothing when a list fails.
package complete

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/job"
	"tug.dev/tug/pkg/node"
	"tug.dev/tug/pkg/volume"
)

// Filter keeps the candidates whose value starts with prefix. Shells filter
// too, but not all of them do it the same way, and a short list travels
// faster.
func Filter(candidates []string, prefix string) []string {
	out := []string{}
	for _, c := range candidates {
		value, _, _ := strings.Cut(c, "\t")
		if strings.HasPrefix(value, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func describe(value, description string) string {
	if description == "" {
		return value
	}
	// A tab or newline in the description would break the shell protocol.
	return value + "\t" + strings.Join(strings.Fields(description), " ")
}

// Apps are the namespace's apps, described by their image.
func Apps(ctx context.Context, s *app.Store) ([]string, error) {
	apps, err := s.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(apps))
	for _, a := range apps {
		out = append(out, describe(a.Name, a.Description))
	}
	sort.Strings(out)
	return out, nil
}

// AppsOfClusters are the apps of every cluster in clusters, asked all at
// once (store gives the app store of a kubeconfig context): what commands
// reach when tug's cluster map routes them (cmd/tug/route.go). Each is
// described by the clusters holding it, once even when several do (the
// two copies of an unfinished move). A cluster that does not answer is
// left out; only when none answers is it an error.
func AppsOfClusters(ctx context.Context, clusters []cluster.Cluster, store func(kubeContext string) (*app.Store, error)) ([]string, error) {
	lists := make([][]*app.App, len(clusters))
	errs := make([]error, len(clusters))
	var wg sync.WaitGroup
	for i, cl := range clusters {
		wg.Go(func() {
			s, err := store(cl.Context)
			if err == nil {
				lists[i], err = s.ListApps(ctx)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	where := map[string][]string{}
	about := map[string]string{}
	answered := false
	for i, l := range lists {
		if errs[i] != nil {
			continue
		}
		answered = true
		for _, a := range l {
			if !slices.Contains(where[a.Name], clusters[i].Name) {
				where[a.Name] = append(where[a.Name], clusters[i].Name)
			}
			if about[a.Name] == "" {
				about[a.Name] = a.Description
			}
		}
	}
	if !answered && len(clusters) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]string, 0, len(where))
	for name, in := range where {
		desc := strings.Join(in, ", ")
		if about[name] != "" {
			desc += ": " + about[name]
		}
		out = append(out, describe(name, desc))
	}
	sort.Strings(out)
	return out, nil
}

// Processes are an app's process types, with their unit counts.
func Processes(ctx context.Context, s *app.Store, appName string) ([]string, error) {
	a, err := s.GetApp(ctx, appName)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, p := range a.ProcessNames() {
		proc := a.Processes[p]
		desc := fmt.Sprintf("%d units", proc.Replicas)
		if proc.Stopped {
			desc = "stopped"
		}
		out = append(out, describe(p, desc))
	}
	return out, nil
}

// Units are an app's units (pods) and one-off runs, optionally of one
// process, described by process and status.
func Units(ctx context.Context, client kubernetes.Interface, namespace, appName, process string) ([]string, error) {
	units, err := app.ListUnits(ctx, client, namespace, app.ListUnitsOptions{App: appName, Process: process, Runs: true})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(units))
	for _, u := range units {
		out = append(out, describe(u.Name, u.Process+" "+u.Status))
	}
	return out, nil
}

// Releases are an app's releases as vN, newest first, described by kind and
// status.
func Releases(ctx context.Context, s *app.Store, appName string) ([]string, error) {
	rels, err := s.ListReleases(ctx, appName)
	if err != nil {
		return nil, err
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].Version > rels[j].Version })
	out := make([]string, 0, len(rels))
	for _, r := range rels {
		out = append(out, describe(fmt.Sprintf("v%d", r.Version), fmt.Sprintf("%s, %s", r.Kind, r.Status)))
	}
	return out, nil
}

// Jobs are an app's jobs, described by schedule, from their CronJobs
// (one LIST).
func Jobs(ctx context.Context, client kubernetes.Interface, namespace, appName string) ([]string, error) {
	jobs, err := job.ListScheduled(ctx, client, namespace, appName)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(jobs))
	for _, j := range jobs {
		desc := j.Schedule
		if j.Suspended {
			desc += ", suspended"
		}
		out = append(out, describe(j.Name, desc))
	}
	return out, nil
}

// Volumes are the namespace's volumes, described by size.
func Volumes(ctx context.Context, s *app.Store) ([]string, error) {
	vols, err := volume.List(ctx, s)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(vols))
	for _, v := range vols {
		out = append(out, describe(v.Name, v.Size))
	}
	return out, nil
}

// Nodes are the nodes of the clusters that answer, described by cluster
// and pool.
func Nodes(ctx context.Context, targets []cluster.Target) ([]string, error) {
	res, err := node.List(ctx, targets, node.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(res.Nodes))
	for _, n := range res.Nodes {
		out = append(out, describe(n.Name, strings.TrimSpace(n.Cluster+" "+n.Pool)))
	}
	return out, nil
}

// Pools are the pools of every cluster that answers, once each.
func Pools(ctx context.Context, targets []cluster.Target) ([]string, error) {
	res, err := node.ListPools(ctx, targets)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []string{}
	for _, p := range res.Pools {
		if !seen[p.Name] {
			seen[p.Name] = true
			out = append(out, describe(p.Name, fmt.Sprintf("%d nodes", len(p.Nodes))))
		}
	}
	return out, nil
}

// Clusters are tug's clusters (pkg/cluster's map of pools to contexts).
func Clusters(cfg *cluster.Config) []string {
	out := []string{}
	for _, c := range cfg.Clusters {
		out = append(out, describe(c.Name, "context "+c.Context))
	}
	return out
}

// Contexts are the kubeconfig's contexts, described by cluster and
// namespace.
func Contexts(cfg *clientcmdapi.Config) []string {
	out := []string{}
	for name, c := range cfg.Contexts {
		desc := c.Cluster
		if c.Namespace != "" {
			desc += ", namespace " + c.Namespace
		}
		out = append(out, describe(name, desc))
	}
	sort.Strings(out)
	return out
}

// KubeconfigClusters are the kubeconfig's cluster entries (kubectl's
// --cluster), described by server.
func KubeconfigClusters(cfg *clientcmdapi.Config) []string {
	out := []string{}
	for name, c := range cfg.Clusters {
		out = append(out, describe(name, c.Server))
	}
	sort.Strings(out)
	return out
}

// Namespaces are the cluster's namespaces, for users allowed to list them.
func Namespaces(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	list, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		out = append(out, ns.Name)
	}
	sort.Strings(out)
	return out, nil
}
