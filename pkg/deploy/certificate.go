package deploy

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

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

// CertificateName is the cert-manager Certificate of a host of an app:
// named like the Secret it fills, as cert-manager's own ingress-shim does.
func CertificateName(appName, host string) string { return TLSSecretName(appName, host) }

// TLSLabels are the labels of an app's TLS Secrets and Certificates.
func TLSLabels(appName string) map[string]string {
	l := kube.AppLabels(appName)
	l[kube.LabelKind] = "tls"
	return l
}

// renderCertificates are the Certificates of the app's domains that take
// theirs from an issuer: one per host.
func renderCertificates(a *app.App) []*unstructured.Unstructured {
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
		labels := anyMap(TLSLabels(a.Name))
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": Certificates.GroupVersion().String(),
			"kind":       "Certificate",
			"metadata": map[string]any{
				"name":      CertificateName(a.Name, d.Host),
				"namespace": a.Namespace,
				"labels":    labels,
			},
			"spec": map[string]any{
				"secretName": d.TLSSecret,
				"dnsNames":   []any{d.Host},
				"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": iss.Kind, "name": iss.Name},
				// the Secret cert-manager writes is the app's, as one of
				// `cert add` is: cert list finds it, domain remove and app
				// remove delete it
				"secretTemplate": map[string]any{
					"labels":      anyMap(TLSLabels(a.Name)),
					"annotations": map[string]any{AnnotationHost: d.Host},
				},
			},
		}})
	}
	return out
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// CertificatesServed checks that the cluster serves cert-manager's
// Certificate resource and that the user may list Certificates of the
// namespace: one LIST of at most one. An error says what to do.
func CertificatesServed(ctx context.Context, d Deps, issuer string) error {
	if d.Dynamic == nil {
		return fmt.Errorf("the cluster settings name the certificate issuer %s, but this client cannot reach cert-manager's API", issuer)
	}
	_, err := d.Dynamic.Resource(Certificates).Namespace(d.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the cluster settings name the certificate issuer %s, but this cluster does not serve cert-manager's Certificate resource (cert-manager.io/v1): the setting cannot be used until cert-manager is installed; ask the cluster's admin ('tug cluster settings show')", issuer)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the cluster settings name the certificate issuer %s, but you may not list cert-manager Certificates in namespace %q; ask for the certificates.cert-manager.io verbs of docs/rbac/tug-developer-role.yaml", issuer, d.Namespace)
	case err != nil:
		return kube.TranslateError(err)
	}
	return nil
}

// guardCertificates is guardOwned for Certificates: cert-manager's API is
// served, and none of them exists without being the app's.
func guardCertificates(ctx context.Context, d Deps, certs []*unstructured.Unstructured) error {
	if len(certs) == 0 {
		return nil
	}
	if err := CertificatesServed(ctx, d, issuerOf(certs[0])); err != nil {
		return err
	}
	for _, c := range certs {
		obj, err := d.Dynamic.Resource(Certificates).Namespace(d.Namespace).Get(ctx, c.GetName(), metav1.GetOptions{})
		var cur metav1.Object
		if err == nil {
			cur = obj
		}
		if _, err := kube.CheckOwned("Certificate", d.Namespace, c.GetName(), c.GetLabels()[kube.LabelApp], cur, err); err != nil {
			return err
		}
	}
	return nil
}

func issuerOf(c *unstructured.Unstructured) string {
	kind, _, _ := unstructured.NestedString(c.Object, "spec", "issuerRef", "kind")
	name, _, _ := unstructured.NestedString(c.Object, "spec", "issuerRef", "name")
	return kind + "/" + name
}

// applyCertificates server-side-applies the Certificates.
func applyCertificates(ctx context.Context, d Deps, certs []*unstructured.Unstructured, opts metav1.PatchOptions) error {
	for _, c := range certs {
		if d.Dynamic == nil {
			return fmt.Errorf("applying certificate %s: no client for cert-manager's API", c.GetName())
		}
		data, err := json.Marshal(c.Object)
		if err != nil {
			return err
		}
		if _, err := d.Dynamic.Resource(Certificates).Namespace(d.Namespace).Patch(ctx, c.GetName(), types.ApplyPatchType, data, opts); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("applying certificate %s: this cluster does not serve cert-manager's Certificate resource (cert-manager.io/v1), though the domain takes its certificate from %s", c.GetName(), issuerOf(c))
			}
			return fmt.Errorf("applying certificate %s: %w", c.GetName(), kube.TranslateError(err))
		}
	}
	return nil
}

// removeStaleCertificates deletes the app's Certificates that keep does
// not name: one LIST by the app's labels. A cluster that does not serve
// cert-manager's API has none.
func removeStaleCertificates(ctx context.Context, d Deps, appName string, keep []*unstructured.Unstructured) error {
	if d.Dynamic == nil {
		return nil
	}
	res := d.Dynamic.Resource(Certificates).Namespace(d.Namespace)
	list, err := res.List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if apierrors.IsNotFound(err) || (apierrors.IsForbidden(err) && len(keep) == 0) {
		return nil // no cert-manager here, or none the user may have made
	}
	if err != nil {
		return kube.TranslateError(err)
	}
	names := map[string]bool{}
	for _, c := range keep {
		names[c.GetName()] = true
	}
	for _, c := range list.Items {
		if names[c.GetName()] || !kube.Owned(c.GetLabels(), appName) {
			continue
		}
		uid := c.GetUID()
		if err := res.Delete(ctx, c.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	return nil
}

// RemoveCertificates deletes every Certificate the app owns: for removing
// the app (before its Secrets, so cert-manager writes none again).
func RemoveCertificates(ctx context.Context, d Deps, appName string) error {
	return removeStaleCertificates(ctx, d, appName, nil)
}
