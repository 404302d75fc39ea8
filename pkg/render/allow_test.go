package render

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
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
			objs := Release(allowApp(router, "10.0.0.0/8", "192.0.2.7/32"), &app.Release{Version: 1, Image: "shop:1", Processes: map[string]string{"web": ""}}, nil)
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
			if got := objs.AllowUnenforced(); !slices.Equal(got, want) {
				t.Errorf("AllowUnenforced = %q, want %q", got, want)
			}
			if objs.NetworkPolicy == nil {
				t.Error("the NetworkPolicy stays, for direct traffic")
			}
		})
	}
	// no list: nothing at the router, nothing to warn of
	objs := Release(allowApp(clustersettings.RouterTraefik), &app.Release{Version: 1, Image: "shop:1", Processes: map[string]string{"web": ""}}, nil)
	if objs.Middleware != nil || len(ingressNamed(objs, "shop")) != 0 || len(ruleFilters(objs.Routes[0])[0]) != 0 || objs.AllowUnenforced() != nil {
		t.Errorf("without a list: middleware %v, annotations %v, filters %v", objs.Middleware, ingressNamed(objs, "shop"), ruleFilters(objs.Routes[0]))
	}
}
