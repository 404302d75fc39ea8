package e2e

import (
	"context"
	"crypto/x509"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"tug.dev/tug/test/faultproxy"
)

// Certificates from cert-manager. The local cluster serves cert-manager's
// CRDs (cluster.sh ensure-cert-manager-crds) but does not run its
// controller: its binary modules are not served here. So nothing in this
// file issues a certificate. What is tested is what tug writes (the
// Certificate, its ownership, its removal) and how tug reads a
// Certificate's status as the API server stores it: where a test needs a
// status or an issued Secret, it writes them itself, standing in for
// cert-manager's controller, and says so. That proves tug's reading and
// serving path, never issuance.

func TestCertManagerCertificates(t *testing.T) {
	// The issuer is set for a pool of this test's own, so no other test's
	// domain add sees it; a real node joins that pool for the test's units
	// (restored at the end), so node tests of this run wait for it.
	h := newNodeH(t)
	dyn := dynamic.NewForConfigOrDie(h.Config)
	h.needCertManagerCRDs(dyn)
	c := &certTest{h: h, r: h.localRouter(), certs: dyn.Resource(certificatesGVR).Namespace(h.NS)}

	c.pool = "e2e-cm-" + randSuffix()
	// whatever this test leaves in the settings goes when it ends
	t.Cleanup(func() { h.Tug("cluster", "settings", "unset", "--pool", c.pool, "certIssuer") })
	c.setIssuer(t)
	c.deployInPool()

	c.host = "shop-" + h.NS + ".example.test"
	c.secret = "shop-tls-" + strings.ReplaceAll(c.host, ".", "-")
	h.mustTug("domain", "add", "shop", c.host)
	c.createdByTug(t)
	c.statusAsStored(t)
	c.theirsUntouched(t)
	c.withoutCertManagerAPI(t)
	c.ownCertWins(t)
	c.domainRemove(t)
	c.appRemove(t)
}

// certTest is TestCertManagerCertificates' state from phase to phase.
type certTest struct {
	h            *H
	r            router
	certs        dynamic.ResourceInterface
	pool, issuer string
	host, secret string    // the app's first domain and its Certificate (and Secret)
	now          time.Time // when the stand-in Secret was made, for certificates' validity
	theirsName   string    // a Certificate that is not tug's
}

// setIssuer: an issuer setting of the wrong shape is refused and changes
// nothing; then the pool's issuer is set.
func (c *certTest) setIssuer(t *testing.T) {
	t.Helper()
	h := c.h
	settingsData := func() map[string]string {
		cm, err := h.Client.CoreV1().ConfigMaps("kube-public").Get(context.Background(), "tug-cluster-settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}
	before := settingsData()
	for _, bad := range []string{"letsencrypt", "Vault/ca", "ClusterIssuer/Bad_Name"} {
		if res := h.Tug("cluster", "settings", "set", "--pool", c.pool, "certIssuer="+bad); res.Code != 2 || !strings.Contains(res.Stderr, "ClusterIssuer/NAME or Issuer/NAME") {
			t.Errorf("certIssuer=%s: want exit 2 naming the shape, got %s", bad, res)
		}
	}
	if after := settingsData(); after["pool."+c.pool+".certIssuer"] != "" {
		t.Fatalf("a refused setting was written: %v (before %v)", after, before)
	}
	c.issuer = "ClusterIssuer/e2e-" + randSuffix()
	h.mustTug("cluster", "settings", "set", "--pool", c.pool, "certIssuer="+c.issuer)
}

// deployInPool creates and deploys app shop on the test's pool. The node
// is in the pool only while the app's unit is placed: the changes after
// never change its pod template, so the unit stays, and a node test of
// another run that saves and restores the node's labels meanwhile has the
// shortest window to see this test's label.
func (c *certTest) deployInPool() {
	h := c.h
	nodes := h.realNodes()
	node := nodes[len(nodes)-1]
	h.keepNodeState(node)
	h.labelPool(node, c.pool)
	h.mustTug("app", "create", "shop", "--pool", c.pool)
	h.mustTug("app", "deploy", "shop", "--image", sampleV1)
	h.unlabelPool(node, c.pool)
}

// createdByTug: what tug created: the Certificate, the app's, filling the
// Secret its Ingress serves.
func (c *certTest) createdByTug(t *testing.T) {
	t.Helper()
	h, ctx, host, secret := c.h, context.Background(), c.host, c.secret
	cert, err := c.certs.Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no Certificate %s after domain add: %v", secret, err)
	}
	spec, _, _ := unstructured.NestedMap(cert.Object, "spec")
	kind, name, _ := strings.Cut(c.issuer, "/")
	wantSpec := map[string]any{
		"secretName": secret,
		"dnsNames":   []any{host},
		"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": kind, "name": name},
		"secretTemplate": map[string]any{
			"labels":      map[string]any{"app.kubernetes.io/managed-by": "tug", "app.kubernetes.io/name": "shop", "tug.dev/app": "shop", "tug.dev/kind": "tls"},
			"annotations": map[string]any{"tug.dev/host": host},
		},
	}
	if !reflect.DeepEqual(spec, wantSpec) {
		t.Errorf("Certificate spec as the API server stored it:\n%v\nwant\n%v", spec, wantSpec)
	}
	if l := cert.GetLabels(); l["app.kubernetes.io/managed-by"] != "tug" || l["tug.dev/app"] != "shop" {
		t.Errorf("Certificate labels %v: want tug's and the app's", l)
	}
	ing, err := h.Client.NetworkingV1().Ingresses(h.NS).Get(ctx, "shop", metav1.GetOptions{})
	if err != nil || len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != secret || !slices.Equal(ing.Spec.TLS[0].Hosts, []string{host}) {
		t.Fatalf("the Ingress does not serve %s with %s: %+v %v", host, secret, ing, err)
	}
	if out := h.mustTug("app", "export", "shop").Stdout; !strings.Contains(out, "kind: Certificate") || !strings.Contains(out, "secretName: "+secret) {
		t.Errorf("app export has no Certificate:\n%s", out)
	}
}

// statusAsStored: cert list as the Certificate's status goes from none
// (nothing runs cert-manager's controller: pending, never ready) to not
// ready to ready. The test writes the status, and the Secret cert-manager
// would write (labelled as the Certificate's secretTemplate asks), itself,
// standing in for its controller: the router serves the Secret for the
// host, and cert list reads its expiry.
func (c *certTest) statusAsStored(t *testing.T) {
	t.Helper()
	h, host, secret := c.h, c.host, c.secret
	cl := h.certList("shop")[host]
	if cl.Status != "pending" || cl.Ready != nil || cl.Source != "cert-manager" || cl.IssuerRef != c.issuer || cl.NotAfter != nil || cl.Secret != secret {
		t.Errorf("cert list of a Certificate with no status: %+v", cl)
	}
	if out := h.mustTug("cert", "list", "shop").Stdout; !strings.Contains(out, "pending") || strings.Contains(out, "ready") || strings.Contains(out, "ok") {
		t.Errorf("cert list table of a pending certificate:\n%s", out)
	}

	setCertReady(t, c.certs, secret, "False", "DoesNotExist", "Issuing certificate as Secret does not exist")
	cl = h.certList("shop")[host]
	if cl.Status != "not ready" || cl.Ready == nil || cl.Ready.Status != "False" || cl.Ready.Reason != "DoesNotExist" || cl.Ready.Message != "Issuing certificate as Secret does not exist" {
		t.Errorf("cert list of a Certificate that is not Ready: %+v", cl)
	}
	if out := h.mustTug("cert", "list", "shop").Stdout; !strings.Contains(out, "not ready") || !strings.Contains(out, "DoesNotExist: Issuing certificate as Secret does not exist") {
		t.Errorf("cert list table of a certificate that is not ready:\n%s", out)
	}

	c.now = time.Now()
	certFile, keyFile := selfSigned(t, []string{host}, c.now.Add(-time.Hour), c.now.Add(30*24*time.Hour))
	certPEM, _ := os.ReadFile(certFile)
	keyPEM, _ := os.ReadFile(keyFile)
	if _, err := h.Client.CoreV1().Secrets(h.NS).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secret,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "tug", "app.kubernetes.io/name": "shop", "tug.dev/app": "shop", "tug.dev/kind": "tls"},
			Annotations: map[string]string{"tug.dev/host": host, "cert-manager.io/certificate-name": secret}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setCertReady(t, c.certs, secret, "True", "Ready", "Certificate is up to date and has not expired")
	cl = h.certList("shop")[host]
	if cl.Status != "ready" || cl.Ready == nil || cl.Ready.Reason != "Ready" || cl.DaysLeft == nil || *cl.DaysLeft < 28 || *cl.DaysLeft > 30 {
		t.Errorf("cert list of a Ready Certificate with its Secret: %+v", cl)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	h.Eventually(60*time.Second, "the router serves "+host+" with the Certificate's Secret", func() (bool, error) {
		code, _, chain, err := c.r.get(roots, "https://"+host+"/version")
		if err != nil {
			return false, err
		}
		return code == 200 && len(chain) > 0 && slices.Contains(chain[0].DNSNames, host), nil
	})
}

// theirsUntouched: a Certificate in the way that is not tug's is never
// changed.
func (c *certTest) theirsUntouched(t *testing.T) {
	t.Helper()
	h, ctx := c.h, context.Background()
	theirsHost := "theirs-" + h.NS + ".example.test"
	c.theirsName = "shop-tls-" + strings.ReplaceAll(theirsHost, ".", "-")
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": c.theirsName, "labels": map[string]any{"owner": "someone-else"}},
		"spec": map[string]any{"secretName": "theirs", "dnsNames": []any{theirsHost},
			"issuerRef": map[string]any{"kind": "ClusterIssuer", "name": "theirs"}}}}
	if _, err := c.certs.Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := h.Tug("domain", "add", "shop", theirsHost); res.Code == 0 || !strings.Contains(res.Stderr, "is not tug's") {
		t.Errorf("domain add over a Certificate that is not tug's: want a refusal, got %s", res)
	}
	got, err := c.certs.Get(ctx, c.theirsName, metav1.GetOptions{})
	if err != nil || !reflect.DeepEqual(got.Object["spec"], theirs.Object["spec"]) || got.GetLabels()["tug.dev/app"] != "" {
		t.Errorf("their Certificate changed: %v %v", got, err)
	}
	if out := h.mustTug("domain", "list", "shop", "-o", "json").Stdout; strings.Contains(out, theirsHost) {
		t.Errorf("the refused domain was recorded: %s", out)
	}
}

// withoutCertManagerAPI: without cert-manager's API (hidden here by a
// proxy that answers 404 for it, as a cluster without the CRDs does), the
// setting is unusable: domain add says so and changes nothing.
func (c *certTest) withoutCertManagerAPI(t *testing.T) {
	t.Helper()
	h, ctx := c.h, context.Background()
	f := h.faulty()
	f.p.Add(faultproxy.Rule{Path: "/apis/cert-manager.io/", Fault: faultproxy.NotFound})
	noCRD := "nocrd-" + h.NS + ".example.test"
	ingBefore, _ := h.Client.NetworkingV1().Ingresses(h.NS).Get(ctx, "shop", metav1.GetOptions{})
	if res := f.tug("domain", "add", "shop", noCRD); res.Code != 1 || !strings.Contains(res.Stderr, "does not serve cert-manager's Certificate resource") || !strings.Contains(res.Stderr, c.issuer) {
		t.Errorf("domain add without cert-manager's API: want exit 1 saying the setting cannot be used, got %s", res)
	}
	f.injected(faultproxy.NotFound, 0)
	if out := h.mustTug("domain", "list", "shop", "-o", "json").Stdout; strings.Contains(out, noCRD) {
		t.Errorf("the refused domain was recorded: %s", out)
	}
	if ing, _ := h.Client.NetworkingV1().Ingresses(h.NS).Get(ctx, "shop", metav1.GetOptions{}); !reflect.DeepEqual(ing.Spec, ingBefore.Spec) {
		t.Errorf("the Ingress changed: %+v", ing.Spec)
	}
}

// ownCertWins: a user's own certificate wins over the issuer.
func (c *certTest) ownCertWins(t *testing.T) {
	t.Helper()
	h, ctx := c.h, context.Background()
	own := "own-" + h.NS + ".example.test"
	ownName := "shop-tls-" + strings.ReplaceAll(own, ".", "-")
	h.mustTug("domain", "add", "shop", own)
	if _, err := c.certs.Get(ctx, ownName, metav1.GetOptions{}); err != nil {
		t.Fatalf("no Certificate for %s: %v", own, err)
	}
	ownCert, ownKey := selfSigned(t, []string{own}, c.now.Add(-time.Hour), c.now.Add(10*24*time.Hour))
	h.mustTug("cert", "add", "shop", own, "--cert", ownCert, "--key", ownKey)
	if _, err := c.certs.Get(ctx, ownName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the issuer's Certificate for %s after cert add: %v", own, err)
	}
	if cl := h.certList("shop")[own]; cl.Source != "user" || cl.Status != "valid" || cl.DaysLeft == nil || *cl.DaysLeft > 10 {
		t.Errorf("cert list after cert add over the issuer: %+v", cl)
	}
}

// domainRemove: domain remove takes the Certificate and then its Secret.
func (c *certTest) domainRemove(t *testing.T) {
	t.Helper()
	h, ctx := c.h, context.Background()
	h.mustTug("domain", "remove", "shop", c.host)
	if _, err := c.certs.Get(ctx, c.secret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Certificate %s after domain remove: %v", c.secret, err)
	}
	if _, err := h.Client.CoreV1().Secrets(h.NS).Get(ctx, c.secret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret %s after domain remove: %v", c.secret, err)
	}
	if _, ok := h.certList("shop")[c.host]; ok {
		t.Errorf("cert list still shows %s", c.host)
	}
}

// appRemove: app remove takes every Certificate of the app, and leaves
// theirs.
func (c *certTest) appRemove(t *testing.T) {
	t.Helper()
	h := c.h
	last := "last-" + h.NS + ".example.test"
	h.mustTug("domain", "add", "shop", last)
	h.mustTug("app", "remove", "shop", "--yes")
	list, err := c.certs.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, cert := range list.Items {
		left = append(left, cert.GetName())
	}
	if !slices.Equal(left, []string{c.theirsName}) {
		t.Errorf("Certificates after app remove: %q, want only %s (not tug's)", left, c.theirsName)
	}
}
