package e2e

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

type address struct {
	Kind string `json:"kind"`
	URL  string `json:"url"`
}

func TestAppAddressesAnswer(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "addr")
	h.mustTug("app", "deploy", "addr", "--image", sampleV1)
	var addrs []address
	if err := json.Unmarshal([]byte(h.mustTug("app", "address", "addr", "-o", "json").Stdout), &addrs); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, a := range addrs {
		kinds[a.Kind]++
		if a.Kind == "cluster-ip" || a.Kind == "node-port" {
			h.waitStatus(a.URL+"/version", 200, "v1")
		}
	}
	if kinds["cluster-ip"] != 1 || kinds["node-port"] < 1 || kinds["dns"] != 1 {
		t.Fatalf("addresses: %+v", addrs)
	}
}

func TestMaintenanceAndRoutable(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "site")
	h.mustTug("app", "deploy", "site", "--image", sampleV1)
	svc, err := h.Client.CoreV1().Services(h.NS).Get(context.Background(), "site", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + svc.Spec.ClusterIP + "/version"
	h.waitStatus(url, 200, "v1")

	h.mustTug("app", "maintenance", "site", "on")
	h.waitStatus(url, 503, "down for maintenance")
	if info := h.mustTug("app", "info", "site", "-o", "json").Stdout; !strings.Contains(info, `"maintenance": true`) {
		t.Fatalf("app info should show maintenance:\n%s", info)
	}
	h.waitUnits("site", "web", 1, sampleV1) // units keep running
	h.mustTug("app", "maintenance", "site", "off")
	h.waitStatus(url, 200, "v1")

	h.mustTug("app", "routable", "site", "off")
	h.Eventually(30*time.Second, "no answer while not routable", func() (bool, error) {
		code, body := status(url)
		return code == 0, fmt.Errorf("got %d %q", code, body)
	})
	h.waitUnits("site", "web", 1, sampleV1)
	h.mustTug("app", "routable", "site", "on")
	h.waitStatus(url, 200, "v1")
}

// Domains, certificates and the app's own URL, through the local router:
// each answers right after the command that routes it returns (tug waits
// until the router serves it), over the Gateway (HTTPRoutes) and over an
// Ingress (a host with a certificate of its own, or one that names an
// IngressClass).
func TestDomainsAndCertificates(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	ctx := context.Background()
	h.mustTug("app", "create", "front")
	h.mustTug("app", "create", "other")
	dep := h.mustTug("app", "deploy", "front", "--image", sampleV1)
	// the Gateway serves the apps domain over HTTPS (the cluster CA's
	// wildcard certificate), so that is the app's URL
	url := "https://" + r.appHost("front", h.NS) + "/"
	if !strings.Contains(dep.Stderr, " at "+url) {
		t.Errorf("the deploy does not end with the app's URL %s:\n%s", url, dep.Stderr)
	}
	// right after the deploy: no waiting here
	ca := clusterCA(t, h.Config)
	if code, body, _, err := r.get(ca, url+"version"); err != nil || code != 200 || !strings.Contains(body, "v1") {
		t.Fatalf("the app's URL right after its first deploy: %d %q %v", code, body, err)
	}
	var info struct {
		URLs []string `json:"urls"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("app", "info", "front", "-o", "json").Stdout), &info); err != nil || len(info.URLs) != 1 || info.URLs[0] != url {
		t.Fatalf("app info urls %q, %v", info.URLs, err)
	}

	host := "shop-" + h.NS + ".example.test"
	added := h.domainChange("add", "front", host)
	if code, body, _, err := r.get(nil, "http://"+host+"/version"); err != nil || code != 200 || !strings.Contains(body, "v1") {
		t.Fatalf("%s right after domain add: %d %q %v", host, code, body, err)
	}
	// the domain joins the app's URLs, in domain add's result, app info
	// and app address alike, and the router says it serves them
	withDomain := []string{url, "http://" + host + "/"}
	if added.Change != "added" || added.Status != "deployed" || added.Routing != "served" || !slices.Equal(added.URLs, withDomain) {
		t.Errorf("domain add -o json: %+v, want urls %q, served", added, withDomain)
	}
	if got := h.appURLs("front"); !slices.Equal(got, withDomain) {
		t.Errorf("urls after domain add: %q, want %q", got, withDomain)
	}
	route, err := dynamic.NewForConfigOrDie(h.Config).Resource(httpRoutes).Namespace(h.NS).Get(ctx, "front", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hosts, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames"); !slices.Equal(hosts, []string{r.appHost("front", h.NS), host}) {
		t.Fatalf("HTTPRoute hostnames %q", hosts)
	}
	h.mustTug("domain", "add", "front", "example.test", "--path", "/shop", "--ingress-class", "nginx")
	ing, err := h.Client.NetworkingV1().Ingresses(h.NS).Get(ctx, "front-nginx", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "example.test" || ing.Spec.Rules[0].HTTP.Paths[0].Path != "/shop" ||
		ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" {
		t.Fatalf("a domain with --ingress-class is the Ingress's: %+v", ing.Spec)
	}
	if r := h.Tug("domain", "add", "other", host); r.Code != 1 || !strings.Contains(r.Stderr, `app "front"`) {
		t.Fatalf("a host of another app must be refused naming it: %s", r)
	}

	// HTTPS with the app's own certificate, on SNI: through the Ingress's TLS
	now := time.Now()
	certFile, keyFile := selfSigned(t, []string{host}, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	keyPEM, _ := os.ReadFile(keyFile)
	certPEM, _ := os.ReadFile(certFile)
	h.mustTug("cert", "add", "front", host, "--cert", certFile, "--key", keyFile)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	code, body, chain, err := r.get(roots, "https://"+host+"/version")
	if err != nil || code != 200 || !strings.Contains(body, "v1") || len(chain) == 0 || !slices.Contains(chain[0].DNSNames, host) {
		t.Fatalf("HTTPS for %s right after cert add: %d %q %v", host, code, body, err)
	}
	secName := "front-tls-" + strings.ReplaceAll(host, ".", "-")
	ing, _ = h.Client.NetworkingV1().Ingresses(h.NS).Get(ctx, "front", metav1.GetOptions{})
	if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != secName || !slices.Equal(ing.Spec.TLS[0].Hosts, []string{host}) {
		t.Fatalf("ingress tls: %+v", ing.Spec.TLS)
	}
	var certs []struct {
		Host     string `json:"host"`
		DaysLeft int    `json:"daysLeft"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("cert", "list", "front", "-o", "json").Stdout), &certs); err != nil {
		t.Fatal(err)
	}
	if len(certs) != 1 || certs[0].Host != host || certs[0].DaysLeft < 88 || certs[0].DaysLeft > 90 {
		t.Fatalf("cert list: %+v", certs)
	}
	for _, args := range [][]string{{"cert", "list", "front"}, {"app", "info", "front", "-o", "yaml"}, {"app", "export", "front"}, {"domain", "list", "front", "-o", "json"}} {
		if r := h.mustTug(args...); strings.Contains(r.Stdout+r.Stderr, strings.TrimSpace(string(keyPEM))[40:80]) {
			t.Fatalf("tug %v prints the private key", args)
		}
	}

	// pairs that must be refused
	_, otherKey := selfSigned(t, []string{host}, now.Add(-time.Hour), now.Add(time.Hour))
	wrongHost, wrongHostKey := selfSigned(t, []string{"evil.example.org"}, now.Add(-time.Hour), now.Add(time.Hour))
	expired, expiredKey := selfSigned(t, []string{host}, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	for _, c := range []struct{ cert, key, want string }{
		{certFile, otherKey, "does not match"},
		{wrongHost, wrongHostKey, "not for " + host},
		{expired, expiredKey, "expired"},
		{"/nonexistent.crt", otherKey, "no such file"},
	} {
		r := h.Tug("cert", "add", "front", host, "--cert", c.cert, "--key", c.key)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("cert add %s: want exit 2 with %q, got %s", filepath.Base(c.cert), c.want, r)
		}
	}

	h.mustTug("cert", "remove", "front", host)
	if _, err := h.Client.CoreV1().Secrets(h.NS).Get(ctx, secName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("TLS secret after cert remove: %v", err)
	}
	// without its certificate the host is the Gateway's again
	if code, _, _, err := r.get(nil, "http://"+host+"/version"); err != nil || code != 200 {
		t.Fatalf("%s right after cert remove: %d %v", host, code, err)
	}
	removed := h.domainChange("remove", "front", host)
	if code, _, _, err := r.get(nil, "http://"+host+"/version"); err != nil || code != 404 {
		t.Fatalf("%s right after domain remove: %d %v; want the router's 404", host, code, err)
	}
	// the host leaves the URLs; the Ingress's domain stays
	without := []string{url, "http://example.test/shop"}
	if removed.Change != "removed" || len(removed.Domains) != 1 || removed.Domains[0].Host != "example.test" || !slices.Equal(removed.URLs, without) {
		t.Errorf("domain remove -o json: %+v, want urls %q", removed, without)
	}
	if got := h.appURLs("front"); !slices.Equal(got, without) {
		t.Errorf("urls after domain remove: %q, want %q", got, without)
	}
	h.mustTug("domain", "remove", "front", "example.test")
	if ings, err := h.Client.NetworkingV1().Ingresses(h.NS).List(ctx, metav1.ListOptions{}); err != nil || len(ings.Items) != 0 {
		t.Fatalf("ingresses after the last domain went: %v %v", ings, err)
	}
	// the app's own URL stays
	if code, _, _, err := r.get(ca, url+"version"); err != nil || code != 200 {
		t.Fatalf("the app's URL after its domains went: %d %v", code, err)
	}
	if got := h.appURLs("front"); !slices.Equal(got, []string{url}) {
		t.Errorf("urls after the last domain went: %q, want %q", got, url)
	}
}

// domainResult is what domain add|remove -o json prints (docs/output.md).
type domainResult struct {
	Change  string `json:"change"`
	Status  string `json:"status"`
	Routing string `json:"routing"`
	Domains []struct {
		Host string `json:"host"`
	} `json:"domains"`
	URLs []string `json:"urls"`
}

// domainChange runs 'domain VERB APP HOST -o json' and reads its result.
func (h *H) domainChange(verb, appName, host string) domainResult {
	h.t.Helper()
	var res domainResult
	out := h.mustTug("domain", verb, appName, host, "-o", "json").Stdout
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		h.t.Fatalf("domain %s -o json: %v\n%s", verb, err, out)
	}
	return res
}

// appURLs are the app's URLs as app info -o json gives them, which must
// be the url entries of app address -o json, in the same order.
func (h *H) appURLs(appName string) []string {
	h.t.Helper()
	var info struct {
		URLs []string `json:"urls"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("app", "info", appName, "-o", "json").Stdout), &info); err != nil {
		h.t.Fatalf("app info -o json: %v", err)
	}
	var addrs []struct {
		Kind string `json:"kind"`
		URL  string `json:"url"`
	}
	if err := json.Unmarshal([]byte(h.mustTug("app", "address", appName, "-o", "json").Stdout), &addrs); err != nil {
		h.t.Fatalf("app address -o json: %v", err)
	}
	var fromAddress []string
	for _, a := range addrs {
		if a.Kind == "url" {
			fromAddress = append(fromAddress, a.URL)
		}
	}
	if !slices.Equal(info.URLs, fromAddress) {
		h.t.Errorf("app info urls %q, app address urls %q: they must agree", info.URLs, fromAddress)
	}
	return info.URLs
}

func TestAllowListMakesANetworkPolicy(t *testing.T) {
	h := New(t)
	ctx := context.Background()
	h.mustTug("app", "create", "guarded")
	h.mustTug("app", "deploy", "guarded", "--image", sampleV1)
	h.mustTug("app", "allow", "add", "guarded", "10.0.0.0/8", "192.168.1.5")
	np, err := h.Client.NetworkingV1().NetworkPolicies(h.NS).Get(ctx, "guarded-allow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cidrs []string
	for _, p := range np.Spec.Ingress[0].From {
		cidrs = append(cidrs, p.IPBlock.CIDR)
	}
	if !slices.Equal(cidrs, []string{"10.0.0.0/8", "192.168.1.5/32"}) || np.Spec.PodSelector.MatchLabels["tug.dev/process"] != "web" || len(np.Spec.Ingress) != 1 {
		t.Fatalf("network policy: %+v", np.Spec)
	}
	h.mustTug("app", "allow", "remove", "guarded", "10.0.0.0/8", "192.168.1.5")
	if _, err := h.Client.NetworkingV1().NetworkPolicies(h.NS).Get(ctx, "guarded-allow", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("policy after the last source went: %v", err)
	}
}

func TestTrafficBadInputChangesNothing(t *testing.T) {
	h := New(t)
	h.mustTug("app", "create", "tidy")
	h.mustTug("app", "deploy", "tidy", "--image", sampleV1)
	for _, args := range [][]string{
		{"domain", "add", "tidy", "bad_host.example.com"},
		{"domain", "add", "tidy", "10.1.2.3"},
		{"domain", "add", "tidy", "nodot"},
		{"domain", "add", "tidy", "ok.example.com", "--path", "noslash"},
		{"app", "allow", "add", "tidy", "10.0.0.1/8"},
		{"app", "allow", "add", "tidy", "not-a-cidr"},
		{"app", "maintenance", "tidy", "maybe"},
		{"cert", "add", "tidy", "ok.example.com"},
	} {
		if r := h.Tug(args...); r.Code != 2 {
			t.Errorf("tug %q: want exit 2, got %s", args, r)
		}
	}
	ctx := context.Background()
	ings, _ := h.Client.NetworkingV1().Ingresses(h.NS).List(ctx, metav1.ListOptions{})
	nps, _ := h.Client.NetworkingV1().NetworkPolicies(h.NS).List(ctx, metav1.ListOptions{})
	if len(ings.Items)+len(nps.Items) != 0 {
		t.Fatalf("bad input created %d ingresses and %d policies", len(ings.Items), len(nps.Items))
	}
}
