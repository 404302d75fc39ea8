package deploy

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/route/routetest"
)

func gatewaySettings() *clustersettings.Stored {
	return &clustersettings.Stored{Found: true, Cluster: clustersettings.Settings{
		clustersettings.Gateway: "infra/router", clustersettings.AppsDomain: "apps.example.com", clustersettings.IngressClass: "traefik",
	}}
}

func getRouteObj(t *testing.T, dyn *dynamicfake.FakeDynamicClient, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn.Resource(route.HTTPRoutes).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("HTTPRoute %s: %v", name, err)
	}
	return u
}

// With a Gateway in the cluster settings, a deploy routes the web process
// through it: one HTTPRoute with the app's own host, the record says so,
// the result has the URL and the router's verdict.
func TestDeployRoutesThroughTheGateway(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	dyn := routetest.NewDynamic(t, routetest.Accepted)
	d := deps(c)
	d.Dynamic, d.Settings = dyn, gatewaySettings()
	// the fake has no controller to make units ready: --no-wait
	res, err := Roll(context.Background(), d, "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.URLs, []string{"http://shop-dev.apps.example.com/"}) {
		t.Errorf("URLs = %q", res.URLs)
	}
	r := getRouteObj(t, dyn, "shop")
	hosts, _, _ := unstructured.NestedStringSlice(r.Object, "spec", "hostnames")
	parents, _, _ := unstructured.NestedSlice(r.Object, "spec", "parentRefs")
	if !slices.Equal(hosts, []string{"shop-dev.apps.example.com"}) || len(parents) != 1 || r.GetLabels()["tug.dev/app"] != "shop" {
		t.Errorf("route hosts %q, parents %v, labels %v", hosts, parents, r.GetLabels())
	}
	if a := getApp(t, s, "shop"); a.Route == nil || a.Route.Gateway != "infra/router" || a.Route.Host != "shop-dev.apps.example.com" || a.Route.IngressClass != "traefik" {
		t.Errorf("record route %+v", a.Route)
	}
	// a domain joins the route; one with a certificate is the Ingress's
	if _, err := Configure(context.Background(), d, "shop", func(a *app.App) error {
		a.Domains = append(a.Domains, app.Domain{Host: "shop.example.com", Path: "/"}, app.Domain{Host: "example.com", Path: "/shop"},
			app.Domain{Host: "secure.example.com", Path: "/", TLSSecret: "shop-tls-secure-example-com"})
		return nil
	}, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	r = getRouteObj(t, dyn, "shop")
	hosts, _, _ = unstructured.NestedStringSlice(r.Object, "spec", "hostnames")
	if !slices.Equal(hosts, []string{"shop-dev.apps.example.com", "shop.example.com"}) {
		t.Errorf("route hosts %q", hosts)
	}
	// example.com/shop has a path of its own: a route of its own
	list, _ := dyn.Resource(route.HTTPRoutes).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if len(list.Items) != 2 {
		t.Fatalf("%d routes, want 2 (one per set of paths)", len(list.Items))
	}
	ing, err := c.NetworkingV1().Ingresses(ns).Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil || len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "secure.example.com" || *ing.Spec.IngressClassName != "traefik" || len(ing.Spec.TLS) != 1 {
		t.Errorf("Ingress %+v, %v; want only the host with a certificate, class traefik", ing, err)
	}
	// the settings lose their Gateway: the routes go, domains use the Ingress
	d.Settings = &clustersettings.Stored{Found: true, Cluster: clustersettings.Settings{}}
	if _, err := Configure(context.Background(), d, "shop", func(*app.App) error { return nil }, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if list, _ := dyn.Resource(route.HTTPRoutes).Namespace(ns).List(context.Background(), metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("%d routes left without a Gateway", len(list.Items))
	}
	if ing, _ := c.NetworkingV1().Ingresses(ns).Get(context.Background(), "shop", metav1.GetOptions{}); ing == nil || len(ing.Spec.Rules) != 3 {
		t.Errorf("without a Gateway every domain is the Ingress's: %+v", ing)
	}
}
