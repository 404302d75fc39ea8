package node

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/kube"
)

// Pool is one line of `tug pool list`: a pool in one cluster, its nodes
// and the apps placed in it. Its JSON shape is documented in
// docs/output.md.
type Pool struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster"`
	// Nodes are the nodes labelled with the pool; Ready counts those ready
	// and not disabled or cordoned, i.e. able to take new units.
	Nodes []string `json:"nodes"`
	Ready int      `json:"ready"`
	// Apps are "namespace/app" for every app placed in the pool.
	Apps []string `json:"apps"`
}

// PoolList is `tug pool list`.
type PoolList struct {
	Pools       []Pool         `json:"pools"`
	Unreachable []ClusterError `json:"unreachable"`
	Warnings    []string       `json:"warnings"`
}

// ListPools lists the pools of every cluster: those its nodes are labelled
// with, those its apps are placed in (a pool with apps and no nodes is
// worth seeing: its units cannot run) and those the cluster is configured
// to hold.
func ListPools(ctx context.Context, targets []cluster.Target) (*PoolList, error) {
	parts, err := forEachCluster(ctx, targets, poolsOf)
	if err != nil {
		return nil, err
	}
	out := &PoolList{Pools: []Pool{}}
	out.Unreachable, out.Warnings, err = gather(targets, parts, func(pools []Pool) { out.Pools = append(out.Pools, pools...) })
	if err != nil {
		return nil, err
	}
	sort.Slice(out.Pools, func(i, j int) bool {
		if out.Pools[i].Name != out.Pools[j].Name {
			return out.Pools[i].Name < out.Pools[j].Name
		}
		return out.Pools[i].Cluster < out.Pools[j].Cluster
	})
	return out, nil
}

func poolsOf(ctx context.Context, t cluster.Target) ([]Pool, string, error) {
	nodes, err := t.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kube.LabelPool})
	if err != nil {
		return nil, "", err
	}
	byName := map[string]*Pool{}
	get := func(name string) *Pool {
		p := byName[name]
		if p == nil {
			p = &Pool{Name: name, Cluster: t.Name, Nodes: []string{}, Apps: []string{}}
			byName[name] = p
		}
		return p
	}
	for _, name := range t.Pools {
		get(name)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		p := get(n.Labels[kube.LabelPool])
		p.Nodes = append(p.Nodes, n.Name)
		if IsReady(n) && !n.Spec.Unschedulable && !IsDisabled(n) {
			p.Ready++
		}
	}
	placed, warning := placedApps(ctx, t)
	for _, a := range placed {
		p := get(a.pool)
		p.Apps = append(p.Apps, a.namespace+"/"+a.name)
	}
	out := make([]Pool, 0, len(byName))
	for _, p := range byName {
		sort.Strings(p.Nodes)
		sort.Strings(p.Apps)
		out = append(out, *p)
	}
	return out, warning, nil
}

type placedApp struct{ namespace, name, pool string }

// placedApps says which apps are placed in a pool. The app records say it
// exactly, but reading them in every namespace means listing every
// ConfigMap of the cluster, which the tug-cluster-admin role does not
// grant; tug's Deployments say it too (their node selector names the
// pool) and that role may list them, so without the records the answer
// comes from there, leaving out only apps never deployed (they have no
// Deployment yet). Without either, the context's namespace still tells
// something.
func placedApps(ctx context.Context, t cluster.Target) ([]placedApp, string) {
	apps, err := (&app.Store{Client: t.Client, Namespace: metav1.NamespaceAll}).ListApps(ctx)
	if err == nil {
		return fromRecords(apps), ""
	}
	if placed, derr := fromDeployments(ctx, t); derr == nil {
		return placed, ""
	}
	if t.Namespace != "" {
		warning := fmt.Sprintf("cluster %s: apps listed in namespace %q only: %v", t.Name, t.Namespace, kube.TranslateError(err))
		if apps, err = (&app.Store{Client: t.Client, Namespace: t.Namespace}).ListApps(ctx); err == nil {
			return fromRecords(apps), warning
		}
	}
	return nil, fmt.Sprintf("cluster %s: apps not listed: %v", t.Name, kube.TranslateError(err))
}

func fromRecords(apps []*app.App) []placedApp {
	var out []placedApp
	for _, a := range apps {
		if a.Pool != "" {
			out = append(out, placedApp{a.Namespace, a.Name, a.Pool})
		}
	}
	return out
}

// fromDeployments finds each app's pool in its processes' node selectors;
// an app whose processes are in two pools (a pool change rolling out) is
// listed in both.
func fromDeployments(ctx context.Context, t cluster.Target) ([]placedApp, error) {
	seen := map[placedApp]bool{}
	err := kube.EachDeployment(ctx, t.Client, metav1.NamespaceAll, metav1.ListOptions{LabelSelector: kube.UnitDeploymentSelector()},
		func() { clear(seen) },
		func(d *appsv1.Deployment) {
			if pool := d.Spec.Template.Spec.NodeSelector[kube.LabelPool]; pool != "" {
				seen[placedApp{d.Namespace, d.Labels[kube.LabelApp], pool}] = true
			}
		})
	if err != nil {
		return nil, err
	}
	out := make([]placedApp, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	return out, nil
}
