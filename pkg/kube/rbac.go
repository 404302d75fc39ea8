package kube

import (
	"fmt"
	"regexp"
	"strings"
)

// plainName is a user name that can be pasted into a shell command as it
// is; another gets a placeholder.
var plainName = regexp.MustCompile(`^[A-Za-z0-9._@:+=,/-]+$`)

// The ClusterRoles that docs/rbac/ holds for cluster operators (generated
// from pkg/doctor's permission table). RBAC cannot narrow a grant to some
// Leases by name or label, so what the node commands do inside an app's
// namespace (take its deploy lock, add a unit) is a role of its own, bound
// with a RoleBinding in each namespace that holds tug apps: bound
// cluster-wide it would let its holder rewrite kube-node-lease heartbeats
// and kube-system leader elections.
const (
	ClusterAdminRole     = "tug-cluster-admin"
	ClusterAdminAppsRole = "tug-cluster-admin-apps"
)

// BindAppsRoleCommand is the kubectl command that grants user the
// ClusterAdminAppsRole in namespace ("NAMESPACE" when empty). user is the
// name the API server knows (kube.WhoAmI); a service account gets
// --serviceaccount, anyone else --user, an unknown caller a placeholder.
func BindAppsRoleCommand(user, namespace string) string {
	subject := "--user=USER"
	if rest, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok && strings.Count(rest, ":") == 1 && plainName.MatchString(rest) {
		subject = "--serviceaccount=" + rest
	} else if user != "unknown" && plainName.MatchString(user) {
		subject = "--user=" + user
	}
	if namespace == "" {
		namespace = "NAMESPACE"
	}
	return fmt.Sprintf("kubectl create rolebinding %s --clusterrole=%s %s -n %s", ClusterAdminAppsRole, ClusterAdminAppsRole, subject, namespace)
}
