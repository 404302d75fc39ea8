package doctor

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/kube"
)

// Issue 22: the admin ClusterRole granted lease writes and ConfigMap reads
// in every namespace, kube-node-lease and kube-system included. Neither
// generated ClusterRole may, and the lease writes live only in the role
// meant for RoleBindings in app namespaces.
func TestClusterRoleWritesNoLeaseAndReadsNoConfigMap(t *testing.T) {
	for _, rule := range ClusterRole(kube.ClusterAdminRole).Rules {
		for _, res := range rule.Resources {
			switch res {
			case "leases", "configmaps", "secrets", "deployments/scale":
				t.Errorf("%s grants %v on %s in every namespace", kube.ClusterAdminRole, rule.Verbs, res)
			case "deployments":
				if !slices.Equal(rule.Verbs, []string{"list"}) {
					t.Errorf("%s grants %v on deployments; pool list needs list only", kube.ClusterAdminRole, rule.Verbs)
				}
			}
		}
	}
	got := map[string][]string{}
	for _, rule := range AppsClusterRole(kube.ClusterAdminAppsRole).Rules {
		for _, res := range rule.Resources {
			got[rule.APIGroups[0]+" "+res] = rule.Verbs
		}
	}
	want := map[string][]string{
		"coordination.k8s.io leases": {"get", "watch", "create", "update", "delete"},
		"apps deployments/scale":     {"get", "update"},
	}
	if len(got) != len(want) {
		t.Errorf("%s grants %v, want exactly %v", kube.ClusterAdminAppsRole, got, want)
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("%s: %s %v, want %v", kube.ClusterAdminAppsRole, k, got[k], v)
		}
	}
	// And the developer Role is unchanged by it: it still takes its own
	// apps' locks in its namespace.
	if !slices.ContainsFunc(Role("r", "").Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "leases") }) {
		t.Error("the developer Role lost the deploy lock")
	}
}

func tugDeployment(ns, app string) *appsv1.Deployment {
	l := kube.AppLabels(app)
	l[kube.LabelProcess] = "web"
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app + "-web", Namespace: ns, Labels: l}}
}

// An admin's doctor reviews the lock and scale in every namespace that holds
// tug's Deployments (not at cluster scope, not in the namespace checked),
// and names the one where tug-cluster-admin-apps is not bound.
func TestAppNamespacePermissionsAreReviewedInEachAppNamespace(t *testing.T) {
	c := newFakeCluster("37", func(a authorizationv1.ResourceAttributes) (bool, error) {
		if a.Resource == "leases" || a.Subresource == "scale" {
			return a.Namespace == "shop" || a.Namespace == "dev", nil
		}
		return a.Namespace == "" || a.Namespace == "dev", nil
	})
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"}}
	for _, d := range []*appsv1.Deployment{tugDeployment("shop", "web"), tugDeployment("shop", "api"), tugDeployment("blog", "site"), other} {
		if _, err := c.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Run(context.Background(), fakeEnv{client: c}, Options{ClientMinor: 37, All: true})
	if err != nil {
		t.Fatal(err)
	}
	var node GroupResult
	for _, g := range r.Groups {
		if g.Name == "node" {
			node = g
		} else if g.Status != StatusOK {
			t.Errorf("group %s: %s %v", g.Name, g.Status, g.Missing)
		}
	}
	want := "get,update deployments.apps/scale (namespace blog, through tug-cluster-admin-apps); " +
		"get,watch,create,update,delete leases.coordination.k8s.io (namespace blog, through tug-cluster-admin-apps)"
	if got := MissingSummary(node.Missing); node.Status != StatusFailed || got != want {
		t.Fatalf("node: %s %q, want failed %q", node.Status, got, want)
	}
	// (the developer's deploy lock group asks about leases in dev too)
	asked := map[string]bool{}
	for _, a := range c.asked {
		if a.Subresource == "scale" || a.Resource == "leases" && a.Namespace != "dev" {
			asked[a.Namespace] = true
		}
	}
	if len(asked) != 2 || !asked["shop"] || !asked["blog"] {
		t.Errorf("lock and scale reviewed in %v, want exactly shop and blog", asked)
	}
}

// A developer cannot list Deployments across the cluster: the namespace
// checked stands for the app namespaces.
func TestAppNamespacesFallBackToTheNamespace(t *testing.T) {
	c := newFakeCluster("37", namespaceOnly)
	c.PrependReactor("list", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", nil)
		}
		return false, nil, nil
	})
	if _, err := c.AppsV1().Deployments("shop").Create(context.Background(), tugDeployment("shop", "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), fakeEnv{client: c}, Options{ClientMinor: 37}); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.asked {
		if (a.Resource == "leases" || a.Subresource == "scale") && a.Namespace != "dev" {
			t.Errorf("review %+v outside the namespace checked", a)
		}
	}
	if p := (Permission{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Scope: ScopeAppNamespaces}); !strings.Contains(p.String(), "each app namespace") {
		t.Errorf("table entry reads %q", p)
	}
}
