package access

import (
	"cmp"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/doctor"
	"tug.dev/tug/pkg/kube"
)

// The level marker: every level's Role grants "use" on the made-up
// resource levels.tug.dev, named for each level it holds. RBAC accepts
// rules for resources no API serves, and a SelfSubjectAccessReview of it
// says which level the caller holds (a cluster-admin's "*" holds them
// all). It is how tug tells a developer from an operator: a deploy
// rewrites an app's routes, jobs and record, so RBAC on kinds cannot
// tell a deploy from 'tug domain add'.
const (
	markerGroup    = "tug.dev"
	markerResource = "levels"
	markerVerb     = "use"
)

// LabelLevel is on tug's RoleBindings and CI ServiceAccounts: the level
// granted.
const LabelLevel = "tug.dev/access-level"

// Role is the namespaced Role of level l, made from what tug's commands
// of that level and below need (Rules).
func Role(l Level, namespace string) *rbacv1.Role {
	labels := map[string]string{kube.LabelManagedBy: kube.ManagedBy, LabelLevel: string(l)}
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: l.RoleName(), Namespace: namespace, Labels: labels},
		Rules:      Rules(l),
	}
}

// Rules are what level l may do in a namespace:
//
//   - viewer: get, list and watch of what tug's namespaced commands use
//     (pkg/doctor's permission table), but no Secrets (release records
//     and config hold values), no exec or attach; pods/log; who has
//     access (RoleBindings).
//   - developer: everything tug's namespaced commands use (a deploy
//     applies every kind an app owns).
//   - operator: the developer's, and the operator marker.
//   - admin: the operator's, and access: Roles, RoleBindings, CI
//     ServiceAccounts and their tokens.
//
// Every level also holds its marker and those below it.
func Rules(l Level) []rbacv1.PolicyRule {
	var perms []rule
	if l.Holds(Developer) {
		perms = namespaced(func(doctor.Permission) bool { return true })
	} else {
		perms = namespaced(viewable)
	}
	perms = append(perms, rule{"rbac.authorization.k8s.io", "rolebindings", "get"}, rule{"rbac.authorization.k8s.io", "rolebindings", "list"})
	if l.Holds(Admin) {
		perms = append(perms, adminRules()...)
	}
	out := fold(perms)
	var names []string
	for _, x := range Levels {
		if l.Holds(x) {
			names = append(names, string(x))
		}
	}
	return append(out, rbacv1.PolicyRule{APIGroups: []string{markerGroup}, Resources: []string{markerResource}, ResourceNames: names, Verbs: []string{markerVerb}})
}

// viewable is a permission a viewer holds: reading, never a Secret, and
// never a stream into a container (exec through WebSocket is authorised as
// get).
func viewable(p doctor.Permission) bool {
	switch {
	case p.Verb != "get" && p.Verb != "list" && p.Verb != "watch":
		return false
	case p.Group == "" && p.Resource == "secrets":
		return false
	case p.Group == "" && p.Resource == "pods" && (p.Subresource == "exec" || p.Subresource == "attach"):
		return false
	}
	return true
}

// adminRules are access itself: Roles (tug makes the levels' Roles when
// missing), RoleBindings (grants), ServiceAccounts and tokens (CI).
func adminRules() []rule {
	var out []rule
	add := func(group, resource string, verbs ...string) {
		for _, v := range verbs {
			out = append(out, rule{group, resource, v})
		}
	}
	add("rbac.authorization.k8s.io", "roles", "get", "list", "create", "update", "patch")
	add("rbac.authorization.k8s.io", "rolebindings", "create", "update", "patch", "delete")
	add("", "serviceaccounts", "get", "list", "create", "delete")
	add("", "serviceaccounts/token", "create")
	return out
}

// rule is one verb on one resource ("pods/log").
type rule struct{ group, resource, verb string }

func namespaced(keep func(doctor.Permission) bool) []rule {
	var out []rule
	for _, g := range doctor.CommandGroups() {
		for _, p := range g.Permissions {
			if p.Scope != doctor.ScopeNamespace || !keep(p) {
				continue
			}
			res := p.Resource
			if p.Subresource != "" {
				res += "/" + p.Subresource
			}
			out = append(out, rule{p.Group, res, p.Verb})
		}
	}
	return out
}

// verbOrder sorts verbs the way people read them in RBAC rules.
var verbOrder = map[string]int{"get": 0, "list": 1, "watch": 2, "create": 3, "update": 4, "patch": 5, "delete": 6}

// fold makes one PolicyRule per resource, sorted, so the Roles compare
// equal across runs.
func fold(perms []rule) []rbacv1.PolicyRule {
	type key struct{ group, resource string }
	verbs := map[key][]string{}
	for _, p := range perms {
		k := key{p.group, p.resource}
		if !slices.Contains(verbs[k], p.verb) {
			verbs[k] = append(verbs[k], p.verb)
		}
	}
	keys := make([]key, 0, len(verbs))
	for k := range verbs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.resource, b.resource)) })
	out := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, k := range keys {
		vs := verbs[k]
		slices.SortFunc(vs, func(a, b string) int { return cmp.Compare(verbOrder[a], verbOrder[b]) })
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: vs})
	}
	return out
}
