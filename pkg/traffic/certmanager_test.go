package traffic

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/route"
	"tug.dev/tug/pkg/route/routetest"
)

func issuerSettings(cluster, pool string) *clustersettings.Stored {
	s := &clustersettings.Stored{Found: true, Cluster: clustersettings.Settings{}, Pools: map[string]clustersettings.Settings{}}
	if cluster != "" {
		s.Cluster[clustersettings.CertIssuer] = cluster
	}
	if pool != "" {
		s.Pools["edge"] = clustersettings.Settings{clustersettings.CertIssuer: pool}
	}
	return s
}

func certificates(t *testing.T, dyn *dynamicfake.FakeDynamicClient) []unstructured.Unstructured {
	t.Helper()
	l, err := dyn.Resource(route.Certificates).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// domain add under an issuer setting records that the host's certificate
// comes from it; the pool's setting wins over the cluster's.
func TestDomainAddTakesTheIssuer(t *testing.T) {
	c, d := newApp(t)
	d.Dynamic, d.Settings = routetest.NewDynamic(t, nil), issuerSettings("ClusterIssuer/letsencrypt", "")
	if _, err := DomainAdd(context.Background(), d, DomainAddOptions{App: "shop", Host: "Shop.example.com"}, deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	// a second path of the host shares its certificate
	if _, err := DomainAdd(context.Background(), d, DomainAddOptions{App: "shop", Host: "shop.example.com", Path: "/api"}, deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	want := app.Domain{Host: "shop.example.com", Path: "/", TLSSecret: route.TLSSecretName("shop", "shop.example.com"), CertIssuer: "ClusterIssuer/letsencrypt"}
	doms := record(t, c).Domains
	if len(doms) != 2 || doms[0] != want || doms[1].TLSSecret != want.TLSSecret || doms[1].CertIssuer != want.CertIssuer {
		t.Fatalf("domains %+v, want both paths with %+v's certificate", doms, want)
	}

	// an app of pool edge takes its pool's issuer
	c, d = newApp(t)
	if _, err := (&app.Store{Client: c, Namespace: ns}).UpdateApp(context.Background(), "shop", func(x *app.App) error { x.Pool = "edge"; return nil }); err != nil {
		t.Fatal(err)
	}
	d.Dynamic, d.Settings = routetest.NewDynamic(t, nil), issuerSettings("ClusterIssuer/letsencrypt", "Issuer/edge-ca")
	if _, err := DomainAdd(context.Background(), d, DomainAddOptions{App: "shop", Host: "edge.example.com"}, deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := record(t, c).Domains[0].CertIssuer; got != "Issuer/edge-ca" {
		t.Errorf("issuer %q, want the pool's Issuer/edge-ca", got)
	}
}

// A host with a certificate of the user's own keeps it: the user's wins.
func TestDomainAddKeepsTheUsersCertificate(t *testing.T) {
	name := route.TLSSecretName("shop", "shop.example.com")
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/", TLSSecret: name})
	d.Dynamic, d.Settings = routetest.NewDynamic(t, nil), issuerSettings("ClusterIssuer/letsencrypt", "")
	if _, err := DomainAdd(context.Background(), d, DomainAddOptions{App: "shop", Host: "shop.example.com", Path: "/api"}, deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, dom := range record(t, c).Domains {
		if dom.TLSSecret != name || dom.CertIssuer != "" {
			t.Errorf("domain %+v: want the user's certificate, no issuer", dom)
		}
	}
}

// An issuer setting of the wrong shape, or a cluster that does not serve
// cert-manager's API, changes nothing.
func TestDomainAddUnusableIssuerChangesNothing(t *testing.T) {
	for _, tt := range []struct {
		name, setting, want string
		notServed           bool
	}{
		{"bare name", "letsencrypt", "want ClusterIssuer/NAME or Issuer/NAME", false},
		{"unknown kind", "Vault/ca", "want ClusterIssuer/NAME or Issuer/NAME", false},
		{"not served", "ClusterIssuer/letsencrypt", "does not serve cert-manager's Certificate resource", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, d := newApp(t)
			dyn := routetest.NewDynamic(t, nil)
			if tt.notServed {
				dyn.PrependReactor("list", "certificates", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewNotFound(route.Certificates.GroupResource(), "")
				})
			}
			d.Dynamic, d.Settings = dyn, issuerSettings(tt.setting, "")
			_, err := DomainAdd(context.Background(), d, DomainAddOptions{App: "shop", Host: "shop.example.com"}, deploy.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DomainAdd = %v, want %q", err, tt.want)
			}
			if doms := record(t, c).Domains; len(doms) != 0 {
				t.Errorf("the refused domain was recorded: %+v", doms)
			}
		})
	}
}

// cert add on a host whose certificate came from an issuer takes it over:
// the issuer leaves the record and its Certificate is deleted before the
// user's Secret is written; cert remove of an issued one clears both.
func TestCertAddWinsOverTheIssuer(t *testing.T) {
	ctx := context.Background()
	name := route.TLSSecretName("shop", "shop.example.com")
	c, d := newApp(t, app.Domain{Host: "shop.example.com", Path: "/", TLSSecret: name, CertIssuer: "ClusterIssuer/letsencrypt"})
	dyn := routetest.NewDynamic(t, nil)
	d.Dynamic = dyn
	cert := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": anyMap(route.TLSLabels("shop"))},
		"spec":     map[string]any{"secretName": name}}}
	if _, err := dyn.Resource(route.Certificates).Namespace(ns).Create(ctx, cert, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var order []string
	dyn.PrependReactor("delete", "certificates", func(k8stesting.Action) (bool, runtime.Object, error) {
		order = append(order, "delete certificate")
		return false, nil, nil
	})
	c.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		order = append(order, "write secret")
		return false, nil, nil
	})
	if _, err := CertAdd(ctx, d, certFiles(t, "shop.example.com"), deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := record(t, c).Domains[0]; got.TLSSecret != name || got.CertIssuer != "" {
		t.Errorf("domain %+v: want the user's certificate, no issuer", got)
	}
	if len(certificates(t, dyn)) != 0 || strings.Join(order, ", ") != "delete certificate, write secret" {
		t.Errorf("Certificates %d; order %q: want the Certificate deleted before the Secret is written", len(certificates(t, dyn)), order)
	}

	c, d = newApp(t, app.Domain{Host: "shop.example.com", Path: "/", TLSSecret: name, CertIssuer: "ClusterIssuer/letsencrypt"})
	d.Dynamic = routetest.NewDynamic(t, nil)
	if _, err := CertRemove(ctx, d, "shop", "shop.example.com", deploy.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := record(t, c).Domains[0]; got.TLSSecret != "" || got.CertIssuer != "" {
		t.Errorf("after cert remove: %+v", got)
	}
}

func certificate(name, host string, generation int64, conds ...map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": anyMap(route.TLSLabels("shop"))},
		"spec": map[string]any{"secretName": name, "dnsNames": []any{host},
			"issuerRef": map[string]any{"kind": "ClusterIssuer", "name": "letsencrypt"}}}}
	u.SetGeneration(generation)
	if len(conds) > 0 {
		var list []any
		for _, c := range conds {
			list = append(list, c)
		}
		_ = unstructured.SetNestedSlice(u.Object, list, "status", "conditions")
	}
	return u
}

func TestReadyCondition(t *testing.T) {
	issuing := map[string]any{"type": "Issuing", "status": "True", "reason": "DoesNotExist"}
	for _, tt := range []struct {
		name string
		u    *unstructured.Unstructured
		want *Condition
		st   string
	}{
		{"no status", certificate("a", "a.example.com", 1), nil, StatusPending},
		{"only Issuing", certificate("a", "a.example.com", 1, issuing), nil, StatusPending},
		{"ready", certificate("a", "a.example.com", 2, map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired", "observedGeneration": int64(2)}),
			&Condition{Status: "True", Reason: "Ready", Message: "Certificate is up to date and has not expired"}, StatusReady},
		{"not ready", certificate("a", "a.example.com", 1, issuing, map[string]any{"type": "Ready", "status": "False", "reason": "DoesNotExist", "message": "Issuing certificate as Secret does not exist", "observedGeneration": int64(1)}),
			&Condition{Status: "False", Reason: "DoesNotExist", Message: "Issuing certificate as Secret does not exist"}, StatusNotReady},
		{"unknown", certificate("a", "a.example.com", 1, map[string]any{"type": "Ready", "status": "Unknown"}), &Condition{Status: "Unknown"}, StatusPending},
		// ready for an older spec is no verdict on this one
		{"stale ready", certificate("a", "a.example.com", 3, map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "observedGeneration": int64(2)}),
			&Condition{Status: "True", Reason: "Ready", Stale: true}, StatusPending},
	} {
		got := ReadyCondition(tt.u)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("%s: ReadyCondition = %+v, want %+v", tt.name, got, tt.want)
		}
		if st := issuedStatus(got); st != tt.st {
			t.Errorf("%s: status %q, want %q", tt.name, st, tt.st)
		}
	}
}

// cert list joins the TLS Secrets, the Certificates and the record: a
// cert-manager certificate shows its Ready condition and, once its Secret
// is there, its expiry; one cert-manager has said nothing about is pending.
func TestListCertsWithCertManager(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c, _ := newApp(t)
	dyn := routetest.NewDynamic(t, nil)
	ready := route.TLSSecretName("shop", "ready.example.com")
	pending := route.TLSSecretName("shop", "pending.example.com")
	failing := route.TLSSecretName("shop", "failing.example.com")
	unmade := route.TLSSecretName("shop", "unmade.example.com")
	for _, u := range []*unstructured.Unstructured{
		certificate(ready, "ready.example.com", 1, map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "up to date", "observedGeneration": int64(1)}),
		certificate(pending, "pending.example.com", 1),
		certificate(failing, "failing.example.com", 1, map[string]any{"type": "Ready", "status": "False", "reason": "Failed", "message": "the issuer refused", "observedGeneration": int64(1)}),
	} {
		if _, err := dyn.Resource(route.Certificates).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// cert-manager's Secret for the ready one, labelled through secretTemplate
	certPEM, keyPEM := pair(t, []string{"ready.example.com"}, now.Add(-time.Hour), now.Add(60*24*time.Hour+time.Hour))
	if err := storeCert(ctx, c, ns, "shop", ready, "ready.example.com", certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	a := &app.App{Name: "shop", Namespace: ns, Release: 1, Domains: []app.Domain{
		{Host: "ready.example.com", TLSSecret: ready, CertIssuer: "ClusterIssuer/letsencrypt"},
		{Host: "pending.example.com", TLSSecret: pending, CertIssuer: "ClusterIssuer/letsencrypt"},
		{Host: "failing.example.com", TLSSecret: failing, CertIssuer: "ClusterIssuer/letsencrypt"},
		{Host: "unmade.example.com", TLSSecret: unmade, CertIssuer: "ClusterIssuer/letsencrypt"},
	}}
	certs, err := ListCerts(ctx, c, dyn, ns, a, now)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Cert{}
	for _, c := range certs {
		by[c.Host] = c
	}
	if len(certs) != 4 {
		t.Fatalf("certs %+v, want 4", certs)
	}
	r := by["ready.example.com"]
	if r.Source != "cert-manager" || r.IssuerRef != "ClusterIssuer/letsencrypt" || r.Status != StatusReady || r.Ready == nil || r.Ready.Reason != "Ready" ||
		r.DaysLeft == nil || *r.DaysLeft != 60 || r.Secret != ready {
		t.Errorf("ready: %+v", r)
	}
	if p := by["pending.example.com"]; p.Status != StatusPending || p.Ready != nil || p.NotAfter != nil || p.Source != "cert-manager" {
		t.Errorf("pending: %+v", p)
	}
	if f := by["failing.example.com"]; f.Status != StatusNotReady || f.Ready == nil || f.Ready.Reason != "Failed" || f.Ready.Message != "the issuer refused" {
		t.Errorf("failing: %+v", f)
	}
	if u := by["unmade.example.com"]; u.Status != StatusPending || !strings.Contains(u.Message, "no Certificate") || u.IssuerRef != "ClusterIssuer/letsencrypt" {
		t.Errorf("unmade: %+v", u)
	}
	// Certificates that may not be read: the record's hosts say so, never ready
	dyn.PrependReactor("list", "certificates", forbidden("certificates"))
	certs, err = ListCerts(ctx, c, dyn, ns, a, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range certs {
		if c.Status != StatusUnknown || !strings.Contains(c.Message, "could not be read") {
			t.Errorf("%s without read access: %+v", c.Host, c)
		}
	}
}
