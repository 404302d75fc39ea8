package deploy_test

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
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/owned"
	"tug.dev/tug/pkg/render"
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

func names(t *testing.T, c owned.Clients, gvr schema.GroupVersionResource) []string {
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

// Pruning deletes only what the app owns and keep does not name, for each
// kind tug writes through the dynamic client; another tool's object with
// the app's name label is left alone.
func TestRemoveStaleDeletesOnlyTheAppsOwn(t *testing.T) {
	for _, k := range []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{
		{route.HTTPRoutes, "HTTPRoute"},
		{route.Middlewares, "Middleware"},
		{route.Certificates, "Certificate"},
	} {
		t.Run(k.kind, func(t *testing.T) {
			c := owned.Clients{Dynamic: routetest.NewDynamic(t, nil), Namespace: ns}
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
			keep := []owned.Object{object(k.gvr, k.kind, "shop-keep", nil)}
			if err := owned.Prune(ctx, c, deploy.Kinds(), owned.App, "shop", keep); err != nil {
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
	c := owned.Clients{Dynamic: dyn, Namespace: ns}
	certs := deploy.Kinds().Only("Certificate")
	if err := owned.Prune(context.Background(), c, certs, owned.App, "shop", nil); err != nil {
		t.Errorf("remove all while forbidden: %v", err)
	}
	keep := object(route.Certificates, "Certificate", "shop-tls", kube.AppLabels("shop"))
	if err := owned.Prune(context.Background(), c, certs, owned.App, "shop", []owned.Object{keep}); err == nil {
		t.Error("remove stale while forbidden, with a Certificate to keep: no error")
	}
}

// Without the dynamic API a client has no routes: reads say NotFound,
// removals do nothing, and an apply says why it cannot write.
func TestClientWithoutDynamicAPI(t *testing.T) {
	c := owned.Clients{Namespace: ns}
	ctx := context.Background()
	kinds := deploy.Kinds().Only("HTTPRoute", "Middleware")
	theirs := []owned.Object{object(route.HTTPRoutes, "HTTPRoute", "shop", nil), object(route.Middlewares, "Middleware", "shop-allow", nil)}
	if err := owned.Guard(ctx, c, kinds, owned.App, theirs); err != nil {
		t.Errorf("Guard: %v, want none there", err)
	}
	if err := owned.Prune(ctx, c, kinds, owned.App, "shop", nil); err != nil {
		t.Errorf("Prune: %v", err)
	}
	err := owned.Apply(ctx, c, kinds, theirs[:1], metav1.PatchOptions{}, nil)
	if err == nil || !strings.Contains(err.Error(), "no client for the Gateway API") {
		t.Errorf("Apply: %v", err)
	}
	if err := (route.Client{Namespace: ns}).CertificatesServed(ctx, "ClusterIssuer/ca"); err == nil {
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
	certs := render.Objects{Certificates: route.RenderCertificates(a)}.List()
	dyn := routetest.NewDynamic(t, nil)
	c := owned.Clients{Dynamic: dyn, Namespace: ns}
	kinds := deploy.Kinds()
	if err := owned.Guard(ctx, c, kinds, owned.App, certs); err != nil {
		t.Fatalf("nothing in the way: %v", err)
	}
	if err := owned.Apply(ctx, c, kinds, certs, metav1.PatchOptions{FieldManager: kube.FieldManager}, nil); err != nil {
		t.Fatal(err)
	}
	if err := owned.Guard(ctx, c, kinds, owned.App, certs); err != nil {
		t.Fatalf("the app's own Certificate: %v", err)
	}
	mine := object(route.Certificates, "Certificate", certs[0].GetName(), map[string]string{"owner": "helm"})
	if _, err := dyn.Resource(route.Certificates).Namespace(ns).Update(ctx, mine, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var notOwned *kube.NotOwnedError
	if err := owned.Guard(ctx, c, kinds, owned.App, certs); !errors.As(err, &notOwned) {
		t.Errorf("another tool's Certificate: %v, want NotOwnedError", err)
	}
	unserved := routetest.NewDynamic(t, nil)
	unserved.PrependReactor("list", "certificates", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(route.Certificates.GroupResource(), "")
	})
	err := owned.Guard(ctx, owned.Clients{Dynamic: unserved, Namespace: ns}, kinds, owned.App, certs)
	if err == nil || !strings.Contains(err.Error(), "does not serve cert-manager's Certificate resource") {
		t.Errorf("unserved: %v", err)
	}
}
