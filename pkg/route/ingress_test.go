package route_test

import (
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/route"
)

// Domains without a Gateway are rules of one Ingress per IngressClass:
// the default class's named after the app, the others APP-CLASS; paths
// of one host share its rule, and a host with a certificate gets TLS once.
func TestRenderIngressesByClass(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: ns, Route: &app.Route{IngressClass: "traefik"}, Domains: []app.Domain{
		{Host: "shop.example.com", Path: "/", TLSSecret: "shop-tls"},
		{Host: "shop.example.com", Path: "/api", TLSSecret: "shop-tls"},
		{Host: "internal.example.com", IngressClass: "nginx.internal"},
	}}
	labels := map[string]string{"app": "shop"}
	ings := route.RenderIngresses(a, "shop-web", labels)
	if len(ings) != 2 {
		t.Fatalf("%d Ingresses, want 2", len(ings))
	}
	byName := map[string]int{}
	for i, ing := range ings {
		byName[ing.Name] = i
		if ing.Labels["app"] != "shop" {
			t.Errorf("%s labels %v", ing.Name, ing.Labels)
		}
	}
	def, ok := byName["shop-web"]
	other, ok2 := byName[route.IngressName("shop", "nginx.internal")]
	if !ok || !ok2 || route.IngressName("shop", "nginx.internal") != "shop-nginx-internal" {
		t.Fatalf("Ingresses %v", byName)
	}
	d := ings[def]
	if *d.Spec.IngressClassName != "traefik" || len(d.Spec.Rules) != 1 || len(d.Spec.Rules[0].HTTP.Paths) != 2 || len(d.Spec.TLS) != 1 {
		t.Errorf("default Ingress %+v", d.Spec)
	}
	if b := d.Spec.Rules[0].HTTP.Paths[1].Backend.Service; b.Name != "shop-web" || d.Spec.Rules[0].HTTP.Paths[1].Path != "/api" {
		t.Errorf("backend %+v", b)
	}
	if o := ings[other]; *o.Spec.IngressClassName != "nginx.internal" || o.Spec.Rules[0].HTTP.Paths[0].Path != "/" || len(o.Spec.TLS) != 0 {
		t.Errorf("other class's Ingress %+v", o.Spec)
	}
}

// Through a Gateway only the domains that need an Ingress (a certificate
// of their own, a class named by hand) get one; with an allow list, the
// router's class names the Traefik Middleware, other classes get nothing.
func TestRenderIngressesBesideAGateway(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: ns, Allow: []string{"10.0.0.0/8"},
		Route: &app.Route{Gateway: "infra/router", IngressClass: "traefik", Router: clustersettings.RouterTraefik},
		Domains: []app.Domain{
			{Host: "shop.example.com"},
			{Host: "secure.example.com", TLSSecret: "shop-tls-secure"},
			{Host: "internal.example.com", IngressClass: "nginx"},
		}}
	ings := route.RenderIngresses(a, "shop", nil)
	if len(ings) != 2 {
		t.Fatalf("%d Ingresses, want 2 (the Gateway's domain has none)", len(ings))
	}
	for _, ing := range ings {
		got := ing.Annotations[route.TraefikMiddlewareAnnotation]
		switch ing.Name {
		case "shop":
			if got != "dev-shop-allow@kubernetescrd" || ing.Spec.Rules[0].Host != "secure.example.com" {
				t.Errorf("router class Ingress: middleware %q rules %+v", got, ing.Spec.Rules)
			}
		default:
			if got != "" {
				t.Errorf("%s names the middleware", ing.Name)
			}
		}
	}
	if m := route.RenderAllowMiddleware(a, nil); m == nil || m.GetName() != "shop-allow" {
		t.Errorf("middleware %v", m)
	}
	a.Allow = nil
	if m := route.RenderAllowMiddleware(a, nil); m != nil {
		t.Error("a middleware without an allow list")
	}
}
