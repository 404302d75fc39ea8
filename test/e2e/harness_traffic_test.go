package e2e

// Harness: the local router (Traefik on a host-only address), routes, the
// cluster CA and certificates, and HTTP through them.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"tug.dev/tug/pkg/route"
)

var httpRoutes = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}

// router is the local router's address and what the cluster says it offers.
type router struct {
	ip         string
	gatewayNS  string
	gateway    string
	appsDomain string
}

// appHost is app's own host in namespace ns under the router's apps
// domain, as tug names it (route.AppHost).
func (r router) appHost(app, ns string) string { return route.AppHost(app, ns, r.appsDomain) }

// localRouter finds the router (cluster.sh router, or TUG_E2E_ROUTER) and the
// cluster settings that name its Gateway and apps domain. Without an answer on
// the router's address the test skips, or fails under TUG_E2E_REQUIRED=1.
func (h *H) localRouter() router {
	h.t.Helper()
	ip := os.Getenv("TUG_E2E_ROUTER")
	if ip == "" {
		out, err := exec.Command(filepath.Join(repoRoot(), "test", "cluster", "cluster.sh"), "router").Output()
		if err != nil {
			h.t.Fatalf("cluster.sh router: %v", err)
		}
		ip = strings.TrimSpace(string(out))
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "80"), 2*time.Second); err != nil {
		msg := fmt.Sprintf("no router answers at %s:80 (%v); add it with 'test/cluster/cluster.sh ensure-router'", ip, err)
		if os.Getenv("TUG_E2E_REQUIRED") == "1" {
			h.t.Fatal(msg)
		}
		h.t.Skip(msg)
	} else {
		c.Close()
	}
	cm, err := h.Client.CoreV1().ConfigMaps("kube-public").Get(context.Background(), "tug-cluster-settings", metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("the cluster settings: %v", err)
	}
	ns, name, ok := strings.Cut(cm.Data["gateway"], "/")
	if !ok || ns == "" || name == "" || cm.Data["appsDomain"] == "" {
		h.t.Fatalf("cluster settings without a gateway (namespace/name) and an apps domain: %v", cm.Data)
	}
	return router{ip: ip, gatewayNS: ns, gateway: name, appsDomain: cm.Data["appsDomain"]}
}

// client sends every request to the router's address, whatever the URL's
// host (curl --resolve): the host still goes out as Host and SNI. Each
// request opens a new connection, so none rides on an old route; no proxy
// (a Transport without Proxy ignores HTTP_PROXY).
func (r router) client(roots *x509.CertPool) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(r.ip, port))
	}
	return &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		DialContext: dial, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
}

// get is one request through the router: status, body and the server's
// certificate chain (HTTPS only).
func (r router) get(roots *x509.CertPool, url string) (int, string, []*x509.Certificate, error) {
	resp, err := r.client(roots).Get(url)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	var chain []*x509.Certificate
	if resp.TLS != nil {
		chain = resp.TLS.PeerCertificates
	}
	return resp.StatusCode, string(b), chain, err
}

// versions sends n requests to url through the router and counts the
// answers by the sample's version line; a failed or non-200 request is
// counted as "failed".
func versions(t *testing.T, r router, url string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		code, body, _, err := r.get(nil, url)
		switch {
		case err != nil || code != 200:
			got["failed"]++
		case strings.Contains(body, "sample v1"):
			got["v1"]++
		case strings.Contains(body, "sample v2"):
			got["v2"]++
		default:
			got["other"]++
		}
	}
	return got
}

// httpRoute is an HTTPRoute of host to service:80 through the router's Gateway.
func httpRoute(r router, name, host, service string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1",
		"kind":       "HTTPRoute",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": r.gateway, "namespace": r.gatewayNS}},
			"hostnames":  []any{host},
			"rules": []any{map[string]any{
				"backendRefs": []any{map[string]any{"name": service, "port": int64(80)}},
			}},
		},
	}}
}

// routerIngressClass is the IngressClass whose controller is the router's.
func (h *H) routerIngressClass() string {
	h.t.Helper()
	list, err := h.Client.NetworkingV1().IngressClasses().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, c := range list.Items {
		if c.Spec.Controller == "traefik.io/ingress-controller" {
			return c.Name
		}
	}
	h.t.Fatalf("no IngressClass of traefik.io/ingress-controller: %d classes", len(list.Items))
	return ""
}

var gateways = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}

// clusterCA is the CA the admin kubeconfig trusts: the cluster's own, which
// also signs the router's wildcard certificate.
func clusterCA(t *testing.T, cfg *rest.Config) *x509.CertPool {
	t.Helper()
	pemData := cfg.TLSClientConfig.CAData
	if len(pemData) == 0 {
		b, err := os.ReadFile(cfg.TLSClientConfig.CAFile)
		if err != nil {
			t.Fatalf("the cluster CA: %v", err)
		}
		pemData = b
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatal("the kubeconfig's CA holds no certificate")
	}
	return pool
}

// selfSigned writes a certificate for hosts, valid from notBefore to
// notAfter, and its key; it returns the two file paths.
func selfSigned(t *testing.T, hosts []string, notBefore, notAfter time.Time) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: hosts[0]},
		DNSNames: hosts, NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile
}

// status GETs url and returns the HTTP status and body (0 when no answer).
func status(url string) (int, string) {
	// a new connection each time: a kept-alive one stays on the backend
	// kube-proxy chose when it opened, whatever the Service says now
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (h *H) waitStatus(url string, want int, bodyHas string) {
	h.t.Helper()
	h.Eventually(30*time.Second, fmt.Sprintf("%s answers %d", url, want), func() (bool, error) {
		code, body := status(url)
		if code != want || !strings.Contains(body, bodyHas) {
			return false, fmt.Errorf("got %d %q", code, body)
		}
		return true, nil
	})
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	body, err := tryGet(url)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func tryGet(url string) (string, error) {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return string(b), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

// copyPoller polls an app's /version during a move: at the old copy's
// address and, once namespace newNS has the app's Service, at the new
// copy's. A poll where neither answers is a gap.
type copyPoller struct {
	polls, gaps atomic.Int64
	newServed   atomic.Bool
	mu          sync.Mutex
	gapNotes    []string
	stop, done  chan struct{}
}

// pollCopies starts polling; halt stops it.
func (h *H) pollCopies(oldURL, newNS, appName string) *copyPoller {
	c := &copyPoller{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		newURL := ""
		// paced, not synchronising: a poll every 20ms leaves CPU to the move
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
			if newURL == "" {
				if s, err := h.Client.CoreV1().Services(newNS).Get(context.Background(), appName, metav1.GetOptions{}); err == nil && s.Spec.ClusterIP != "" {
					newURL = "http://" + s.Spec.ClusterIP + "/version"
				}
			}
			c.polls.Add(1)
			oc, ob := status(oldURL)
			if oc == 200 {
				continue
			}
			nc, nb := 0, "no Service yet"
			if newURL != "" {
				nc, nb = status(newURL)
			}
			if nc == 200 {
				c.newServed.Store(true)
				continue
			}
			c.gaps.Add(1)
			c.mu.Lock()
			c.gapNotes = append(c.gapNotes, fmt.Sprintf("%s: old %d %q, new %d %q", time.Now().Format("15:04:05.000"), oc, ob, nc, nb))
			c.mu.Unlock()
		}
	}()
	return c
}

// halt stops the polling and waits until it has.
func (c *copyPoller) halt() {
	close(c.stop)
	<-c.done
}

// certificatesGVR is cert-manager's Certificate resource.
var certificatesGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}

// certJSON is a row of `cert list -o json`.
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

// certList is `cert list APP -o json` by host.
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

// setCertReady writes the Ready condition of Certificate name in the
// status subresource, standing in for cert-manager's controller (this is
// not issuance): tug reads it as the API server stores it.
func setCertReady(t *testing.T, certs dynamic.ResourceInterface, name, status, reason, message string) {
	t.Helper()
	ctx := context.Background()
	cur, err := certs.Get(ctx, name, metav1.GetOptions{})
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
