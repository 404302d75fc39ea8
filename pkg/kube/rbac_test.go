package kube

import "testing"

func TestBindAppsRoleCommand(t *testing.T) {
	const head = "kubectl create rolebinding tug-cluster-admin-apps --clusterrole=tug-cluster-admin-apps "
	for _, c := range []struct{ user, ns, want string }{
		{"alice", "shop", "--user=alice -n shop"},
		{"system:serviceaccount:ops:remover", "shop", "--serviceaccount=ops:remover -n shop"},
		{"unknown", "shop", "--user=USER -n shop"},
		{"", "", "--user=USER -n NAMESPACE"},
		// a name a shell would split is not pasted into a command
		{"alice smith", "shop", "--user=USER -n shop"},
		{"a;rm -rf ~", "shop", "--user=USER -n shop"},
		{"$(id)", "shop", "--user=USER -n shop"},
		{"oidc:alice@example.com", "shop", "--user=oidc:alice@example.com -n shop"},
		{"system:serviceaccount:bad", "shop", "--user=system:serviceaccount:bad -n shop"},
	} {
		if got := BindAppsRoleCommand(c.user, c.ns); got != head+c.want {
			t.Errorf("BindAppsRoleCommand(%q, %q) = %q, want %q", c.user, c.ns, got, head+c.want)
		}
	}
}
