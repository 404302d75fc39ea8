package traffic

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// Cert describes a certificate for `tug cert list`; never its key. Its JSON
// shape is documented in docs/output.md.
type Cert struct {
	Host     string    `json:"host"`
	Secret   string    `json:"secret"`
	Subject  string    `json:"subject"`
	SANs     []string  `json:"sans"`
	Issuer   string    `json:"issuer"`
	NotAfter time.Time `json:"notAfter"`
	DaysLeft int       `json:"daysLeft"`
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
	labels := kube.AppLabels(appName)
	labels[kube.LabelKind] = "tls"
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, Annotations: map[string]string{"tug.dev/host": host}},
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

// ListCerts describes the app's certificates: one LIST of its TLS Secrets.
func ListCerts(ctx context.Context, client kubernetes.Interface, namespace, appName string, now time.Time) ([]Cert, error) {
	list, err := client.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.KindSelector("tls", appName)})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	out := []Cert{}
	for _, s := range list.Items {
		c := Cert{Host: s.Annotations["tug.dev/host"], Secret: s.Name}
		if pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err == nil {
			if leaf, err := x509.ParseCertificate(pair.Certificate[0]); err == nil {
				c.Subject, c.Issuer, c.SANs, c.NotAfter = leaf.Subject.String(), leaf.Issuer.String(), names(leaf), leaf.NotAfter
				c.DaysLeft = int(leaf.NotAfter.Sub(now).Hours() / 24)
			}
		}
		out = append(out, c)
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
