package routetest

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"tug.dev/tug/pkg/route"
)

func obj(apiVersion, kind, name string, spec map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": "dev"}, "spec": spec})
	if err != nil {
		panic(err)
	}
	return b
}

func httpRoute(name, host string) []byte {
	return obj("gateway.networking.k8s.io/v1", "HTTPRoute", name, map[string]any{"hostnames": []any{host}})
}

func apply(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, name string, body []byte) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn.Resource(gvr).Namespace("dev").Patch(context.Background(), name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "tug"})
	if err != nil {
		t.Fatalf("apply %s %s: %v", gvr.Resource, name, err)
	}
	return u
}

func get(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn.Resource(gvr).Namespace("dev").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s: %v", gvr.Resource, name, err)
	}
	return u
}

func acceptedOf(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	parents, _, _ := unstructured.NestedSlice(u.Object, "status", "parents")
	if len(parents) != 1 {
		t.Fatalf("status.parents = %v, want one", parents)
	}
	conds, _, _ := unstructured.NestedSlice(parents[0].(map[string]any), "conditions")
	for _, c := range conds {
		if c := c.(map[string]any); c["type"] == "Accepted" {
			return c
		}
	}
	t.Fatalf("no Accepted condition in %v", conds)
	return nil
}

// An apply creates a route that does not exist and replaces one that
// does, at generation 1; with no verdict nobody writes its status.
func TestApplyCreatesThenReplaces(t *testing.T) {
	dyn := NewDynamic(t, nil)
	got := apply(t, dyn, route.HTTPRoutes, "shop", httpRoute("shop", "a.example.com"))
	if got.GetName() != "shop" || got.GetGeneration() != 1 {
		t.Errorf("apply answered %v", got.Object)
	}
	apply(t, dyn, route.HTTPRoutes, "shop", httpRoute("shop", "b.example.com"))
	stored := get(t, dyn, route.HTTPRoutes, "shop")
	if hosts, _, _ := unstructured.NestedStringSlice(stored.Object, "spec", "hostnames"); len(hosts) != 1 || hosts[0] != "b.example.com" {
		t.Errorf("hostnames after the second apply = %v", hosts)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(stored.Object, "status"); found {
		t.Errorf("status written with no verdict: %v", stored.Object["status"])
	}
	l, err := dyn.Resource(route.HTTPRoutes).Namespace("dev").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Errorf("list: %d routes, %v", len(l.Items), err)
	}
}

// The verdict is written on every route applied, as stored and as
// answered, but not on Certificates or Middlewares.
func TestVerdictOnRoutesOnly(t *testing.T) {
	var seen []string
	dyn := NewDynamic(t, func(u *unstructured.Unstructured) {
		seen = append(seen, u.GetName())
		Accepted(u)
	})
	answered := apply(t, dyn, route.HTTPRoutes, "shop", httpRoute("shop", "a.example.com"))
	if c := acceptedOf(t, answered); c["status"] != "True" {
		t.Errorf("answered Accepted = %v", c)
	}
	apply(t, dyn, route.HTTPRoutes, "blog", httpRoute("blog", "b.example.com"))
	if c := acceptedOf(t, get(t, dyn, route.HTTPRoutes, "blog")); c["status"] != "True" || c["reason"] != "Accepted" {
		t.Errorf("stored Accepted = %v", c)
	}

	apply(t, dyn, route.Certificates, "shop-tls", obj("cert-manager.io/v1", "Certificate", "shop-tls", map[string]any{"secretName": "shop-tls"}))
	apply(t, dyn, route.Middlewares, "shop-allow", obj("traefik.io/v1alpha1", "Middleware", "shop-allow", map[string]any{"ipAllowList": map[string]any{}}))
	for gvr, name := range map[schema.GroupVersionResource]string{route.Certificates: "shop-tls", route.Middlewares: "shop-allow"} {
		u := get(t, dyn, gvr, name)
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status"); found || u.GetGeneration() != 1 {
			t.Errorf("%s %s: generation %d, status %v", gvr.Resource, name, u.GetGeneration(), u.Object["status"])
		}
	}
	if len(seen) != 2 || seen[0] != "shop" || seen[1] != "blog" {
		t.Errorf("verdict asked about %v, want the two routes", seen)
	}
}

// Other patches and reads go to the fake's tracker; Gateways list.
func TestOtherRequestsReachTheTracker(t *testing.T) {
	dyn := NewDynamic(t, Accepted)
	apply(t, dyn, route.HTTPRoutes, "shop", httpRoute("shop", "a.example.com"))
	u, err := dyn.Resource(route.HTTPRoutes).Namespace("dev").Patch(context.Background(), "shop", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	if err != nil || u.GetLabels()["x"] != "y" {
		t.Fatalf("merge patch: %v, %v", u, err)
	}
	if hosts, _, _ := unstructured.NestedStringSlice(get(t, dyn, route.HTTPRoutes, "shop").Object, "spec", "hostnames"); len(hosts) != 1 {
		t.Errorf("merge patch lost the spec: %v", hosts)
	}
	if _, err := dyn.Resource(route.HTTPRoutes).Namespace("dev").Patch(context.Background(), "absent", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); err == nil {
		t.Error("merge patch of a route that does not exist succeeded")
	}
	for _, gvr := range []schema.GroupVersionResource{route.Gateways, route.Certificates, route.Middlewares} {
		if _, err := dyn.Resource(gvr).Namespace("infra").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Errorf("list %s: %v", gvr.Resource, err)
		}
	}
}

func TestApplyOfBadJSONFails(t *testing.T) {
	dyn := NewDynamic(t, nil)
	if _, err := dyn.Resource(route.HTTPRoutes).Namespace("dev").Patch(context.Background(), "shop", types.ApplyPatchType, []byte(`{not json`), metav1.PatchOptions{FieldManager: "tug"}); err == nil {
		t.Error("apply of bad JSON succeeded")
	}
}

// SetVerdict writes status.parents: one parent, Gateway infra/router,
// whose Accepted condition says status, reason and message at
// generation 1, and whose refs resolved.
func TestSetVerdict(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"parents": []any{"old"}}}}
	SetVerdict(u, "False", "NotAllowedByListeners", "no listener admits routes from namespace dev")
	parents, _, _ := unstructured.NestedSlice(u.Object, "status", "parents")
	if len(parents) != 1 {
		t.Fatalf("parents = %v", parents)
	}
	p := parents[0].(map[string]any)
	if ref := p["parentRef"].(map[string]any); ref["name"] != "router" || ref["namespace"] != "infra" {
		t.Errorf("parentRef = %v", ref)
	}
	c := acceptedOf(t, u)
	if c["status"] != "False" || c["reason"] != "NotAllowedByListeners" || c["message"] != "no listener admits routes from namespace dev" || c["observedGeneration"] != int64(1) {
		t.Errorf("Accepted = %v", c)
	}
	conds, _, _ := unstructured.NestedSlice(p, "conditions")
	if len(conds) != 2 || conds[1].(map[string]any)["type"] != "ResolvedRefs" || conds[1].(map[string]any)["status"] != "True" {
		t.Errorf("conditions = %v", conds)
	}

	Accepted(u)
	if c := acceptedOf(t, u); c["status"] != "True" || c["reason"] != "Accepted" || c["message"] != "" {
		t.Errorf("Accepted(u) wrote %v", c)
	}
}
