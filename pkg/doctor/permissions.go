// Package doctor checks that the kubeconfig works, the cluster answers, and
// the user holds every permission tug's commands need.
package doctor

import (
	"slices"
	"strings"

	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/owned"
)

// Scope says where a permission is needed.
type Scope string

const (
	// ScopeNamespace: in the app's namespace (-n or the kubeconfig's).
	ScopeNamespace Scope = "namespace"
	// ScopeCluster: a cluster-scoped resource such as nodes.
	ScopeCluster Scope = "cluster"
	// ScopeAllNamespaces: a namespaced resource in every namespace, such as
	// evicting pods from a node whatever their namespace.
	ScopeAllNamespaces Scope = "all-namespaces"
	// ScopeAppNamespaces: in each namespace that holds tug apps, granted
	// there by a RoleBinding to the tug-cluster-admin-apps ClusterRole.
	// RBAC cannot narrow a cluster-wide grant to tug's own Leases, and
	// across the cluster lease writes reach kube-node-lease (node
	// heartbeats) and kube-system (leader elections).
	ScopeAppNamespaces Scope = "app-namespaces"
)

// Permission is one verb on one resource, as an RBAC rule names it.
type Permission struct {
	Verb        string `json:"verb"`
	Group       string `json:"group"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Scope       Scope  `json:"scope"`
	// Namespace, in a report, is the app namespace an app-namespaces
	// permission was reviewed in; the table leaves it empty.
	Namespace string `json:"namespace,omitempty"`
}

// String is "list nodes (cluster)", "create pods/eviction (all namespaces)",
// "create leases.coordination.k8s.io (each app namespace)" or, in the
// namespace, "get pods/log".
func (p Permission) String() string {
	return p.Verb + " " + p.resourceWithScope()
}

func (p Permission) resourceWithScope() string {
	s := kube.ResourceName(p.Group, p.Resource, p.Subresource)
	switch p.Scope {
	case ScopeCluster:
		s += " (cluster)"
	case ScopeAllNamespaces:
		s += " (all namespaces)"
	case ScopeAppNamespaces:
		if p.Namespace != "" {
			s += " (namespace " + p.Namespace + ", through " + kube.ClusterAdminAppsRole + ")"
		} else {
			s += " (each app namespace)"
		}
	}
	return s
}

// CommandGroup is a set of tug commands and the permissions they need.
type CommandGroup struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Permissions []Permission `json:"permissions"`
	// Admin groups are cluster administration (nodes, pools, node
	// containers): a developer with a namespace Role is not expected to
	// hold them, so doctor reports them as not available rather than as a
	// problem unless asked about everything (--all).
	Admin bool `json:"admin,omitempty"`
}

// Watch is granted only on what tug watches (pods, Deployments, the lock's
// Lease, DaemonSets); other kinds are read with get and list.
var (
	read   = []string{"get", "list"}
	manage = []string{"get", "list", "create", "update", "patch", "delete"}
)

// rules expands verbs × resource into permissions. resource may carry a
// subresource ("pods/log") and a group after a dot ("deployments.apps").
func rules(scope Scope, resource string, verbs ...string) []Permission {
	res, sub, _ := strings.Cut(resource, "/")
	res, group, _ := strings.Cut(res, ".")
	out := make([]Permission, 0, len(verbs))
	for _, v := range verbs {
		out = append(out, Permission{Verb: v, Group: group, Resource: res, Subresource: sub, Scope: scope})
	}
	return out
}

func ns(resource string, verbs ...string) []Permission {
	return rules(ScopeNamespace, resource, verbs...)
}

// CommandGroups is the permission table: the one place that says what each
// tug command group needs, derived from how tug keeps its state (see
// DESIGN.md, "State in the cluster"). A feature that starts using a new verb
// or resource adds it here; `tug doctor`, docs/rbac/ and the e2e RBAC test
// all follow.
//
// It is a function so callers get their own copy to sort or filter.
func CommandGroups() []CommandGroup { return commandGroups(deploy.Kinds()) }

// ownedKinds is what a change does to each kind of an app's objects
// (kinds: deploy.Kinds, the table pkg/owned loops over): get for the
// ownership guard, list to prune and remove, create and patch to apply
// (server-side apply creates), delete to prune and remove. A kind added to
// the table is granted here with no other change: the deploy group checks
// its required kinds, and the developer Role grants every kind (RoleFor);
// an Optional one (a CRD a cluster may not serve) is checked by the group
// of the feature that writes it (domain, network, job), so doctor does not
// fail deploy on a cluster without it.
func ownedKinds(kinds owned.Table) []Permission {
	var out []Permission
	for _, k := range kinds {
		if k.Namespaced {
			out = append(out, ns(k.ResourceName(), "get", "list", "create", "patch", "delete")...)
		}
	}
	return out
}

// commandGroups is the table, with what deploy does to each of kinds.
//
//tug:table
func commandGroups(kinds owned.Table) []CommandGroup {
	return []CommandGroup{
		{
			Name:        "app",
			Description: "create, list, inspect, update, scale, restart and remove apps",
			Permissions: slices.Concat(
				// The app record, tug-app-<name>.
				ns("configmaps", manage...),
				// One Deployment per process, a Service for the web process.
				ns("deployments.apps", manage...),
				ns("services", manage...),
				// Registry credentials; remove also deletes release config
				// (and release records, ConfigMaps, with the app record).
				ns("secrets", "get", "list", "create", "update", "patch", "delete"),
				// Units shown by app info; remove deletes them and watches
				// until they are gone.
				ns("pods", "get", "list", "watch", "delete"),
				// Remove lists each kind by the app's labels and deletes
				// what it finds, one by one (no deletecollection).
				ns("horizontalpodautoscalers.autoscaling", "list", "delete"),
				ns("ingresses.networking.k8s.io", "list", "delete"),
				ns("networkpolicies.networking.k8s.io", "list", "delete"),
				ns("middlewares.traefik.io", "list", "delete"),
				ns("cronjobs.batch", "list", "delete"),
				ns("jobs.batch", "list", "delete"),
			),
		},
		{
			Name:        "deploy",
			Description: "deploy an image, roll back, wait for the rollout and diagnose it",
			Permissions: slices.Concat(
				// Release config, one Secret each (and releases of the old
				// form, one Secret that also holds the record).
				ns("secrets", manage...),
				// Release records, one ConfigMap each; the app record's
				// current release.
				ns("configmaps", manage...),
				// The rollout watches its Deployments and their pods.
				ns("deployments.apps", manage...),
				ns("deployments.apps", "watch"),
				ns("services", "get", "create", "update", "patch"),
				// Rollout progress and diagnosis: why a unit does not start,
				// the last lines of a crashing one.
				ns("replicasets.apps", read...),
				ns("pods", "get", "list", "watch"),
				ns("pods/log", "get"),
				ns("events", "list", "create"),
				// Apply, guard and prune each required kind of an app's
				// objects (the Optional ones: their feature's group).
				ownedKinds(kinds.Required()),
			),
		},
		{
			Name:        "deploy lock",
			Description: "the per-app Lease that keeps two deploys from interleaving",
			// Watch: a lease that looks expired is watched for a moment
			// before it is taken over.
			Permissions: ns("leases.coordination.k8s.io", "get", "watch", "create", "update", "delete"),
		},
		{
			Name:        "release",
			Description: "list and inspect releases",
			// The records are ConfigMaps, which a viewer reads; releases
			// of the old form are one Secret that holds the config too.
			Permissions: slices.Concat(
				ns("configmaps", read...),
				ns("secrets", read...),
			),
		},
		{
			Name:        "env",
			Description: "get, set and unset config vars",
			Permissions: ns("secrets", "get", "list", "create", "update", "patch"),
		},
		{
			Name:        "unit",
			Description: "list, inspect and kill units",
			Permissions: slices.Concat(
				ns("pods", "get", "list", "watch", "delete"),
				ns("events", "list"),
			),
		},
		{
			Name:        "metrics",
			Description: "CPU and memory of units (unit list, unit top, app info) from the metrics API",
			// One LIST of PodMetrics by the app's labels; the cluster must
			// serve metrics.k8s.io (metrics-server), which doctor checks.
			Permissions: ns("pods.metrics.k8s.io", "list"),
		},
		{
			Name:        "events",
			Description: "what happened to an app (app events), followed with -f",
			Permissions: slices.Concat(
				ns("events", "list", "watch"),
				ns("pods", "list", "watch"),
				// its releases, tug's own records (and those of the old
				// form, Secrets)
				ns("configmaps", "list"),
				ns("secrets", "list"),
			),
		},
		{
			Name:        "log",
			Description: "show and follow app logs",
			Permissions: slices.Concat(
				// log -f watches for units that start.
				ns("pods", "get", "list", "watch"),
				ns("pods/log", "get"),
			),
		},
		{
			Name:        "run/shell",
			Description: "run one-off commands, exec in units, open shells",
			Permissions: slices.Concat(
				// run's isolated pod.
				ns("pods", "get", "list", "watch", "create", "delete"),
				// WebSocket streams are authorised as get before Kubernetes
				// 1.35 and as create after it (and by the SPDY fallback).
				ns("pods/exec", "get", "create"),
				ns("pods/attach", "get", "create"),
				ns("pods/log", "get"),
				// The audit Event each session records on its pod.
				ns("events", "create"),
				// run --env values, in a Secret that goes with the pod.
				ns("secrets", "create", "patch", "delete"),
			),
		},
		{
			Name:        "domain",
			Description: "route the app's URL and domains to the web process",
			Permissions: slices.Concat(
				ns("ingresses.networking.k8s.io", manage...),
				// Through the cluster's Gateway (its settings name one):
				// one HTTPRoute per app, whose status tug watches for the
				// router's verdict.
				ns("httproutes.gateway.networking.k8s.io", "get", "list", "watch", "create", "update", "patch", "delete"),
				// Where the cluster settings name a certificate issuer: one
				// cert-manager Certificate per host, whose status cert list reads.
				ns("certificates.cert-manager.io", "get", "list", "create", "update", "patch", "delete"),
				// The jobs of a release (tug job), applied with it.
				ns("cronjobs.batch", "get", "list", "create", "update", "patch", "delete"),
			),
		},
		{
			Name:        "job",
			Description: "run commands on a schedule, and now (job run, logs)",
			Permissions: slices.Concat(
				// One CronJob per job, rendered with every release.
				ns("cronjobs.batch", "get", "list", "create", "update", "patch", "delete"),
				// job run makes a Job from it, and deletes it on Ctrl-C.
				ns("jobs.batch", "get", "list", "create", "delete"),
				ns("pods/log", "get"),
			),
		},
		{
			Name:        "autoscale",
			Description: "scale processes automatically",
			Permissions: ns("horizontalpodautoscalers.autoscaling", manage...),
		},
		{
			Name:        "network",
			Description: "restrict which units may talk to an app",
			Permissions: slices.Concat(
				ns("networkpolicies.networking.k8s.io", "get", "list", "create", "update", "patch", "delete"),
				// Through a Traefik router (cluster setting router): the
				// allow list is the app's ipAllowList Middleware.
				ns("middlewares.traefik.io", manage...),
			),
		},
		{
			Name:        "volume",
			Description: "persistent volumes for apps",
			Permissions: ns("persistentvolumeclaims", manage...),
		},
		{
			Name:        "service",
			Description: "backing services (databases): create, bind, credentials, remove",
			Permissions: slices.Concat(
				// A plan's objects, by server-side apply (the built-in
				// postgres plan's: a StatefulSet, a Service, a claim),
				// the record (a ConfigMap) and the credentials and
				// binding Secrets. The plans themselves are read from
				// kube-public/tug-service-plans, which every
				// authenticated user may read.
				ns("statefulsets.apps", manage...),
				ns("services", manage...),
				ns("persistentvolumeclaims", manage...),
				ns("secrets", manage...),
				ns("configmaps", manage...),
				// Waiting until it accepts connections, and saying why not.
				ns("pods", "get", "list", "watch"),
				ns("pods/log", "get"),
				ns("events", "list"),
				// connect, backup, restore and rotate run in its unit.
				ns("pods/exec", "get", "create"),
				// Scheduled backups: a CronJob, and a short pod that
				// mounts their volume to list and read the dumps.
				ns("cronjobs.batch", manage...),
				ns("pods", "create", "delete"),
			),
		},
		{
			Name:        "node",
			Admin:       true,
			Description: "list, add, enable, disable and remove nodes (cluster admins)",
			Permissions: slices.Concat(
				rules(ScopeCluster, "nodes", manage...),
				// Units per node; removing a node evicts the pods on it, in
				// every namespace, and waits until they are gone.
				rules(ScopeAllNamespaces, "pods", "get", "list", "watch"),
				rules(ScopeAllNamespaces, "pods/eviction", "create"),
				// App-aware removal: a process whose last ready unit is on
				// the node gets one more unit first, under the app's deploy
				// lock: only in the apps' namespaces.
				rules(ScopeAppNamespaces, "deployments.apps/scale", "get", "update"),
				rules(ScopeAppNamespaces, "leases.coordination.k8s.io", "get", "watch", "create", "update", "delete"),
			),
		},
		{
			Name:        "pool",
			Admin:       true,
			Description: "group nodes into pools and list the apps in each (cluster admins)",
			Permissions: slices.Concat(
				rules(ScopeCluster, "nodes", "get", "list", "update", "patch"),
				// Which apps each pool holds, from tug's Deployments (their
				// node selector names the pool), not from the app records:
				// listing ConfigMaps in every namespace would read every
				// ConfigMap of the cluster. A Deployment shows what its
				// pods, which the node commands list anyway, show.
				rules(ScopeAllNamespaces, "deployments.apps", "list"),
			),
		},
		{
			Name:        "node-container",
			Admin:       true,
			Description: "run a container on every node of a pool (cluster admins)",
			// DaemonSets in the namespace, but they run on every node:
			// granted with the cluster role, not the developer's.
			Permissions: slices.Concat(
				rules(ScopeAllNamespaces, "daemonsets.apps", "get", "list", "watch", "create", "update", "patch", "delete"),
				rules(ScopeAllNamespaces, "pods", "list", "watch"),
			),
		},
	}
}
