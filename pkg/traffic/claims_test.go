package traffic

import (
	"context"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/route"
)

// otherRoute is app APP's HTTPRoute in namespace NS for host.
func otherRoute(ns, appName, host string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": appName, "namespace": ns},
		"spec":     map[string]any{"hostnames": []any{host}},
	}}
}

// A host another namespace routes cannot be taken, at any path: on a
// shared Gateway the longest path wins, so /login of prod's app would go
// to the app that names it. A user who may not list every namespace's
// routes cannot take a name under the apps domain but the app's own.
func TestDomainAddClaimsTheHostClusterWide(t *testing.T) {
	ctx := context.Background()
	prodHost := route.AppHost("shop", "prod", "apps.example.com")
	setup := func(t *testing.T, forbidden bool) (deploy.Deps, *dynamicfake.FakeDynamicClient) {
		c, d := newApp(t)
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{route.HTTPRoutes: "HTTPRouteList"},
			otherRoute("prod", "shop", prodHost))
		if _, err := c.NetworkingV1().Ingresses("prod").Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "blog", Namespace: "prod"},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "blog.example.com"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if forbidden {
			deny := func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{}, "", nil)
			}
			dyn.PrependReactor("list", "httproutes", deny)
			c.PrependReactor("list", "ingresses", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() == "" {
					return deny(a)
				}
				return false, nil, nil
			})
		}
		d.Dynamic = dyn
		d.Settings = &clustersettings.Stored{Found: true, Cluster: clustersettings.Settings{clustersettings.AppsDomain: "apps.example.com"}}
		return d, dyn
	}
	for _, tc := range []struct {
		name      string
		forbidden bool
		host      string
		want      string // "" when added
	}{
		{"another namespace's app URL, at a path", false, prodHost, "is routed by namespace prod (HTTPRoute prod/shop)"},
		{"another namespace's Ingress host", false, "blog.example.com", "is routed by namespace prod (Ingress prod/blog)"},
		{"a free name", false, "shop.example.com", ""},
		{"a free name under the apps domain, listed", false, "promo.apps.example.com", ""},
		{"unlisted: a name under the apps domain", true, "promo.apps.example.com", "may not list the routes of every namespace"},
		{"unlisted: another namespace's app URL", true, prodHost, "may not list the routes of every namespace"},
		{"unlisted: a domain of the user's own", true, "shop.example.com", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := setup(t, tc.forbidden)
			_, err := DomainAdd(ctx, d, DomainAddOptions{App: "shop", Host: tc.host, Path: "/login"}, deploy.Options{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			a, gerr := (&app.Store{Client: d.Client, Namespace: ns}).GetApp(ctx, "shop")
			if gerr != nil || len(a.Domains) != 0 {
				t.Errorf("refused, but the record has domains %+v (%v)", a.Domains, gerr)
			}
		})
	}
}

// Settings that cannot be read (or name no apps domain) leave the
// apps-domain guard on: the domain of the app's own URL stands in.
func TestAppsDomainFallsBackToTheAppsOwnURL(t *testing.T) {
	a := &app.App{Name: "shop", Route: &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com"}}
	for _, s := range []*clustersettings.Stored{nil, {Unreadable: true, Cluster: clustersettings.Settings{}}} {
		if got := appsDomain(deploy.Deps{Settings: s}, a); got != "apps.example.com" {
			t.Errorf("settings %+v: apps domain %q, want the app URL's", s, got)
		}
	}
	named := &clustersettings.Stored{Found: true, Cluster: clustersettings.Settings{clustersettings.AppsDomain: "apps.other.test"}}
	if got := appsDomain(deploy.Deps{Settings: named}, a); got != "apps.other.test" {
		t.Errorf("named: %q", got)
	}
	if got := appsDomain(deploy.Deps{}, &app.App{Name: "shop"}); got != "" {
		t.Errorf("no settings, no URL: %q", got)
	}
}
