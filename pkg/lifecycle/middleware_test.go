package lifecycle

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/route/routetest"
)

func middleware(name string, labels map[string]string) *unstructured.Unstructured {
	l := map[string]any{}
	for k, v := range labels {
		l[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": l}}}
}

// The app's allow-list Middleware goes with the app; one that is not the
// app's stays.
func TestRemoveDeletesTheAppsMiddleware(t *testing.T) {
	c, _ := removeFixture(t)
	dyn := routetest.NewDynamic(t, nil)
	ctx := context.Background()
	for _, m := range []*unstructured.Unstructured{middleware("shop-allow", labelled("shop")), middleware("blog-allow", labelled("blog")), middleware("shop-ops", nil)} {
		if _, err := dyn.Resource(route.Middlewares).Namespace(ns).Create(ctx, m, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := deps(c)
	d.Dynamic = dyn
	if err := Remove(ctx, d, "shop", RemoveOptions{}); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	list, err := dyn.Resource(route.Middlewares).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, m := range list.Items {
		left = append(left, m.GetName())
	}
	if len(left) != 2 || left[0] != "blog-allow" || left[1] != "shop-ops" {
		t.Errorf("middlewares after Remove: %q, want blog-allow and shop-ops", left)
	}
}

// Export carries the Middleware of an app whose router is Traefik, without
// a namespace like the rest.
func TestExportHasTheMiddleware(t *testing.T) {
	_, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Release: 1, LastRelease: 1, Allow: []string{"192.0.2.0/24"},
		Route:     &app.Route{Router: "traefik"},
		Processes: map[string]app.Process{"web": {Replicas: 1}}})
	seedRelease(t, s, &app.Release{Version: 1, Image: "shop:1", Status: app.StatusDeployed, Processes: map[string]string{"web": ""}}, nil)
	e, err := Export(context.Background(), storeDeps(s), "shop", false)
	if err != nil {
		t.Fatal(err)
	}
	objs := e.Objects
	found := false
	for _, o := range objs {
		m, ok := o.(map[string]any)
		if !ok || m["kind"] != "Middleware" {
			continue
		}
		found = true
		u := unstructured.Unstructured{Object: m}
		ranges, _, _ := unstructured.NestedStringSlice(m, "spec", "ipAllowList", "sourceRange")
		if u.GetName() != "shop-allow" || u.GetNamespace() != "" || len(ranges) != 1 || ranges[0] != "192.0.2.0/24" {
			t.Errorf("exported Middleware %v", m)
		}
	}
	if !found {
		t.Errorf("export has no Middleware: %v", objs)
	}
}
