package route

import (
	"context"
	"errors"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Wildcards claim both ways (an HTTPRoute's *.d covers any number of
// labels, an Ingress's one); a wildcard that meets the apps domain is
// refused; a route with no hostnames claims no host; a list that fails
// for another reason than Forbidden fails the check.
func TestCheckClaimWildcardsAndListErrors(t *testing.T) {
	ctx := context.Background()
	routeFor := func(name string, hosts ...any) *unstructured.Unstructured {
		spec := map[string]any{}
		if hosts != nil {
			spec["hostnames"] = hosts
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
			"metadata": map[string]any{"name": name, "namespace": "prod"}, "spec": spec}}
	}
	setup := func(t *testing.T) (Client, *fake.Clientset) {
		dyn := gatewayDyn(t)
		for _, r := range []*unstructured.Unstructured{routeFor("wild", "*.corp.example.com"), routeFor("shop", "shop.example.org"), routeFor("any")} {
			if err := dyn.Tracker().Create(HTTPRoutes, r, "prod"); err != nil {
				t.Fatal(err)
			}
		}
		kube := fake.NewClientset(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "ing", Namespace: "prod"},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "*.ing.test"}}}})
		return Client{Dynamic: dyn, Namespace: "dev"}, kube
	}
	for _, tc := range []struct {
		host, want string // want "" when free
	}{
		{"*.apps.example.com", "is a wildcard"},
		{"*.x.apps.example.com", "is a wildcard"},
		{"*.example.com", "is a wildcard"},
		{"*.mine.test", ""},
		{"a.b.corp.example.com", "HTTPRoute prod/wild"},
		{"*.example.org", "HTTPRoute prod/shop"},
		{"a.ing.test", "Ingress prod/ing"},
		{"a.b.ing.test", ""},
		{"*.ing.test", "Ingress prod/ing"},
		{"nobody.test", ""},
	} {
		c, kube := setup(t)
		err := CheckClaim(ctx, c, kube, "dev", tc.host, "apps.example.com", "")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err %v, want %q", tc.host, err, tc.want)
		}
	}

	c, kube := setup(t)
	c.Dynamic.(interface {
		PrependReactor(string, string, k8stesting.ReactionFunc)
	}).PrependReactor("list", "httproutes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd timeout"))
	})
	err := CheckClaim(ctx, c, kube, "dev", "shop.example.com", "apps.example.com", "")
	if err == nil || !strings.Contains(err.Error(), "cannot list the HTTPRoutes") || !strings.Contains(err.Error(), "etcd timeout") {
		t.Errorf("a list that failed: err %v, want the reason", err)
	}
}
