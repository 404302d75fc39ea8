package traffic

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

// Cert describes a certificate for `tug cert list`; never its key. Its JSON
// shape is documented in docs/output.md.
type Cert struct {
	Host   string `json:"host"`
	Secret string `json:"secret"`
	// Source is "user" (tug cert add) or "cert-manager" (an issuer of the
	// cluster settings); IssuerRef names that issuer, ClusterIssuer/NAME.
	Source    string `json:"source"`
	IssuerRef string `json:"issuerRef,omitempty"`
	// Status is one of the Status* states: for a user's certificate its
	// validity now, for cert-manager's what its Ready condition says.
	Status string `json:"status"`
	// Ready is the Certificate's Ready condition (cert-manager only;
	// omitted while it has none); Message explains a state that has no
	// condition to show (a Certificate not made or not readable).
	Ready   *Condition `json:"ready,omitempty"`
	Message string     `json:"message,omitempty"`
	// From the certificate in the Secret (tls.crt), when there is one.
	Subject  string     `json:"subject"`
	SANs     []string   `json:"sans"`
	Issuer   string     `json:"issuer"`
	NotAfter *time.Time `json:"notAfter,omitempty"`
	DaysLeft *int       `json:"daysLeft,omitempty"`
}

// CheckPair verifies a PEM certificate and key for host: they match, the
// certificate names host, and it is valid now. It returns the leaf.
func CheckPair(certPEM, keyPEM []byte, host string, now time.Time) (*x509.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		if strings.Contains(err.Error(), "private key does not match") {
			return nil, fmt.Errorf("the key does not match the certificate")
		}
		return nil, fmt.Errorf("not a PEM certificate and key: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("cannot parse the certificate: %v", err)
	}
	if err := leaf.VerifyHostname(host); err != nil {
		return nil, fmt.Errorf("the certificate is not for %s (it names %s)", host, strings.Join(names(leaf), ", "))
	}
	switch {
	case now.After(leaf.NotAfter):
		return nil, fmt.Errorf("the certificate expired on %s", leaf.NotAfter.UTC().Format("2006-01-02"))
	case now.Before(leaf.NotBefore):
		return nil, fmt.Errorf("the certificate is not valid before %s", leaf.NotBefore.UTC().Format("2006-01-02 15:04"))
	}
	return leaf, nil
}

func names(c *x509.Certificate) []string {
	n := append([]string{}, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		n = append(n, ip.String())
	}
	if len(n) == 0 && c.Subject.CommonName != "" {
		n = append(n, c.Subject.CommonName)
	}
	return n
}

func certSecret(namespace, appName, name, host string, certPEM, keyPEM []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: route.TLSLabels(appName), Annotations: map[string]string{route.AnnotationHost: host}},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}
}

// putCert writes the host's kubernetes.io/tls Secret and returns how to take
// the write back: delete the Secret it created, or restore the one it
// replaced.
func putCert(ctx context.Context, client kubernetes.Interface, namespace, appName, name, host string, certPEM, keyPEM []byte) (undo func(context.Context), err error) {
	sec := certSecret(namespace, appName, name, host, certPEM, keyPEM)
	secrets := client.CoreV1().Secrets(namespace)
	_, err = secrets.Create(ctx, sec, metav1.CreateOptions{FieldManager: kube.FieldManager})
	if err == nil {
		return func(ctx context.Context) { _ = DeleteSecret(ctx, client, namespace, appName, name) }, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, kube.TranslateError(err)
	}
	old, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if exists, err := kube.CheckOwned("Secret", namespace, name, appName, old, err); err != nil {
		return nil, err
	} else if !exists {
		return nil, fmt.Errorf("secret %q was deleted while tug wrote it; run the command again", name)
	}
	sec.ResourceVersion = old.ResourceVersion
	put, err := secrets.Update(ctx, sec, metav1.UpdateOptions{FieldManager: kube.FieldManager})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	return func(ctx context.Context) {
		old.ResourceVersion = put.ResourceVersion
		_, _ = secrets.Update(ctx, old, metav1.UpdateOptions{FieldManager: kube.FieldManager})
	}, nil
}

// ListCerts describes the certificates of app a: its TLS Secrets (one
// LIST), and, when dyn reaches cert-manager's API, its Certificates (one
// LIST) with their Ready condition. A host whose record says its
// certificate comes from an issuer is listed even before cert-manager has
// written anything, as pending. A cluster without cert-manager's API, or a
// user who may not read Certificates, lists the Secrets; the record's
// cert-manager hosts then say why their status is unknown.
func ListCerts(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, namespace string, a *app.App, now time.Time) ([]Cert, error) {
	list, err := client.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.KindSelector("tls", a.Name)})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	bySecret := map[string]*Cert{}
	var order []string
	entry := func(secret, host string) *Cert {
		c, ok := bySecret[secret]
		if !ok {
			c = &Cert{Host: host, Secret: secret, Source: "user"}
			bySecret[secret] = c
			order = append(order, secret)
		}
		if c.Host == "" {
			c.Host = host
		}
		return c
	}
	for _, s := range list.Items {
		entry(s.Name, s.Annotations[route.AnnotationHost]).readLeaf(s.Data[corev1.TLSCertKey], now)
	}
	certs, readErr := listCertificates(ctx, dyn, namespace, a.Name)
	for _, u := range certs {
		host, secret, issuer := certificateOf(u)
		if secret == "" {
			continue
		}
		c := entry(secret, host)
		c.Source, c.IssuerRef, c.Ready = "cert-manager", issuer, ReadyCondition(u)
		c.Status = issuedStatus(c.Ready)
	}
	// the record's cert-manager hosts that no Certificate answered for
	for _, d := range a.Domains {
		if d.CertIssuer == "" || d.TLSSecret == "" {
			continue
		}
		c := entry(d.TLSSecret, d.Host)
		if c.Source == "cert-manager" {
			continue
		}
		c.Source, c.IssuerRef, c.Status = "cert-manager", d.CertIssuer, StatusPending
		switch {
		case readErr != nil:
			c.Status, c.Message = StatusUnknown, "its Certificate could not be read: "+readErr.Error()
		case a.Release == 0:
			c.Message = "its Certificate is made at the app's first deploy"
		default:
			c.Message = "no Certificate " + route.CertificateName(a.Name, d.Host) + " yet"
		}
	}
	out := make([]Cert, 0, len(order))
	for _, s := range order {
		out = append(out, *bySecret[s])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out, nil
}

// readLeaf fills c from the leaf of the Secret's certificate chain: who
// it names and issued it, until when, and whether it is valid at now;
// StatusUnreadable when the Secret holds no certificate.
func (c *Cert) readLeaf(chain []byte, now time.Time) {
	c.Status = StatusUnreadable
	leaf := leafOf(chain)
	if leaf == nil {
		return
	}
	c.Subject, c.Issuer, c.SANs = leaf.Subject.String(), leaf.Issuer.String(), names(leaf)
	notAfter, days := leaf.NotAfter, int(leaf.NotAfter.Sub(now).Hours()/24)
	c.NotAfter, c.DaysLeft = &notAfter, &days
	switch {
	case now.After(leaf.NotAfter):
		c.Status = StatusExpired
	case now.Before(leaf.NotBefore):
		c.Status = StatusNotYetValid
	default:
		c.Status = StatusValid
	}
}

// leafOf is the first certificate of a PEM chain; nil when there is none.
func leafOf(chain []byte) *x509.Certificate {
	for {
		var b *pem.Block
		b, chain = pem.Decode(chain)
		if b == nil {
			return nil
		}
		if b.Type == "CERTIFICATE" {
			leaf, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil
			}
			return leaf
		}
	}
}

// listCertificates is the app's Certificates: none where the cluster does
// not serve cert-manager's API (or dyn is nil); an error when they cannot
// be read.
func listCertificates(ctx context.Context, dyn dynamic.Interface, namespace, appName string) ([]*unstructured.Unstructured, error) {
	if dyn == nil {
		return nil, nil
	}
	list, err := dyn.Resource(route.Certificates).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		if kube.Owned(list.Items[i].GetLabels(), appName) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// DeleteSecret removes a TLS Secret of the app (a missing one is fine); one
// that is not the app's is refused with a *kube.NotOwnedError.
func DeleteSecret(ctx context.Context, client kubernetes.Interface, namespace, appName, name string) error {
	cur, err := client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if exists, err := kube.CheckOwned("Secret", namespace, name, appName, cur, err); err != nil || !exists {
		return err
	}
	err = client.CoreV1().Secrets(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	return nil
}
