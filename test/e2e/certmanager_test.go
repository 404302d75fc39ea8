package e2e

import (
	"context"
	"crypto/x509"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
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

var certificatesGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}

type certJSON struct {
	Host      string `json:"host"`
	Secret    string `json:"secret"`
	Source    string `json:"source"`
	IssuerRef string `json:"issuerRef"`
	Status    string `json:"status"`
	Ready     *struct {
		Status, Reason, Message string
	} `json:"ready"`
	Message  string     `json:"message"`
	NotAfter *time.Time `json:"notAfter"`
	DaysLeft *int       `json:"daysLeft"`
}

func (h *H) certList(app string) map[string]certJSON {
	h.t.Helper()
	var certs []certJSON
	if err := json.Unmarshal([]byte(h.mustTug("cert", "list", app, "-o", "json").Stdout), &certs); err != nil {
		h.t.Fatal(err)
	}
	out := map[string]certJSON{}
	for _, c := range certs {
		out[c.Host] = c
	}
	return out
}

// needCertManagerCRDs skips (or fails, under TUG_E2E_REQUIRED=1) where the
// cluster does not serve cert-manager's Certificate.
func (h *H) needCertManagerCRDs(dyn dynamic.Interface) {
	h.t.Helper()
	_, err := dyn.Resource(certificatesGVR).Namespace(h.NS).List(context.Background(), metav1.ListOptions{Limit: 1})
	if err == nil {
		return
	}
	msg := "this cluster does not serve cert-manager's Certificate (" + err.Error() + "); add it with 'test/cluster/cluster.sh ensure-cert-manager-crds'"
	if os.Getenv("TUG_E2E_REQUIRED") == "1" {
		h.t.Fatal(msg)
	}
	h.t.Skip(msg)
}

func TestCertManagerCertificates(t *testing.T) {
	// The issuer is set for a pool of this test's own, so no other test's
	// domain add sees it; a real node joins that pool for the test's units
	// (restored at the end), so node tests of this run wait for it.
	h := newNodeH(t)
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(h.Config)
	h.needCertManagerCRDs(dyn)
	r := h.localRouter()
	certs := dyn.Resource(certificatesGVR).Namespace(h.NS)

	pool := "e2e-cm-" + randSuffix()
	// whatever this test leaves in the settings goes when it ends
	t.Cleanup(func() { h.Tug("cluster", "settings", "unset", "--pool", pool, "certIssuer") })
	settingsData := func() map[string]string {
		cm, err := h.Client.CoreV1().ConfigMaps("kube-public").Get(ctx, "tug-cluster-settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}
	// an issuer setting of the wrong shape is refused and changes nothing
	before := settingsData()
	for _, bad := range []string{"letsencrypt", "Vault/ca", "ClusterIssuer/Bad_Name"} {
		if res := h.Tug("cluster", "settings", "set", "--pool", pool, "certIssuer="+bad); res.Code != 2 || !strings.Contains(res.Stderr, "ClusterIssuer/NAME or Issuer/NAME") {
			t.Errorf("certIssuer=%s: want exit 2 naming the shape, got %s", bad, res)
		}
	}
	if after := settingsData(); after["pool."+pool+".certIssuer"] != "" {
		t.Fatalf("a refused setting was written: %v (before %v)", after, before)
	}
	issuer := "ClusterIssuer/e2e-" + randSuffix()
	h.mustTug("cluster", "settings", "set", "--pool", pool, "certIssuer="+issuer)

	// The node is in the pool only while the app's unit is placed: the
	// changes below never change its pod template, so the unit stays, and
	// a node test of another run that saves and restores the node's labels
	// meanwhile has the shortest window to see this test's label.
	nodes := h.realNodes()
	node := nodes[len(nodes)-1]
	h.keepNodeState(node)
	h.labelPool(node, pool)
	h.mustTug("app", "create", "shop", "--pool", pool)
	h.mustTug("app", "deploy", "shop", "--image", sampleV1)
	h.unlabelPool(node, pool)

	host := "shop-" + h.NS + ".example.test"
	secret := "shop-tls-" + strings.ReplaceAll(host, ".", "-")
	h.mustTug("domain", "add", "shop", host)

	// what tug created: the Certificate, the app's, filling the Secret its Ingress serves
	cert, err := certs.Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no Certificate %s after domain add: %v", secret, err)
	}
	spec, _, _ := unstructured.NestedMap(cert.Object, "spec")
	kind, name, _ := strings.Cut(issuer, "/")
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

	// No status yet (nothing runs cert-manager's controller): pending, never ready.
	c := h.certList("shop")[host]
	if c.Status != "pending" || c.Ready != nil || c.Source != "cert-manager" || c.IssuerRef != issuer || c.NotAfter != nil || c.Secret != secret {
		t.Errorf("cert list of a Certificate with no status: %+v", c)
	}
	if out := h.mustTug("cert", "list", "shop").Stdout; !strings.Contains(out, "pending") || strings.Contains(out, "ready") || strings.Contains(out, "ok") {
		t.Errorf("cert list table of a pending certificate:\n%s", out)
	}

	// The test writes the status subresource itself, standing in for
	// cert-manager's controller (this is not issuance): tug reads it as
	// the API server stores it.
	setReady := func(status, reason, message string) {
		t.Helper()
		cur, err := certs.Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedSlice(cur.Object, []any{map[string]any{
			"type": "Ready", "status": status, "reason": reason, "message": message,
			"observedGeneration": cur.GetGeneration(), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}}, "status", "conditions")
		if _, err := certs.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("writing the Certificate's status (as cert-manager would): %v", err)
		}
	}
	setReady("False", "DoesNotExist", "Issuing certificate as Secret does not exist")
	c = h.certList("shop")[host]
	if c.Status != "not ready" || c.Ready == nil || c.Ready.Status != "False" || c.Ready.Reason != "DoesNotExist" || c.Ready.Message != "Issuing certificate as Secret does not exist" {
		t.Errorf("cert list of a Certificate that is not Ready: %+v", c)
	}
	if out := h.mustTug("cert", "list", "shop").Stdout; !strings.Contains(out, "not ready") || !strings.Contains(out, "DoesNotExist: Issuing certificate as Secret does not exist") {
		t.Errorf("cert list table of a certificate that is not ready:\n%s", out)
	}

	// The test also writes the Secret cert-manager would write (labelled as
	// the Certificate's secretTemplate asks), again standing in for its
	// controller: the router serves it for the host, and cert list reads
	// its expiry.
	now := time.Now()
	certFile, keyFile := selfSigned(t, []string{host}, now.Add(-time.Hour), now.Add(30*24*time.Hour))
	certPEM, _ := os.ReadFile(certFile)
	keyPEM, _ := os.ReadFile(keyFile)
	if _, err := h.Client.CoreV1().Secrets(h.NS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secret,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "tug", "app.kubernetes.io/name": "shop", "tug.dev/app": "shop", "tug.dev/kind": "tls"},
			Annotations: map[string]string{"tug.dev/host": host, "cert-manager.io/certificate-name": secret}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setReady("True", "Ready", "Certificate is up to date and has not expired")
	c = h.certList("shop")[host]
	if c.Status != "ready" || c.Ready == nil || c.Ready.Reason != "Ready" || c.DaysLeft == nil || *c.DaysLeft < 28 || *c.DaysLeft > 30 {
		t.Errorf("cert list of a Ready Certificate with its Secret: %+v", c)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	h.Eventually(60*time.Second, "the router serves "+host+" with the Certificate's Secret", func() (bool, error) {
		code, _, chain, err := r.get(roots, "https://"+host+"/version")
		if err != nil {
			return false, err
		}
		return code == 200 && len(chain) > 0 && slices.Contains(chain[0].DNSNames, host), nil
	})

	// A Certificate in the way that is not tug's is never changed.
	theirsHost := "theirs-" + h.NS + ".example.test"
	theirsName := "shop-tls-" + strings.ReplaceAll(theirsHost, ".", "-")
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": theirsName, "labels": map[string]any{"owner": "someone-else"}},
		"spec": map[string]any{"secretName": "theirs", "dnsNames": []any{theirsHost},
			"issuerRef": map[string]any{"kind": "ClusterIssuer", "name": "theirs"}}}}
	if _, err := certs.Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := h.Tug("domain", "add", "shop", theirsHost); res.Code == 0 || !strings.Contains(res.Stderr, "is not tug's") {
		t.Errorf("domain add over a Certificate that is not tug's: want a refusal, got %s", res)
	}
	got, err := certs.Get(ctx, theirsName, metav1.GetOptions{})
	if err != nil || !reflect.DeepEqual(got.Object["spec"], theirs.Object["spec"]) || got.GetLabels()["tug.dev/app"] != "" {
		t.Errorf("their Certificate changed: %v %v", got, err)
	}
	if out := h.mustTug("domain", "list", "shop", "-o", "json").Stdout; strings.Contains(out, theirsHost) {
		t.Errorf("the refused domain was recorded: %s", out)
	}

	// Without cert-manager's API (hidden here by a proxy that answers 404
	// for it, as a cluster without the CRDs does), the setting is
	// unusable: domain add says so and changes nothing.
	f := h.faulty()
	f.p.Add(faultproxy.Rule{Path: "/apis/cert-manager.io/", Fault: faultproxy.NotFound})
	noCRD := "nocrd-" + h.NS + ".example.test"
	ingBefore, _ := h.Client.NetworkingV1().Ingresses(h.NS).Get(ctx, "shop", metav1.GetOptions{})
	if res := f.tug("domain", "add", "shop", noCRD); res.Code != 1 || !strings.Contains(res.Stderr, "does not serve cert-manager's Certificate resource") || !strings.Contains(res.Stderr, issuer) {
		t.Errorf("domain add without cert-manager's API: want exit 1 saying the setting cannot be used, got %s", res)
	}
	f.injected(faultproxy.NotFound, 0)
	if out := h.mustTug("domain", "list", "shop", "-o", "json").Stdout; strings.Contains(out, noCRD) {
		t.Errorf("the refused domain was recorded: %s", out)
	}
	if ing, _ := h.Client.NetworkingV1().Ingresses(h.NS).Get(ctx, "shop", metav1.GetOptions{}); !reflect.DeepEqual(ing.Spec, ingBefore.Spec) {
		t.Errorf("the Ingress changed: %+v", ing.Spec)
	}

	// A user's own certificate wins over the issuer.
	own := "own-" + h.NS + ".example.test"
	ownName := "shop-tls-" + strings.ReplaceAll(own, ".", "-")
	h.mustTug("domain", "add", "shop", own)
	if _, err := certs.Get(ctx, ownName, metav1.GetOptions{}); err != nil {
		t.Fatalf("no Certificate for %s: %v", own, err)
	}
	ownCert, ownKey := selfSigned(t, []string{own}, now.Add(-time.Hour), now.Add(10*24*time.Hour))
	h.mustTug("cert", "add", "shop", own, "--cert", ownCert, "--key", ownKey)
	if _, err := certs.Get(ctx, ownName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the issuer's Certificate for %s after cert add: %v", own, err)
	}
	if c := h.certList("shop")[own]; c.Source != "user" || c.Status != "valid" || c.DaysLeft == nil || *c.DaysLeft > 10 {
		t.Errorf("cert list after cert add over the issuer: %+v", c)
	}

	// domain remove takes the Certificate and then its Secret
	h.mustTug("domain", "remove", "shop", host)
	if _, err := certs.Get(ctx, secret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Certificate %s after domain remove: %v", secret, err)
	}
	if _, err := h.Client.CoreV1().Secrets(h.NS).Get(ctx, secret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret %s after domain remove: %v", secret, err)
	}
	if _, ok := h.certList("shop")[host]; ok {
		t.Errorf("cert list still shows %s", host)
	}

	// app remove takes every Certificate of the app, and leaves theirs
	last := "last-" + h.NS + ".example.test"
	h.mustTug("domain", "add", "shop", last)
	h.mustTug("app", "remove", "shop", "--yes")
	list, err := certs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, c := range list.Items {
		left = append(left, c.GetName())
	}
	if !slices.Equal(left, []string{theirsName}) {
		t.Errorf("Certificates after app remove: %q, want only %s (not tug's)", left, theirsName)
	}
}
