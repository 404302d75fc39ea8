package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/progress"
)

// newDynamic is a fake dynamic client for the Gateway API. Its tracker
// cannot server-side-apply an object that does not exist, so an apply
// here creates or replaces the object; verdict, when not nil, is the
// status the router writes on every route applied.
func newDynamic(t *testing.T, verdict func(u *unstructured.Unstructured)) *dynamicfake.FakeDynamicClient {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		HTTPRoutes: "HTTPRouteList", Gateways: "GatewayList",
	})
	dyn.PrependReactor("patch", "httproutes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(p.GetPatch(), &u.Object); err != nil {
			return true, nil, err
		}
		u.SetGeneration(1)
		if verdict != nil {
			verdict(u)
		}
		tr := dyn.Tracker()
		if _, err := tr.Get(HTTPRoutes, p.GetNamespace(), p.GetName()); err == nil {
			return true, u, tr.Update(HTTPRoutes, u, p.GetNamespace())
		}
		return true, u, tr.Create(HTTPRoutes, u, p.GetNamespace())
	})
	return dyn
}

// accepted is the status a router writes on a route it accepts.
func accepted(u *unstructured.Unstructured) {
	setVerdict(u, "True", "Accepted", "")
}

func setVerdict(u *unstructured.Unstructured, status, reason, msg string) {
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"parentRef":      map[string]any{"name": "router", "namespace": "infra"},
		"controllerName": "example.com/router",
		"conditions": []any{
			map[string]any{"type": "Accepted", "status": status, "reason": reason, "message": msg, "observedGeneration": int64(1)},
			map[string]any{"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs", "observedGeneration": int64(1)},
		},
	}}, "status", "parents")
}

func gatewaySettings() *clustersettings.Stored {
	return &clustersettings.Stored{Found: true, Cluster: clustersettings.Settings{
		clustersettings.Gateway: "infra/router", clustersettings.AppsDomain: "apps.example.com", clustersettings.IngressClass: "traefik",
	}}
}

func getRouteObj(t *testing.T, dyn *dynamicfake.FakeDynamicClient, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn.Resource(HTTPRoutes).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
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
	dyn := newDynamic(t, accepted)
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
	list, _ := dyn.Resource(HTTPRoutes).Namespace(ns).List(context.Background(), metav1.ListOptions{})
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
	if list, _ := dyn.Resource(HTTPRoutes).Namespace(ns).List(context.Background(), metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("%d routes left without a Gateway", len(list.Items))
	}
	if ing, _ := c.NetworkingV1().Ingresses(ns).Get(context.Background(), "shop", metav1.GetOptions{}); ing == nil || len(ing.Spec.Rules) != 3 {
		t.Errorf("without a Gateway every domain is the Ingress's: %+v", ing)
	}
}

// A route the router refuses is reported with its reason and exit code
// 18, never as success.
func TestRefusedRouteIsReported(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: ns, Route: &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com"}}
	dyn := newDynamic(t, func(u *unstructured.Unstructured) {
		setVerdict(u, "False", "NotAllowedByListeners", "no listener admits routes from namespace dev")
	})
	d := Deps{Namespace: ns, Dynamic: dyn, Progress: progress.Nop{}}
	got, err := applyRoute(context.Background(), d, renderRoutes(a)[0], metav1.PatchOptions{FieldManager: "tug"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = confirmRouted(context.Background(), d, a, []*unstructured.Unstructured{got}, ProbeServe, nil)
	var refused *RouteError
	if !errors.As(err, &refused) || refused.ExitCode() != 18 || !strings.Contains(err.Error(), "NotAllowedByListeners: no listener admits routes from namespace dev") {
		t.Fatalf("confirmRouted = %v", err)
	}
}

func TestAppHostStaysOneLabel(t *testing.T) {
	if got := AppHost("shop", "dev", "apps.example.com"); got != "shop-dev.apps.example.com" {
		t.Errorf("AppHost = %q", got)
	}
	long := strings.Repeat("n", 60)
	a, b := AppHost("shop", long, "d.io"), AppHost("shop", long[:59]+"m", "d.io")
	label := strings.Split(a, ".")[0]
	if len(label) > 63 || !strings.HasPrefix(label, "shop-") || a == b {
		t.Errorf("AppHost for a long namespace = %q (%d), %q", a, len(label), b)
	}
}

func TestHostMatches(t *testing.T) {
	for _, tt := range []struct {
		listener, host string
		want           bool
	}{
		{"", "anything.example.com", true},
		{"*.apps.example.com", "shop-dev.apps.example.com", true},
		{"*.apps.example.com", "a.b.apps.example.com", false},
		{"*.apps.example.com", "apps.example.com", false},
		{"shop.example.com", "shop.example.com", true},
	} {
		if got := hostMatches(tt.listener, tt.host); got != tt.want {
			t.Errorf("hostMatches(%q, %q) = %v", tt.listener, tt.host, got)
		}
	}
}
