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

// allowApp has routes through the Gateway, a host with a certificate of
// its own (an Ingress of the router's class) and a host of another class.
func allowApp(router string, allow ...string) *app.App {
	return &app.App{Name: "shop", Namespace: "dev", Allow: allow,
		Route: &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com", IngressClass: "traefik", Router: router},
		Domains: []app.Domain{{Host: "shop.example.com"}, {Host: "secure.example.com", TLSSecret: "shop-tls-secure-example-com"},
			{Host: "old.example.com", IngressClass: "nginx"}}}
}

// ruleFilters are the filters of each rule of route r but the response
// header every rule sets (route.RouteHeader).
func ruleFilters(r *unstructured.Unstructured) [][]any {
	rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules")
	var out [][]any
	for _, rule := range rules {
		f, _, _ := unstructured.NestedSlice(rule.(map[string]any), "filters")
		var kept []any
		for _, x := range f {
			if x.(map[string]any)["type"] != "ResponseHeaderModifier" {
				kept = append(kept, x)
			}
		}
		out = append(out, kept)
	}
	return out
}

func ingressNamed(objs Objects, name string) map[string]string {
	for _, i := range objs.Ingresses {
		if i.Name == name {
			return i.Annotations
		}
	}
	return nil
}

// Each router gets the list the way it enforces it, and only that router:
// Traefik a Middleware its routes and its Ingresses name, ingress-nginx its
// annotations on its Ingresses; whatever the router does not enforce is
// named, for the warning.
func TestAllowListIsTheRoutersOwn(t *testing.T) {
	for _, router := range []string{clustersettings.RouterTraefik, clustersettings.RouterIngressNginx, clustersettings.RouterOther, ""} {
		t.Run("router="+router, func(t *testing.T) {
			objs := Render(allowApp(router, "10.0.0.0/8", "192.0.2.7/32"), &app.Release{Version: 1, Image: "shop:1", Processes: map[string]string{"web": ""}}, nil)
			if len(objs.Routes) != 1 || len(objs.Ingresses) != 2 {
				t.Fatalf("%d routes, %d ingresses", len(objs.Routes), len(objs.Ingresses))
			}
			m, own, other := objs.Middleware, ingressNamed(objs, "shop"), ingressNamed(objs, "shop-nginx")
			filters := ruleFilters(objs.Routes[0])
			var want []string
			switch router {
			case clustersettings.RouterTraefik:
				if m == nil || m.GetName() != "shop-allow" || m.GetNamespace() != "dev" || !kube.Owned(m.GetLabels(), "shop") {
					t.Fatalf("Middleware %v", m)
				}
				ranges, _, _ := unstructured.NestedStringSlice(m.Object, "spec", "ipAllowList", "sourceRange")
				if !slices.Equal(ranges, []string{"10.0.0.0/8", "192.0.2.7/32"}) {
					t.Errorf("sourceRange %q", ranges)
				}
				if _, set, _ := unstructured.NestedMap(m.Object, "spec", "ipAllowList", "ipStrategy"); set {
					t.Error("an ipStrategy trusts X-Forwarded-For, which any client can write")
				}
				for _, f := range filters {
					ref, _ := f[0].(map[string]any)["extensionRef"].(map[string]any)
					if len(f) != 1 || f[0].(map[string]any)["type"] != "ExtensionRef" || ref["group"] != "traefik.io" || ref["kind"] != "Middleware" || ref["name"] != "shop-allow" {
						t.Errorf("rule filters %v", f)
					}
				}
				if len(own) != 1 || own[route.TraefikMiddlewareAnnotation] != "dev-shop-allow@kubernetescrd" {
					t.Errorf("the router's Ingress annotations %v", own)
				}
				want = []string{"Ingress shop-nginx"}
			case clustersettings.RouterIngressNginx:
				if len(own) != 2 || own[route.AllowAnnotations[0]] != "10.0.0.0/8,192.0.2.7/32" || own[route.AllowAnnotations[1]] != "10.0.0.0/8,192.0.2.7/32" {
					t.Errorf("the router's Ingress annotations %v", own)
				}
				want = []string{"HTTPRoute shop", "Ingress shop-nginx"}
			default:
				if len(own) != 0 {
					t.Errorf("an Ingress of an unnamed router has annotations %v", own)
				}
				want = []string{"HTTPRoute shop", "Ingress shop-nginx", "Ingress shop"}
			}
			if router != clustersettings.RouterTraefik {
				if m != nil {
					t.Errorf("a Middleware without Traefik: %v", m)
				}
				for _, f := range filters {
					if len(f) != 0 {
						t.Errorf("route filters without Traefik: %v", f)
					}
				}
			}
			if len(other) != 0 {
				t.Errorf("the Ingress of another class has annotations %v", other)
			}
			if got := unenforced(objs); !slices.Equal(got, want) {
				t.Errorf("unenforced = %q, want %q", got, want)
			}
			if objs.NetworkPolicy == nil {
				t.Error("the NetworkPolicy stays, for direct traffic")
			}
		})
	}
	// no list: nothing at the router, nothing to warn of
	objs := Render(allowApp(clustersettings.RouterTraefik), &app.Release{Version: 1, Image: "shop:1", Processes: map[string]string{"web": ""}}, nil)
	if objs.Middleware != nil || len(ingressNamed(objs, "shop")) != 0 || len(ruleFilters(objs.Routes[0])[0]) != 0 || unenforced(objs) != nil {
		t.Errorf("without a list: middleware %v, annotations %v, filters %v", objs.Middleware, ingressNamed(objs, "shop"), ruleFilters(objs.Routes[0]))
	}
}

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
		t.Errorf("the route does not name the Middleware: %v", ruleFilters(getRouteObj(t, dyn, "shop")))
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
