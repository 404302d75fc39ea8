package traffic

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

// Certificates from cert-manager (docs/guide.md, "Traffic"): a host added
// while the cluster settings of the app's pool name an issuer records it
// (app.Domain.CertIssuer); pkg/render renders the host's Certificate from
// that, and `cert list` reads the Certificate's Ready condition as
// cert-manager writes it. tug never issues anything itself.

// issueFrom makes host's certificate come from the issuer the settings
// name for the app's pool, unless host already has a certificate (a
// user's, or an issuer's recorded on another path of it). A settings
// value that names no issuer is an error: nothing is changed.
func issueFrom(a *app.App, settings *clustersettings.Stored, host string) error {
	if settings == nil {
		return nil
	}
	iss, ok, err := settings.For(a.Pool).CertIssuer()
	if err != nil {
		where := "the cluster's settings"
		if a.Pool != "" {
			where = fmt.Sprintf("the settings of pool %q", a.Pool)
		}
		return fmt.Errorf("%s cannot be used: %v; ask the cluster's admin to fix it ('tug cluster settings show')", where, err)
	}
	if !ok {
		return nil
	}
	for i := range a.Domains {
		if d := &a.Domains[i]; strings.EqualFold(d.Host, host) && d.TLSSecret == "" {
			d.TLSSecret, d.CertIssuer = route.TLSSecretName(a.Name, d.Host), iss.String()
		}
	}
	return nil
}

// hostIssuer is the issuer host's certificate comes from ("" for none).
func hostIssuer(a *app.App, host string) string {
	for _, d := range a.Domains {
		if strings.EqualFold(d.Host, host) && d.CertIssuer != "" {
			return d.CertIssuer
		}
	}
	return ""
}

// deleteCertificate deletes the app's Certificate name (a missing one, or
// a cluster without cert-manager's API, is fine; one that is not the
// app's is refused) and returns how to put it back.
func deleteCertificate(ctx context.Context, d deploy.Deps, appName, name string) (restore func(context.Context), err error) {
	if d.Dynamic == nil {
		return nil, nil
	}
	res := d.Dynamic.Resource(route.Certificates).Namespace(d.Namespace)
	cur, err := res.Get(ctx, name, metav1.GetOptions{})
	var obj metav1.Object
	if err == nil {
		obj = cur
	}
	if exists, err := kube.CheckOwned("Certificate", d.Namespace, name, appName, obj, err); err != nil || !exists {
		return nil, err
	}
	uid := cur.GetUID()
	if err := res.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return nil, kube.TranslateError(err)
	}
	return func(ctx context.Context) {
		back := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": cur.GetAPIVersion(), "kind": cur.GetKind(),
			"metadata": map[string]any{"name": name, "namespace": d.Namespace, "labels": anyMap(cur.GetLabels())},
			"spec":     cur.Object["spec"],
		}}
		_, _ = res.Create(ctx, back, metav1.CreateOptions{FieldManager: kube.FieldManager})
	}, nil
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Condition is a Certificate's Ready condition as cert-manager wrote it.
type Condition struct {
	Status  string `json:"status"` // True, False or Unknown
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Stale says the condition is about an older spec of the Certificate
	// (its observedGeneration is behind the Certificate's generation).
	Stale bool `json:"stale,omitempty"`
}

// ReadyCondition reads a Certificate's Ready condition; nil when it has
// none (cert-manager has not looked at it yet, or does not run).
func ReadyCondition(u *unstructured.Unstructured) *Condition {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		out := &Condition{Status: str("status"), Reason: str("reason"), Message: str("message")}
		if og, ok, _ := unstructured.NestedInt64(m, "observedGeneration"); ok && og < u.GetGeneration() {
			out.Stale = true
		}
		return out
	}
	return nil
}

// The states of a certificate in `cert list` (Cert.Status).
const (
	StatusValid       = "valid"         // a user's certificate, valid now
	StatusExpired     = "expired"       // past its notAfter
	StatusNotYetValid = "not yet valid" // before its notBefore
	StatusUnreadable  = "unreadable"    // its Secret holds no certificate tug can parse
	StatusReady       = "ready"         // cert-manager says Ready for the current spec
	StatusNotReady    = "not ready"     // cert-manager says not Ready (see the reason)
	StatusPending     = "pending"       // no verdict from cert-manager yet
	StatusUnknown     = "unknown"       // the Certificate could not be read
)

// issuedStatus is the state of a certificate from an issuer: what its
// Certificate's Ready condition says, and only that. A Certificate with no
// Ready condition, or one about an older spec, is pending: cert-manager
// has not said anything about it yet.
func issuedStatus(c *Condition) string {
	switch {
	case c == nil || c.Stale || c.Status == "Unknown" || c.Status == "":
		return StatusPending
	case c.Status == "True":
		return StatusReady
	}
	return StatusNotReady
}

// certificateOf reads what `cert list` shows of a Certificate: the host
// (its first DNS name), its Secret and its issuer.
func certificateOf(u *unstructured.Unstructured) (host, secret, issuer string) {
	names, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "dnsNames")
	if len(names) > 0 {
		host = names[0]
	}
	secret, _, _ = unstructured.NestedString(u.Object, "spec", "secretName")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "issuerRef", "kind")
	name, _, _ := unstructured.NestedString(u.Object, "spec", "issuerRef", "name")
	if kind == "" {
		kind = "Issuer" // cert-manager's default
	}
	return host, secret, kind + "/" + name
}
