package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"tug.dev/tug/pkg/route"
)

// How an app's Gateway is found where the cluster settings name none
// (route.Discover), against the real API server and RBAC. The shared
// cluster's settings name its Gateway, and no test may change them, so no
// tug command here looks for one: the look is run as the library runs it
// for a command, and the commands are shown to keep to the settings'
// Gateway while the namespace has one of its own (the resolution order
// itself is TestWantResolutionOrder's, a unit test).
func TestGatewayDiscovery(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(h.Config)
	shared, err := dyn.Resource(gateways).Namespace(r.gatewayNS).Get(ctx, r.gateway, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	class, _, _ := unstructured.NestedString(shared.Object, "spec", "gatewayClassName")
	// the test's own Gateway: routes from its namespace only, for a host
	// no other test serves
	own := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "own"},
		"spec": map[string]any{"gatewayClassName": class, "listeners": []any{map[string]any{
			"name": "http", "protocol": "HTTP", "port": int64(80), "hostname": "*." + h.NS + ".discover.test",
			"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "Same"}}}}},
	}}
	if _, err := dyn.Resource(gateways).Namespace(h.NS).Create(ctx, own, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sharedRef, ownRef := r.gatewayNS+"/"+r.gateway, h.NS+"/own"
	// what an admin allows (gatewayClasses): the class's Gateways where
	// the shared one stands, and each namespace's own
	trust := r.gatewayNS + "/" + class + "," + class

	// here two admit the namespace's routes (the shared one admits All):
	// no guess, once the router has programmed the test's own
	var d route.Discovery
	h.Eventually(60*time.Second, "the namespace's own Gateway is trusted (Accepted and Programmed)", func() (bool, error) {
		d, err = route.Client{Dynamic: dyn, Namespace: h.NS, Kube: h.Client, Trust: trust}.Discover(ctx)
		if err != nil {
			return false, err
		}
		return slices.Contains(d.Candidates, ownRef), fmt.Errorf("candidates %q, untrusted %q", d.Candidates, d.Untrusted)
	})
	if d.Gateway != "" || !slices.Contains(d.Candidates, sharedRef) || !slices.Contains(d.Candidates, ownRef) {
		t.Errorf("in the namespace with its own Gateway: found %q among %q, want none among both %s and %s", d.Gateway, d.Candidates, sharedRef, ownRef)
	}
	if msg, loud := d.Message(); !loud {
		t.Errorf("several Gateways do not warn: %s", msg)
	}
	// another namespace: the test's Gateway (Same) does not admit it
	other := h.Another()
	d, err = route.Client{Dynamic: dyn, Namespace: other.NS, Kube: h.Client, Trust: trust}.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(d.Candidates, ownRef) || !slices.Contains(d.Candidates, sharedRef) {
		t.Errorf("in another namespace: candidates %q, want %s and not %s", d.Candidates, sharedRef, ownRef)
	}

	// a tenant's Gateway of the same class that admits All (issue 34.9):
	// it admits the other namespace's routes by its own spec, but stands
	// in a namespace the settings do not trust, so the other namespace
	// finds the admin's only, and the tenant's is named as untrusted
	tenant := own.DeepCopy()
	tenant.SetName("tenant")
	tenant.Object["spec"].(map[string]any)["listeners"] = []any{map[string]any{
		"name": "http", "protocol": "HTTP", "port": int64(80), "hostname": "*." + h.NS + ".tenant.test",
		"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}}
	if _, err := dyn.Resource(gateways).Namespace(h.NS).Create(ctx, tenant, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tenantRef := h.NS + "/tenant"
	d, err = route.Client{Dynamic: dyn, Namespace: other.NS, Kube: h.Client, Trust: trust}.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(d.Candidates, tenantRef) || !slices.Contains(d.Candidates, sharedRef) || !slices.ContainsFunc(d.Untrusted, func(s string) bool { return strings.HasPrefix(s, tenantRef+" ") }) {
		t.Errorf("another namespace beside a tenant's Gateway that admits All: candidates %q, untrusted %q; want %s and not %s", d.Candidates, d.Untrusted, sharedRef, tenantRef)
	}
	// without gatewayClasses nothing is found at all
	if d, err = (route.Client{Dynamic: dyn, Namespace: other.NS, Kube: h.Client}).Discover(ctx); err != nil || len(d.Candidates) != 0 {
		t.Errorf("no class allowed: candidates %q (%v), want none", d.Candidates, err)
	}

	// a developer (the Role tug ships) may not list Gateways: no error,
	// the look is skipped
	cfg, err := clientcmd.BuildConfigFromFlags("", adminRoleKubeconfig(t, h))
	if err != nil {
		t.Fatal(err)
	}
	d, err = route.Client{Dynamic: dynamic.NewForConfigOrDie(cfg), Namespace: h.NS, Kube: kubernetes.NewForConfigOrDie(cfg)}.Discover(ctx)
	if err != nil || !d.Forbidden || d.Gateway != "" {
		t.Errorf("as a developer: %+v, %v; want Forbidden and no error", d, err)
	}

	// the settings' Gateway wins over the namespace's own
	h.mustTug("app", "create", "web")
	h.mustTug("app", "deploy", "web", "--image", sampleV1)
	hr, err := dyn.Resource(route.HTTPRoutes).Namespace(h.NS).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parents, _, _ := unstructured.NestedSlice(hr.Object, "spec", "parentRefs")
	if len(parents) != 1 {
		t.Fatalf("HTTPRoute parents %v, want the settings' Gateway", parents)
	}
	p, _ := parents[0].(map[string]any)
	if p["namespace"] != r.gatewayNS || p["name"] != r.gateway {
		t.Errorf("HTTPRoute attaches to %v/%v, want the settings' %s", p["namespace"], p["name"], sharedRef)
	}
}
