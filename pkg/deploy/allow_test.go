package deploy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/route/routetest"
)

func traefikSettings(router string) *clustersettings.Stored {
	s := gatewaySettings()
	s.Cluster[clustersettings.Router] = router
	return s
}

func getMiddleware(t *testing.T, d Deps) *unstructured.Unstructured {
	t.Helper()
	u, err := d.Dynamic.Resource(route.Middlewares).Namespace(ns).Get(context.Background(), "shop-allow", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func setAllow(t *testing.T, d Deps, allow ...string) error {
	t.Helper()
	_, err := Configure(context.Background(), d, "shop", func(a *app.App) error { a.Allow = allow; return nil }, Options{NoWait: true})
	return err
}

// The Middleware comes with the list and goes with it; through a router
// tug cannot give the list to, the change warns.
func TestAllowMiddlewareFollowsTheList(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	d := deps(c)
	var warned []string
	dyn := routetest.NewDynamic(t, routetest.Accepted)
	d.Dynamic, d.Settings, d.Warn = dyn, traefikSettings(clustersettings.RouterTraefik), func(m string) { warned = append(warned, m) }
	if _, err := Roll(context.Background(), d, "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if err := setAllow(t, d, "192.0.2.0/24"); err != nil {
		t.Fatal(err)
	}
	m := getMiddleware(t, d)
	if m == nil || !kube.Owned(m.GetLabels(), "shop") {
		t.Fatalf("Middleware after allow add: %v", m)
	}
	if !route.RendersAllowFilter(getRouteObj(t, dyn, "shop")) {
		t.Errorf("the route does not name the Middleware: %v", getRouteObj(t, dyn, "shop").Object["spec"])
	}
	if len(warned) != 0 {
		t.Errorf("through Traefik nothing to warn of: %q", warned)
	}
	if err := setAllow(t, d); err != nil {
		t.Fatal(err)
	}
	if m := getMiddleware(t, d); m != nil {
		t.Errorf("the Middleware stays after the list was emptied")
	}
	if route.RendersAllowFilter(getRouteObj(t, dyn, "shop")) {
		t.Errorf("the route still names the Middleware")
	}

	d.Settings = traefikSettings(clustersettings.RouterOther)
	if err := setAllow(t, d, "192.0.2.0/24"); err != nil {
		t.Fatal(err)
	}
	if m := getMiddleware(t, d); m != nil {
		t.Errorf("a Middleware for router other")
	}
	if len(warned) == 0 || !strings.Contains(warned[0], `app "shop": the allow list is not enforced at the router for HTTPRoute shop`) || !strings.Contains(warned[0], "NetworkPolicy") {
		t.Errorf("warnings %q", warned)
	}
}

// A Middleware of the app's name that is not tug's stops the change before
// anything is written, and is never changed or deleted.
func TestAllowMiddlewareNotTugsIsLeftAlone(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	d := deps(c)
	d.Dynamic, d.Settings = routetest.NewDynamic(t, routetest.Accepted), traefikSettings(clustersettings.RouterTraefik)
	if _, err := Roll(context.Background(), d, "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
		"metadata": map[string]any{"name": "shop-allow", "namespace": ns, "labels": map[string]any{"team": "ops"}},
		"spec":     map[string]any{"ipAllowList": map[string]any{"sourceRange": []any{"0.0.0.0/0"}}}}}
	if _, err := d.Dynamic.Resource(route.Middlewares).Namespace(ns).Create(context.Background(), theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := setAllow(t, d, "192.0.2.0/24")
	var notOurs *kube.NotOwnedError
	if !errors.As(err, &notOurs) || notOurs.Kind != "Middleware" || notOurs.Name != "shop-allow" {
		t.Fatalf("allow add = %v, want a NotOwnedError for the Middleware", err)
	}
	if a := getApp(t, s, "shop"); len(a.Allow) != 0 {
		t.Errorf("the refused change was recorded: %q", a.Allow)
	}
	// a change with no list does not delete it either
	if _, err := Configure(context.Background(), d, "shop", func(*app.App) error { return nil }, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	m := getMiddleware(t, d)
	if ranges, _, _ := unstructured.NestedStringSlice(m.Object, "spec", "ipAllowList", "sourceRange"); m == nil || m.GetLabels()["team"] != "ops" || !slices.Equal(ranges, []string{"0.0.0.0/0"}) {
		t.Errorf("their Middleware changed: %v", m)
	}
}
