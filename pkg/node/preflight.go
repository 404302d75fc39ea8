package node

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// PermissionError says the user may not do something removal needs; it is
// found before anything changes.
type PermissionError struct {
	Node    string
	Missing []string // "create pods/eviction in all namespaces"
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("forbidden: removing node %q needs permission to %s; nothing was changed; ask an admin for the tug-cluster-admin role (docs/rbac) or check 'tug doctor'",
		e.Node, strings.Join(e.Missing, ", "))
}

type access struct {
	verb, group, resource, sub string
	allNamespaces              bool
	namespace                  string
}

func (a access) String() string {
	where := "at cluster scope"
	switch {
	case a.namespace != "":
		where = "in namespace " + a.namespace
	case a.allNamespaces:
		where = "in all namespaces"
	}
	return fmt.Sprintf("%s %s %s", a.verb, kube.ResourceName(a.group, a.resource, a.sub), where)
}

// allowed asks the API server whether the user may; ok is false when it
// could not answer (no verdict).
func (a access) allowed(ctx context.Context, client kubernetes.Interface) (allowed, ok bool) {
	r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub, Namespace: a.namespace,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, false
	}
	return r.Status.Allowed, true
}

// preflight asks the API server (SelfSubjectAccessReviews, which anyone
// may make) whether the user may do what removal needs, so a missing
// permission stops it before the node is cordoned rather than halfway.
// A review that cannot be made is no verdict: removal then finds out as
// it goes.
func preflight(ctx context.Context, client kubernetes.Interface, node string, o RemoveOptions) error {
	var need []access
	if o.NoRebalance {
		need = []access{{verb: "delete", resource: "nodes"}}
	} else {
		need = []access{
			{verb: "update", resource: "nodes"},
			{verb: "list", resource: "pods", allNamespaces: true},
			{verb: "create", resource: "pods", sub: "eviction", allNamespaces: true},
		}
		if !o.KeepNode {
			need = append(need, access{verb: "delete", resource: "nodes"})
		}
	}
	var missing []string
	for _, a := range need {
		allowed, ok := a.allowed(ctx, client)
		if !ok {
			return nil
		}
		if !allowed {
			missing = append(missing, a.String())
		}
	}
	if len(missing) > 0 {
		return &PermissionError{Node: node, Missing: missing}
	}
	return nil
}

// appAccess is what moving an app's last ready unit needs in the app's
// namespace: its deploy lock (deploy.Hold) and its Deployments'
// scale. The tug-cluster-admin-apps ClusterRole grants it, bound there;
// pkg/doctor's table says the same (a test keeps them in step).
var appAccess = []access{
	{verb: "get", group: "coordination.k8s.io", resource: "leases"},
	{verb: "watch", group: "coordination.k8s.io", resource: "leases"},
	{verb: "create", group: "coordination.k8s.io", resource: "leases"},
	{verb: "update", group: "coordination.k8s.io", resource: "leases"},
	{verb: "delete", group: "coordination.k8s.io", resource: "leases"},
	{verb: "get", group: "apps", resource: "deployments", sub: "scale"},
	{verb: "update", group: "apps", resource: "deployments", sub: "scale"},
}

// AppsRoleError says removal would move the last ready unit of apps in
// namespaces where the user may not take their deploy lock or add a unit:
// the tug-cluster-admin-apps ClusterRole is not bound there. It is found
// before anything changes.
type AppsRoleError struct {
	Node string
	// User is who was refused (kube.WhoAmI), for the binding to create.
	User string
	// Apps are the apps concerned, by namespace.
	Apps map[string][]string
	// Missing is what the first namespace refused, verbs gathered per
	// resource: "create,update leases.coordination.k8s.io".
	Missing []string
}

func (e *AppsRoleError) Error() string {
	namespaces := make([]string, 0, len(e.Apps))
	var apps []string
	for ns, names := range e.Apps {
		namespaces = append(namespaces, ns)
		for _, a := range names {
			apps = append(apps, ns+"/"+a)
		}
	}
	sort.Strings(namespaces)
	sort.Strings(apps)
	subject := fmt.Sprintf("app %s, under the app's deploy lock, and namespace %q does not let you take it", apps[0], namespaces[0])
	if len(apps) > 1 {
		subject = fmt.Sprintf("apps %s, under their deploy locks, and namespace %q does not let you take them", strings.Join(apps, ", "), namespaces[0])
	}
	bind := "that namespace"
	if len(namespaces) > 1 {
		subject = fmt.Sprintf("apps %s, under their deploy locks, and namespaces %s do not let you take them", strings.Join(apps, ", "), quoteAll(namespaces))
		bind = "each"
	}
	cmds := make([]string, len(namespaces))
	for i, ns := range namespaces {
		cmds[i] = kube.BindAppsRoleCommand(e.User, ns)
	}
	return fmt.Sprintf("forbidden: removing node %q moves the last ready unit of %s (no %s); nothing was changed; bind the %s ClusterRole in %s: %s",
		e.Node, subject, strings.Join(e.Missing, "; "), kube.ClusterAdminAppsRole, bind, strings.Join(cmds, " && "))
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// lockPreflight finds the processes whose last ready unit is on the node
// (removal will take their app's deploy lock and surge them) and asks
// whether the user may do that in their namespaces, so a namespace where
// tug-cluster-admin-apps is not bound stops removal before the node is
// cordoned. What cannot be asked is no verdict: the move finds out, and
// says the same (appsRoleRefusal).
func (d *drainer) lockPreflight(ctx context.Context, pods []corev1.Pod) error {
	apps := map[string]map[string]bool{}
	seen := map[process]bool{}
	for i := range pods {
		p := &pods[i]
		if !isUnit(p) || podFinished(p) || !kube.PodReady(p) {
			continue
		}
		proc := process{p.Namespace, p.Labels[kube.LabelApp], p.Labels[kube.LabelProcess]}
		if seen[proc] {
			continue
		}
		seen[proc] = true
		if n, err := d.readyElsewhere(ctx, proc); err != nil || n > 0 {
			continue
		}
		if apps[proc.namespace] == nil {
			apps[proc.namespace] = map[string]bool{}
		}
		apps[proc.namespace][proc.app] = true
	}
	refused := &AppsRoleError{Node: d.node.Name, User: d.o.User, Apps: map[string][]string{}}
	namespaces := make([]string, 0, len(apps))
	for ns := range apps {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		missing, asked := d.missingAppAccess(ctx, ns)
		if !asked {
			return nil
		}
		if len(missing) == 0 {
			continue
		}
		if refused.Missing == nil {
			refused.Missing = missing
		}
		for a := range apps[ns] {
			refused.Apps[ns] = append(refused.Apps[ns], a)
		}
	}
	if len(refused.Apps) > 0 {
		return refused
	}
	return nil
}

// missingAppAccess is what the user may not do in namespace ns of what
// moving an app's units needs (appAccess), as "VERBS RESOURCE" in
// appAccess's order; asked is false when a question went unanswered.
func (d *drainer) missingAppAccess(ctx context.Context, ns string) (missing []string, asked bool) {
	verbs := map[string][]string{}
	for _, a := range appAccess {
		a.namespace = ns
		allowed, ok := a.allowed(ctx, d.client)
		if !ok {
			return nil, false
		}
		if !allowed {
			res := kube.ResourceName(a.group, a.resource, a.sub)
			if verbs[res] == nil {
				missing = append(missing, res)
			}
			verbs[res] = append(verbs[res], a.verb)
		}
	}
	for i, res := range missing {
		missing[i] = strings.Join(verbs[res], ",") + " " + res
	}
	return missing, true
}

// appsRoleRefusal rewrites a refusal met while moving proc's units (its
// deploy lock, its scale): the binding that is missing, where, and the
// command that makes it.
func (d *drainer) appsRoleRefusal(proc process, step string, err error) error {
	if !apierrors.IsForbidden(err) {
		return fmt.Errorf("%s: %s: %w", proc, step, kube.TranslateError(err))
	}
	return &kube.Error{Err: err, Msg: fmt.Sprintf("%s: %s: forbidden in namespace %q: bind the %s ClusterRole there: %s",
		proc, step, proc.namespace, kube.ClusterAdminAppsRole, kube.BindAppsRoleCommand(d.o.User, proc.namespace))}
}
