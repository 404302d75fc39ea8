// Package routetest is a fake Gateway API for tests of what tug routes:
// a dynamic client that server-side-applies HTTPRoutes (and Traefik's
// Middlewares) and writes the router's verdict on the routes.
package routetest

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

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
	applies := func(gvr schema.GroupVersionResource, verdict func(u *unstructured.Unstructured)) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
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
			if _, err := tr.Get(gvr, p.GetNamespace(), p.GetName()); err == nil {
				return true, u, tr.Update(gvr, u, p.GetNamespace())
			}
			return true, u, tr.Create(gvr, u, p.GetNamespace())
		}
	}
	dyn.PrependReactor("patch", "httproutes", applies(route.HTTPRoutes, verdict))
	dyn.PrependReactor("patch", "certificates", applies(route.Certificates, nil))
	dyn.PrependReactor("patch", "middlewares", applies(route.Middlewares, nil)) // Traefik's: no status
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
