package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/doctor"
	"tug.dev/tug/pkg/kube"
)

// denyIn makes access reviews refuse the lock and the scale in the given
// namespaces, as when tug-cluster-admin-apps is not bound there.
func denyIn(fc *fakeCluster, namespaces ...string) {
	fc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		ra := r.Spec.ResourceAttributes
		lockOrScale := ra.Resource == "leases" || ra.Subresource == "scale"
		r.Status.Allowed = !(lockOrScale && (ra.Namespace == "" || slices.Contains(namespaces, ra.Namespace)))
		return true, r, nil
	})
}

// A node holding an app's last ready unit, in a namespace where the user
// may not take the app's deploy lock: removal stops before the cordon,
// naming the namespace, the app and the command that binds the role; an
// app that needs no lock (a ready unit elsewhere) is not held against it.
func TestRemoveStopsBeforeCordonWithoutTheAppsRole(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true), readyNode("other", true),
		unitPod("apps", "shop", "web", "shop-web-1", "n1", true), deployment("apps", "shop-web", 1),
		unitPod("blog", "site", "web", "site-web-1", "n1", true), unitPod("blog", "site", "web", "site-web-2", "other", true),
		deployment("blog", "site-web", 2))
	denyIn(fc, "apps", "blog")
	_, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{User: "system:serviceaccount:ops:remover", Timeout: 10 * time.Second})
	var are *AppsRoleError
	if !errors.As(err, &are) {
		t.Fatalf("want an AppsRoleError, got %v", err)
	}
	want := `forbidden: removing node "n1" moves the last ready unit of app apps/shop, under the app's deploy lock, and namespace "apps" does not let you take it ` +
		`(no get,watch,create,update,delete leases.coordination.k8s.io; get,update deployments.apps/scale); nothing was changed; ` +
		`bind the tug-cluster-admin-apps ClusterRole in that namespace: ` +
		`kubectl create rolebinding tug-cluster-admin-apps --clusterrole=tug-cluster-admin-apps --serviceaccount=ops:remover -n apps`
	if err.Error() != want {
		t.Fatalf("message\n %s\nwant\n %s", err, want)
	}
	if n := nodeExists(t, fc, "n1"); n == nil || n.Spec.Unschedulable {
		t.Fatal("the node must be left as it was")
	}
	if log := fc.log(); len(log) != 0 {
		t.Fatalf("refused removal acted: %v", log)
	}
}

func TestAppsRoleErrorNamesEveryNamespace(t *testing.T) {
	e := &AppsRoleError{Node: "n1", User: "alice", Apps: map[string][]string{"b": {"y"}, "a": {"x", "w"}}, Missing: []string{"create leases.coordination.k8s.io"}}
	want := `forbidden: removing node "n1" moves the last ready unit of apps a/w, a/x, b/y, under their deploy locks, and namespaces "a", "b" do not let you take them ` +
		`(no create leases.coordination.k8s.io); nothing was changed; bind the tug-cluster-admin-apps ClusterRole in each: ` +
		`kubectl create rolebinding tug-cluster-admin-apps --clusterrole=tug-cluster-admin-apps --user=alice -n a && ` +
		`kubectl create rolebinding tug-cluster-admin-apps --clusterrole=tug-cluster-admin-apps --user=alice -n b`
	if e.Error() != want {
		t.Fatalf("message\n %s\nwant\n %s", e, want)
	}
}

// When the reviews said yes but the API server refuses the lock anyway (a
// binding removed meanwhile, an authorizer the reviews do not reflect), the
// move's error says the same thing for that process.
func TestLockRefusedDuringTheMoveNamesTheBinding(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true), readyNode("other", true),
		unitPod("apps", "shop", "web", "shop-web-1", "n1", true), deployment("apps", "shop-web", 1))
	fc.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "tug-lock-shop", errors.New("RBAC: access denied"))
	})
	_, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{User: "alice", Timeout: 10 * time.Second})
	var de *DrainError
	if !errors.As(err, &de) || !apierrors.IsForbidden(err) {
		t.Fatalf("want a DrainError wrapping the 403, got %v", err)
	}
	want := `apps/shop (web): taking the app's deploy lock: forbidden in namespace "apps": bind the tug-cluster-admin-apps ClusterRole there: ` +
		`kubectl create rolebinding tug-cluster-admin-apps --clusterrole=tug-cluster-admin-apps --user=alice -n apps`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q lacks %q", err, want)
	}
	if slices.ContainsFunc(fc.log(), func(e string) bool { return strings.HasPrefix(e, "evict shop-web-1") || strings.HasPrefix(e, "scale") }) {
		t.Fatalf("the unit moved without the lock: %v", fc.log())
	}
}

// The preflight asks what the permission table says the node commands need
// in an app namespace, no more and no less.
func TestAppAccessIsTheTablesAppNamespacePermissions(t *testing.T) {
	var table []string
	for _, g := range doctor.CommandGroups() {
		for _, p := range g.Permissions {
			if p.Scope == doctor.ScopeAppNamespaces {
				table = append(table, p.Verb+" "+kube.ResourceName(p.Group, p.Resource, p.Subresource))
			}
		}
	}
	var asked []string
	for _, a := range appAccess {
		asked = append(asked, a.verb+" "+kube.ResourceName(a.group, a.resource, a.sub))
	}
	slices.Sort(table)
	slices.Sort(asked)
	if !slices.Equal(table, asked) {
		t.Fatalf("preflight asks %v; the table grants %v", asked, table)
	}
}

// With the tug-cluster-admin role, app records cannot be listed in every
// namespace (that would be every ConfigMap); pool list then finds the apps
// from tug's Deployments, whose node selector names the pool.
func TestListPoolsFromDeploymentsWithoutConfigMapReads(t *testing.T) {
	ctx := context.Background()
	n1 := readyNode("n1", true)
	n1.Labels[kube.LabelPool] = "web"
	client := fake.NewClientset(n1)
	forbidAllNamespaces := func(resource string) {
		client.PrependReactor("list", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() == "" {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC"))
			}
			return false, nil, nil
		})
	}
	forbidAllNamespaces("configmaps")
	dep := func(ns, appName, proc, pool string) {
		l := kube.AppLabels(appName)
		l[kube.LabelProcess] = proc
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: appName + "-" + proc, Namespace: ns, Labels: l}}
		if pool != "" {
			d.Spec.Template.Spec.NodeSelector = map[string]string{kube.LabelPool: pool}
		}
		if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dep("team-a", "shop", "web", "web")
	dep("team-a", "shop", "worker", "web") // one app, listed once
	dep("team-b", "ml", "web", "gpu")
	dep("team-c", "free", "web", "")
	// not tug's: no labels
	if _, err := client.AppsV1().Deployments("kube-system").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: map[string]string{kube.LabelPool: "web"}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// an app never deployed has a record and no Deployment
	if err := (&app.Store{Client: client, Namespace: "team-d"}).CreateApp(ctx, &app.App{Name: "new", Namespace: "team-d", Pool: "web"}); err != nil {
		t.Fatal(err)
	}
	ts := []cluster.Target{{Cluster: cluster.Cluster{Name: "prod"}, Client: client, Namespace: "team-d"}}
	res, err := ListPools(ctx, ts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range res.Pools {
		got[p.Name] = strings.Join(p.Apps, ",")
	}
	if got["web"] != "team-a/shop" || got["gpu"] != "team-b/ml" || len(got) != 2 || len(res.Warnings) != 0 {
		t.Fatalf("pools %+v, warnings %v; want web: team-a/shop, gpu: team-b/ml and no warning", res.Pools, res.Warnings)
	}

	// Without Deployments either, the context's namespace still tells
	// something, with a warning.
	forbidAllNamespaces("deployments")
	res, err = ListPools(ctx, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pools) != 1 || strings.Join(res.Pools[0].Apps, ",") != "team-d/new" || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `namespace "team-d" only`) {
		t.Fatalf("pools %+v, warnings %v; want team-d/new only, with a warning", res.Pools, res.Warnings)
	}
}
