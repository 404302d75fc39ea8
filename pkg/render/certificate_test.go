package render

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

// A domain whose certificate comes from an issuer renders one cert-manager
// Certificate per host, filling the Secret the Ingress serves it with.
func TestRenderCertificates(t *testing.T) {
	secret := route.TLSSecretName("shop", "shop.example.com")
	a := &app.App{Name: "shop", Namespace: "dev", Domains: []app.Domain{
		{Host: "shop.example.com", Path: "/", TLSSecret: secret, CertIssuer: "ClusterIssuer/letsencrypt"},
		{Host: "shop.example.com", Path: "/api", TLSSecret: secret, CertIssuer: "ClusterIssuer/letsencrypt"},
		{Host: "own.example.com", Path: "/", TLSSecret: route.TLSSecretName("shop", "own.example.com")}, // cert add: no Certificate
		{Host: "plain.example.com", Path: "/"},
		{Host: "*.team.example.com", Path: "/", TLSSecret: route.TLSSecretName("shop", "*.team.example.com"), CertIssuer: "Issuer/team-ca"},
	}}
	r := &app.Release{Version: 1, Image: "shop:1", Processes: map[string]string{"web": ""}}
	objs := Release(a, r, nil)
	if len(objs.Certificates) != 2 {
		t.Fatalf("%d Certificates, want 2 (one per host that takes its certificate from an issuer)", len(objs.Certificates))
	}
	c := objs.Certificates[0]
	want := map[string]any{
		"apiVersion": "cert-manager.io/v1",
		"kind":       "Certificate",
		"metadata": map[string]any{
			"name":      "shop-tls-shop-example-com",
			"namespace": "dev",
			"labels":    map[string]any{kube.LabelManagedBy: kube.ManagedBy, "app.kubernetes.io/name": "shop", kube.LabelApp: "shop", kube.LabelKind: "tls"},
		},
		"spec": map[string]any{
			"secretName": secret,
			"dnsNames":   []any{"shop.example.com"},
			"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt"},
			"secretTemplate": map[string]any{
				"labels":      map[string]any{kube.LabelManagedBy: kube.ManagedBy, "app.kubernetes.io/name": "shop", kube.LabelApp: "shop", kube.LabelKind: "tls"},
				"annotations": map[string]any{"tug.dev/host": "shop.example.com"},
			},
		},
	}
	if !reflect.DeepEqual(c.Object, want) {
		t.Errorf("Certificate\n%#v\nwant\n%#v", c.Object, want)
	}
	// it must survive a deep copy (what the dynamic client does with it)
	_ = c.DeepCopy()
	w := objs.Certificates[1]
	issuer, _, _ := unstructured.NestedString(w.Object, "spec", "issuerRef", "name")
	if w.GetName() != "shop-tls-wildcard-team-example-com" || issuer != "team-ca" {
		t.Errorf("wildcard Certificate %s issuer %s", w.GetName(), issuer)
	}
	// the Ingress serves the host with that Secret, once cert-manager has written it
	var tls []string
	for _, ing := range objs.Ingresses {
		for _, t := range ing.Spec.TLS {
			tls = append(tls, t.SecretName+"="+strings.Join(t.Hosts, ","))
		}
	}
	if !slices.Contains(tls, secret+"=shop.example.com") {
		t.Errorf("Ingress TLS %q has no entry for shop.example.com", tls)
	}
	// no web process, no traffic objects
	if objs := Release(a, &app.Release{Version: 1, Image: "shop:1", Processes: map[string]string{"worker": "w"}}, nil); len(objs.Certificates) != 0 {
		t.Errorf("a release without web renders %d Certificates", len(objs.Certificates))
	}
}
