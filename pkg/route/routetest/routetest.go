// Package routetest is a fake Gateway API for tests of what tug routes:
// a dynamic client that server-side-applies HTTPRoutes (and Traefik's
// Middlewares) and writes the router's verdict on the routes.
package routetest

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"tug.dev/tug/pkg/kube/kubetest"
	"tug.dev/tug/pkg/route"
)

// NewDynamic is a fake dynamic client for the Gateway API (and
// cert-manager's Certificates). Its tracker cannot server-side-apply an
// object that does not exist, so an apply here creates or replaces the
// object; verdict, when not nil, is the status the router writes on every
// route applied.
func NewDynamic(t *testing.T, verdict func(u *unstructured.Unstructured)) *dynamicfake.FakeDynamicClient {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		route.HTTPRoutes: "HTTPRouteList", route.Gateways: "GatewayList", route.Certificates: "CertificateList", route.Middlewares: "MiddlewareList",
	})
	routed := func(u *unstructured.Unstructured) {
		u.SetGeneration(1)
		if verdict != nil {
			verdict(u)
		}
	}
	generation := func(u *unstructured.Unstructured) { u.SetGeneration(1) }
	dyn.PrependReactor("patch", "httproutes", kubetest.Applies(dyn, routed))
	dyn.PrependReactor("patch", "certificates", kubetest.Applies(dyn, generation))
	dyn.PrependReactor("patch", "middlewares", kubetest.Applies(dyn, generation)) // Traefik's: no status
	return dyn
}

// Accepted is the status a router writes on a route it accepts.
func Accepted(u *unstructured.Unstructured) {
	SetVerdict(u, "True", "Accepted", "")
}

// SetVerdict writes a router's verdict on u for Gateway infra/router.
func SetVerdict(u *unstructured.Unstructured, status, reason, msg string) {
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"parentRef":      map[string]any{"name": "router", "namespace": "infra"},
		"controllerName": "example.com/router",
		"conditions": []any{
			map[string]any{"type": "Accepted", "status": status, "reason": reason, "message": msg, "observedGeneration": int64(1)},
			map[string]any{"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs", "observedGeneration": int64(1)},
		},
	}}, "status", "parents")
}
