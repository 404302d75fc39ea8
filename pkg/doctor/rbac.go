package doctor

import (
	"cmp"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/owned"
)

// verbOrder sorts verbs the way people read them in RBAC rules.
var verbOrder = map[string]int{"get": 0, "list": 1, "watch": 2, "create": 3, "update": 4, "patch": 5, "delete": 6, "deletecollection": 7}

// Role grants, in one namespace, everything the namespaced command groups
// need: bind it to an app developer. Generated into docs/rbac/ from the
// permission table.
func Role(name, namespace string) *rbacv1.Role {
	return role(name, namespace, CommandGroups())
}

// RoleFor is Role for a table of kinds other than deploy.Kinds (a test's,
// or another owner's).
func RoleFor(name, namespace string, kinds owned.Table) *rbacv1.Role {
	return role(name, namespace, commandGroups(kinds))
}

// role is Role from groups.
func role(name, namespace string, groups []CommandGroup) *rbacv1.Role {
	// Not labelled managed-by=tug: an admin owns these, not tug.
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Rules:      policyRules(groups, func(s Scope) bool { return s == ScopeNamespace }),
	}
}

// ClusterRole grants what the node and pool commands need across the
// cluster: bind it (with a ClusterRoleBinding) to cluster admins only. It
// writes no Lease and reads no ConfigMap: see AppsClusterRole.
func ClusterRole(name string) *rbacv1.ClusterRole {
	return clusterRole(name, func(s Scope) bool { return s == ScopeCluster || s == ScopeAllNamespaces })
}

// AppsClusterRole grants what the node commands need inside the namespaces
// that hold tug apps (an app's deploy lock, its Deployments' scale). It is
// a ClusterRole so it is defined once, but it is meant to be bound with a
// RoleBinding in each app namespace, never cluster-wide.
func AppsClusterRole(name string) *rbacv1.ClusterRole {
	return clusterRole(name, func(s Scope) bool { return s == ScopeAppNamespaces })
}

func clusterRole(name string, include func(Scope) bool) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      policyRules(CommandGroups(), include),
	}
}

// policyRules folds the table's permissions into one rule per resource.
func policyRules(groups []CommandGroup, include func(Scope) bool) []rbacv1.PolicyRule {
	type key struct{ group, resource string }
	verbs := map[key]map[string]bool{}
	for _, g := range groups {
		for _, p := range g.Permissions {
			if !include(p.Scope) {
				continue
			}
			res := p.Resource
			if p.Subresource != "" {
				res += "/" + p.Subresource
			}
			k := key{p.Group, res}
			if verbs[k] == nil {
				verbs[k] = map[string]bool{}
			}
			verbs[k][p.Verb] = true
		}
	}
	keys := make([]key, 0, len(verbs))
	for k := range verbs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.resource, b.resource))
	})
	rules := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, k := range keys {
		vs := make([]string, 0, len(verbs[k]))
		for v := range verbs[k] {
			vs = append(vs, v)
		}
		slices.SortFunc(vs, func(a, b string) int { return cmp.Compare(verbOrder[a], verbOrder[b]) })
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: vs})
	}
	return rules
}
