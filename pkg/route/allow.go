package route

import (
	"net"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
)

// An app's allow list is enforced where routed traffic enters: the units
// behind a router see the router's address, not the client's, so the
// NetworkPolicy cannot tell clients apart there. Which router it is comes
// from the cluster settings (clustersettings.Router, recorded in
// a.Route.Router):
//
//   - traefik: an ipAllowList Middleware (traefik.io/v1alpha1) of the app,
//     referenced from every rule of its HTTPRoutes (an ExtensionRef filter)
//     and from its Ingresses of the router's class (an annotation). It
//     filters on the connection's source address (no ipStrategy: an
//     X-Forwarded-For header, which any client can write, is not trusted).
//   - ingress-nginx: its source-range annotations on those Ingresses.
//   - anything else: nothing at the router; tug warns.

// Middlewares is Traefik's Middleware resource.
var Middlewares = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "middlewares"}

// AllowMiddlewareName is the app's ipAllowList Middleware.
func AllowMiddlewareName(appName string) string { return appName + "-allow" }

// TraefikMiddlewareAnnotation is how an Ingress names Traefik Middlewares
// (NAMESPACE-NAME@kubernetescrd).
const TraefikMiddlewareAnnotation = "traefik.ingress.kubernetes.io/router.middlewares"

// TraefikMiddlewareRef is the app's allow-list Middleware as Traefik's
// Ingress provider names it.
func TraefikMiddlewareRef(a *app.App) string {
	return a.Namespace + "-" + AllowMiddlewareName(a.Name) + "@kubernetescrd"
}

// Router is the router the app's route records ("" when none is named).
func Router(a *app.App) string {
	if a.Route == nil {
		return ""
	}
	return a.Route.Router
}

// allowFilters are the filters of every rule of the app's HTTPRoutes: the
// allow-list Middleware, through Traefik with a list set; none otherwise.
func allowFilters(a *app.App) []any {
	if len(a.Allow) == 0 || Router(a) != clustersettings.RouterTraefik {
		return nil
	}
	return []any{map[string]any{
		"type":         "ExtensionRef",
		"extensionRef": map[string]any{"group": Middlewares.Group, "kind": "Middleware", "name": AllowMiddlewareName(a.Name)},
	}}
}

// RendersAllowFilter says whether route r carries the allow-list filter on
// every rule: whether the router enforces the list for its hosts.
func RendersAllowFilter(r *unstructured.Unstructured) bool {
	rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules")
	for _, rule := range rules {
		m, _ := rule.(map[string]any)
		filters, _, _ := unstructured.NestedSlice(m, "filters")
		found := false
		for _, f := range filters {
			fm, _ := f.(map[string]any)
			if kind, _, _ := unstructured.NestedString(fm, "extensionRef", "kind"); kind == "Middleware" {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return len(rules) > 0
}

// RenderAllowMiddleware is Traefik's ipAllowList Middleware of the app,
// with labels, which its HTTPRoutes and Ingresses name when the cluster's
// router is Traefik and the app has an allow list: nil otherwise. It
// filters on the connection's source address; no ipStrategy, so an
// X-Forwarded-For header, which any client can send, is not trusted.
func RenderAllowMiddleware(a *app.App, labels map[string]string) *unstructured.Unstructured {
	if len(a.Allow) == 0 || Router(a) != clustersettings.RouterTraefik {
		return nil
	}
	ranges := make([]any, len(a.Allow))
	for i, c := range a.Allow {
		ranges[i] = c
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": Middlewares.GroupVersion().String(),
		"kind":       "Middleware",
		"metadata":   map[string]any{"name": AllowMiddlewareName(a.Name), "namespace": a.Namespace, "labels": toAny(labels)},
		"spec":       map[string]any{"ipAllowList": map[string]any{"sourceRange": ranges}},
	}}
}

// admits says whether allow (CIDRs; empty admits everyone) admits ip.
func admits(allow []string, ip net.IP) bool {
	if len(allow) == 0 {
		return true
	}
	for _, c := range allow {
		if _, n, err := net.ParseCIDR(c); err == nil && n.Contains(ip) {
			return true
		}
	}
	return false
}

// enforcedAt says whether the router that serves u filters by the app's
// allow list: through the Gateway, Traefik only; through an Ingress of the
// router's class (a host with a certificate of its own), Traefik and
// ingress-nginx. servedURLs holds only URLs of the router's class.
func enforcedAt(a *app.App, host string) bool {
	switch Router(a) {
	case clustersettings.RouterTraefik:
		return true
	case clustersettings.RouterIngressNginx:
		for _, d := range a.Domains {
			if d.Host == host && ThroughIngress(d) {
				return true
			}
		}
	}
	return false
}

// sourceTowards is the address this machine's packets to addr leave from:
// what a router reached directly sees as the client. A UDP "connection"
// only picks the route; it sends nothing. nil when unknown.
func sourceTowards(addr string) net.IP {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return nil
	}
	defer c.Close()
	if u, ok := c.LocalAddr().(*net.UDPAddr); ok {
		return u.IP
	}
	return nil
}
