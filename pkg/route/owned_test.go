package route_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/route/routetest"
)

const ns = "dev"

func object(gvr schema.GroupVersionResource, kind, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(ns)
	u.SetLabels(labels)
	return u
}

func names(t *testing.T, c route.Client, gvr schema.GroupVersionResource) []string {
	t.Helper()
	l, err := c.Dynamic.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetName())
	}
	return out
}

// Removing stale objects deletes only what the app owns and keep does not
// name, for each kind tug writes through the dynamic client; another
// tool's object with the app's name label is left alone.
func TestRemoveStaleDeletesOnlyTheAppsOwn(t *testing.T) {
	for _, k := range []struct {
		gvr    schema.GroupVersionResource
		kind   string
		remove func(c route.Client, keep *unstructured.Unstructured) error
	}{
		{route.HTTPRoutes, "HTTPRoute", func(c route.Client, keep *unstructured.Unstructured) error {
			return c.RemoveStale(context.Background(), "shop", []*unstructured.Unstructured{keep})
		}},
		{route.Middlewares, "Middleware", func(c route.Client, keep *unstructured.Unstructured) error {
			return c.RemoveStaleMiddlewares(context.Background(), "shop", keep)
		}},
		{route.Certificates, "Certificate", func(c route.Client, keep *unstructured.Unstructured) error {
			return c.RemoveStaleCertificates(context.Background(), "shop", []*unstructured.Unstructured{keep})
		}},
	} {
		t.Run(k.kind, func(t *testing.T) {
			c := route.Client{Dynamic: routetest.NewDynamic(t, nil), Namespace: ns}
			ctx := context.Background()
			theirs := map[string]string{kube.LabelApp: "shop"} // no managed-by: not tug's
			for _, o := range []*unstructured.Unstructured{
				object(k.gvr, k.kind, "shop-keep", kube.AppLabels("shop")),
				object(k.gvr, k.kind, "shop-stale", kube.AppLabels("shop")),
				object(k.gvr, k.kind, "shop-helm", theirs),
				object(k.gvr, k.kind, "blog", kube.AppLabels("blog")),
			} {
				if _, err := c.Dynamic.Resource(k.gvr).Namespace(ns).Create(ctx, o, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := k.remove(c, object(k.gvr, k.kind, "shop-keep", nil)); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(names(t, c, k.gvr), " "); got != "blog shop-helm shop-keep" {
				t.Errorf("left %q, want blog shop-helm shop-keep", got)
			}
		})
	}
}

// A user who may not list a kind tug writes has none of the app's to
// remove when nothing is kept (an older Role: app remove goes on); with
// objects to keep, the refusal is the error.
func TestRemoveStaleForbidden(t *testing.T) {
	dyn := routetest.NewDynamic(t, nil)
	dyn.PrependReactor("list", "certificates", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(route.Certificates.GroupResource(), "", errors.New("no"))
	})
	c := route.Client{Dynamic: dyn, Namespace: ns}
	if err := c.RemoveCertificates(context.Background(), "shop"); err != nil {
		t.Errorf("remove all while forbidden: %v", err)
	}
	keep := object(route.Certificates, "Certificate", "shop-tls", kube.AppLabels("shop"))
	if err := c.RemoveStaleCertificates(context.Background(), "shop", []*unstructured.Unstructured{keep}); err == nil {
		t.Error("remove stale while forbidden, with a Certificate to keep: no error")
	}
}

// Without the dynamic API a client has no routes: reads say NotFound,
// removals do nothing, and an apply says why it cannot write.
func TestClientWithoutDynamicAPI(t *testing.T) {
	c := route.Client{Namespace: ns}
	ctx := context.Background()
	if _, err := c.Get(ctx, "shop"); !apierrors.IsNotFound(err) {
		t.Errorf("Get: %v, want NotFound", err)
	}
	if _, err := c.GetMiddleware(ctx, "shop-allow"); !apierrors.IsNotFound(err) {
		t.Errorf("GetMiddleware: %v, want NotFound", err)
	}
	if err := c.RemoveAll(ctx, "shop"); err != nil {
		t.Errorf("RemoveAll: %v", err)
	}
	_, err := c.Apply(ctx, object(route.HTTPRoutes, "HTTPRoute", "shop", nil), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "no client for the Gateway API") {
		t.Errorf("Apply: %v", err)
	}
	if err := c.CertificatesServed(ctx, "ClusterIssuer/ca"); err == nil {
		t.Error("CertificatesServed without a client: no error")
	}
}

// A cluster that does not serve cert-manager's API refuses a domain's
// issuer before anything is written, saying so; one that serves it guards
// Certificates another tool made.
func TestGuardCertificates(t *testing.T) {
	ctx := context.Background()
	a := &app.App{Name: "shop", Namespace: ns, Domains: []app.Domain{
		{Host: "shop.example.com", TLSSecret: route.TLSSecretName("shop", "shop.example.com"), CertIssuer: "ClusterIssuer/ca"},
	}}
	certs := route.RenderCertificates(a)
	dyn := routetest.NewDynamic(t, nil)
	c := route.Client{Dynamic: dyn, Namespace: ns}
	if err := c.GuardCertificates(ctx, certs); err != nil {
		t.Fatalf("nothing in the way: %v", err)
	}
	if err := c.ApplyCertificates(ctx, certs, metav1.PatchOptions{FieldManager: kube.FieldManager}); err != nil {
		t.Fatal(err)
	}
	if err := c.GuardCertificates(ctx, certs); err != nil {
		t.Fatalf("the app's own Certificate: %v", err)
	}
	mine := object(route.Certificates, "Certificate", certs[0].GetName(), map[string]string{"owner": "helm"})
	if _, err := dyn.Resource(route.Certificates).Namespace(ns).Update(ctx, mine, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var notOwned *kube.NotOwnedError
	if err := c.GuardCertificates(ctx, certs); !errors.As(err, &notOwned) {
		t.Errorf("another tool's Certificate: %v, want NotOwnedError", err)
	}
	unserved := routetest.NewDynamic(t, nil)
	unserved.PrependReactor("list", "certificates", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(route.Certificates.GroupResource(), "")
	})
	err := route.Client{Dynamic: unserved, Namespace: ns}.GuardCertificates(ctx, certs)
	if err == nil || !strings.Contains(err.Error(), "does not serve cert-manager's Certificate resource") {
		t.Errorf("unserved: %v", err)
	}
}
