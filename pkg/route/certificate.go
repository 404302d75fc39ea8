package route

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/kube"
)

// Certificates from cert-manager. A domain added while the cluster
// settings name an issuer (app.Domain.CertIssuer) gets a cert-manager
// Certificate for its host, rendered with the app's other objects: its
// secretName is the Secret tug would store a user's certificate in
// (TLSSecretName), which the app's Ingress names in its TLS, so the router
// serves the certificate once cert-manager has written it. tug writes the
// Certificate and reads its status; issuing is cert-manager's. Like the
// HTTPRoutes it goes through the dynamic client: cert-manager's typed
// client would cost megabytes of binary for a handful of fields.

// Certificates is cert-manager's Certificate resource.
var Certificates = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}

// AnnotationHost names the host a TLS Secret (or a Certificate's Secret) serves.
const AnnotationHost = "tug.dev/host"

// TLSSecretName is the kubernetes.io/tls Secret holding a host's certificate.
func TLSSecretName(appName, host string) string { return appName + "-tls-" + hostSlug(host) }

// hostSlug makes a host name fit in an object name: "*.example.com" -> "wildcard-example-com".
func hostSlug(host string) string {
	return strings.ReplaceAll(strings.ReplaceAll(host, "*", "wildcard"), ".", "-")
}

// CertificateName is the cert-manager Certificate of a host of an app:
// named like the Secret it fills, as cert-manager's own ingress-shim does.
func CertificateName(appName, host string) string { return TLSSecretName(appName, host) }

// TLSLabels are the labels of an app's TLS Secrets and Certificates.
func TLSLabels(appName string) map[string]string {
	l := kube.AppLabels(appName)
	l[kube.LabelKind] = "tls"
	return l
}

// RenderCertificates are the Certificates of the app's domains that take
// theirs from an issuer: one per host.
func RenderCertificates(a *app.App) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	seen := map[string]bool{}
	for _, d := range a.Domains {
		if d.CertIssuer == "" || d.TLSSecret == "" || seen[d.Host] {
			continue
		}
		iss, err := clustersettings.ParseIssuer(d.CertIssuer)
		if err != nil {
			continue // checked when the domain was added
		}
		seen[d.Host] = true
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": Certificates.GroupVersion().String(),
			"kind":       "Certificate",
			"metadata": map[string]any{
				"name":      CertificateName(a.Name, d.Host),
				"namespace": a.Namespace,
				"labels":    toAny(TLSLabels(a.Name)),
			},
			"spec": map[string]any{
				"secretName": d.TLSSecret,
				"dnsNames":   []any{d.Host},
				"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": iss.Kind, "name": iss.Name},
				// the Secret cert-manager writes is the app's, as one of
				// `cert add` is: cert list finds it, domain remove and app
				// remove delete it
				"secretTemplate": map[string]any{
					"labels":      toAny(TLSLabels(a.Name)),
					"annotations": map[string]any{AnnotationHost: d.Host},
				},
			},
		}})
	}
	return out
}

// CertificatesServed checks that the cluster serves cert-manager's
// Certificate resource and that the user may list Certificates of the
// namespace: one LIST of at most one. An error says what to do.
func (c Client) CertificatesServed(ctx context.Context, issuer string) error {
	if c.Dynamic == nil {
		return fmt.Errorf("the cluster settings name the certificate issuer %s, but this client cannot reach cert-manager's API", issuer)
	}
	_, err := c.Dynamic.Resource(Certificates).Namespace(c.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the cluster settings name the certificate issuer %s, but this cluster does not serve cert-manager's Certificate resource (cert-manager.io/v1): the setting cannot be used until cert-manager is installed; ask the cluster's admin ('tug cluster settings show')", issuer)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the cluster settings name the certificate issuer %s, but you may not list cert-manager Certificates in namespace %q; ask for the certificates.cert-manager.io verbs of docs/rbac/tug-developer-role.yaml", issuer, c.Namespace)
	case err != nil:
		return kube.TranslateError(err)
	}
	return nil
}

// IssuerOf is the issuer a Certificate names, as "KIND/NAME".
func IssuerOf(c *unstructured.Unstructured) string {
	kind, _, _ := unstructured.NestedString(c.Object, "spec", "issuerRef", "kind")
	name, _, _ := unstructured.NestedString(c.Object, "spec", "issuerRef", "name")
	return kind + "/" + name
}
