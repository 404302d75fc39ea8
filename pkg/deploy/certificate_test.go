package deploy

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/route/routetest"
)

func listCertificates(t *testing.T, d Deps) []unstructured.Unstructured {
	t.Helper()
	l, err := d.Dynamic.Resource(route.Certificates).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// The Certificate is applied with the app's objects, removed with its
// domain, and one that is not the app's is never changed.
func TestCertificatesAppliedAndRemoved(t *testing.T) {
	ctx := context.Background()
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	d := deps(c)
	d.Dynamic = routetest.NewDynamic(t, nil)
	if _, err := Roll(ctx, d, "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	secret := route.TLSSecretName("shop", "shop.example.com")
	addIssued := func(a *app.App) error {
		a.Domains = append(a.Domains, app.Domain{Host: "shop.example.com", Path: "/", TLSSecret: secret, CertIssuer: "ClusterIssuer/letsencrypt"})
		return nil
	}
	if _, err := Configure(ctx, d, "shop", addIssued, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if got := listCertificates(t, d); len(got) != 1 || got[0].GetName() != secret || got[0].GetLabels()[kube.LabelApp] != "shop" {
		t.Fatalf("Certificates after domain add: %v", got)
	}
	// a deploy keeps it
	if _, err := Roll(ctx, d, "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if got := listCertificates(t, d); len(got) != 1 {
		t.Fatalf("Certificates after a deploy: %d", len(got))
	}
	// another app's Certificate is left alone when this one's go
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "blog-tls", "namespace": ns, "labels": map[string]any{kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: "blog", kube.LabelKind: "tls"}}}}
	if _, err := d.Dynamic.Resource(route.Certificates).Namespace(ns).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Configure(ctx, d, "shop", func(a *app.App) error { a.Domains = nil; return nil }, Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	if got := listCertificates(t, d); len(got) != 1 || got[0].GetName() != "blog-tls" {
		t.Fatalf("Certificates after the domain went: %v", got)
	}

	// a Certificate of that name that is not tug's stops the change before anything is written
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": secret, "namespace": ns, "labels": map[string]any{"owner": "helm"}},
		"spec":     map[string]any{"secretName": "theirs"}}}
	if _, err := d.Dynamic.Resource(route.Certificates).Namespace(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := Configure(ctx, d, "shop", addIssued, Options{NoWait: true})
	var notOurs *kube.NotOwnedError
	if !errors.As(err, &notOurs) {
		t.Fatalf("Configure over a Certificate that is not tug's = %v, want a NotOwnedError", err)
	}
	if a := getApp(t, s, "shop"); len(a.Domains) != 0 {
		t.Errorf("the refused change was recorded: %+v", a.Domains)
	}
	got, _ := d.Dynamic.Resource(route.Certificates).Namespace(ns).Get(ctx, secret, metav1.GetOptions{})
	if sn, _, _ := unstructured.NestedString(got.Object, "spec", "secretName"); sn != "theirs" || got.GetLabels()[kube.LabelApp] != "" {
		t.Errorf("their Certificate was changed: %v", got.Object)
	}
}

// A cluster that does not serve cert-manager's Certificate refuses the
// change with a clear error, and nothing is written.
func TestCertificatesWithoutCertManager(t *testing.T) {
	ctx := context.Background()
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop"})
	d := deps(c)
	dyn := routetest.NewDynamic(t, nil)
	d.Dynamic = dyn
	if _, err := Roll(ctx, d, "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	notServed := func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(route.Certificates.GroupResource(), "")
	}
	dyn.PrependReactor("list", "certificates", notServed)
	dyn.PrependReactor("get", "certificates", notServed)
	ingBefore, _ := c.NetworkingV1().Ingresses(ns).List(ctx, metav1.ListOptions{})
	_, err := Configure(ctx, d, "shop", func(a *app.App) error {
		a.Domains = append(a.Domains, app.Domain{Host: "shop.example.com", Path: "/", TLSSecret: "shop-tls-shop-example-com", CertIssuer: "ClusterIssuer/letsencrypt"})
		return nil
	}, Options{NoWait: true})
	if err == nil || !strings.Contains(err.Error(), "does not serve cert-manager's Certificate resource") || !strings.Contains(err.Error(), "ClusterIssuer/letsencrypt") {
		t.Fatalf("Configure without cert-manager = %v", err)
	}
	if a := getApp(t, s, "shop"); len(a.Domains) != 0 {
		t.Errorf("the refused change was recorded: %+v", a.Domains)
	}
	if ing, _ := c.NetworkingV1().Ingresses(ns).List(ctx, metav1.ListOptions{}); len(ing.Items) != len(ingBefore.Items) {
		t.Errorf("the refused change made an Ingress")
	}
	// and an app without such a domain deploys as before
	if _, err := Roll(ctx, d, "shop", DeployChange("shop:2", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Errorf("a deploy without issued certificates on a cluster without cert-manager: %v", err)
	}
}
