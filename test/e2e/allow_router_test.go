package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var traefikMiddlewares = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "middlewares"}

// sourceTowards is the address this test's connections to the router come
// from: what the router sees as the client (tug runs here too).
func (r router) sourceTowards(t *testing.T) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort(r.ip, "80"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.TCPAddr).IP.String()
}

// getHeader is one request through the router with one extra header.
func (r router) getHeader(url, key, value string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set(key, value)
	resp, err := r.client(nil).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// The allow list and maintenance are enforced where routed traffic enters:
// through the local router (Traefik), on both paths (the app's URL through
// the Gateway, a domain through the router's Ingress), a list that leaves
// the client out is refused at the router (403) and one that lets it in is
// served, and maintenance answers 503 and then 200 again, each right after
// the command that changes it returns.
func TestAllowListAndMaintenanceAtTheRouter(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	ctx := context.Background()
	cm, err := h.Client.CoreV1().ConfigMaps("kube-public").Get(ctx, "tug-cluster-settings", metav1.GetOptions{})
	if err != nil || cm.Data["router"] != "traefik" {
		t.Fatalf("the local cluster's settings should say router=traefik (test/cluster/cluster.sh ensure-router writes it): %v %v", cm.Data, err)
	}
	dyn, err := dynamic.NewForConfig(h.Config)
	if err != nil {
		t.Fatal(err)
	}
	ca := clusterCA(t, h.Config)
	h.mustTug("app", "create", "gate")
	h.mustTug("app", "deploy", "gate", "--image", sampleV1)
	ingHost := "gate-" + h.NS + ".example.test"
	h.mustTug("domain", "add", "gate", ingHost, "--ingress-class", h.routerIngressClass())
	urls := map[string]string{
		"gateway": "https://" + r.appHost("gate", h.NS) + "/version", // the app's URL: the HTTPRoute
		"ingress": "http://" + ingHost + "/version",                  // the router's Ingress
	}
	// answers is what every path gives right now: no waiting
	answers := func(when string, want int, bodyHas string) {
		t.Helper()
		for path, url := range urls {
			code, body, _, err := r.get(ca, url)
			if err != nil || code != want || !strings.Contains(body, bodyHas) {
				t.Fatalf("%s, through the %s (%s): got %d %q %v, want %d", when, path, url, code, body, err, want)
			}
		}
	}
	answers("after domain add", 200, "v1")
	me := r.sourceTowards(t)

	// a list that leaves the client out: refused at the router
	res := h.mustTug("app", "allow", "add", "gate", "192.0.2.0/24")
	if strings.Contains(res.Stderr, "warning") {
		t.Errorf("through Traefik the list is enforced; no warning expected:\n%s", res.Stderr)
	}
	answers("right after allow add 192.0.2.0/24", 403, "Forbidden")
	// an X-Forwarded-For header is not believed
	if code, body, err := r.getHeader(urls["ingress"], "X-Forwarded-For", "192.0.2.1"); err != nil || code != 403 {
		t.Errorf("a forged X-Forwarded-For got %d %q %v; want the router's 403", code, body, err)
	}
	m, err := dyn.Resource(traefikMiddlewares).Namespace(h.NS).Get(ctx, "gate-allow", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the app's Middleware: %v", err)
	}
	if ranges, _, _ := unstructured.NestedStringSlice(m.Object, "spec", "ipAllowList", "sourceRange"); len(ranges) != 1 || ranges[0] != "192.0.2.0/24" ||
		m.GetLabels()["app.kubernetes.io/managed-by"] != "tug" || m.GetLabels()["tug.dev/app"] != "gate" {
		t.Fatalf("Middleware %v", m.Object)
	}

	// ... and one that lets it in: served
	h.mustTug("app", "allow", "add", "gate", me)
	answers("right after allow add "+me, 200, "v1")
	// maintenance through the list that admits the client
	h.mustTug("app", "maintenance", "gate", "on")
	answers("right after maintenance on", 503, "maintenance")
	h.mustTug("app", "maintenance", "gate", "off")
	answers("right after maintenance off", 200, "v1")

	h.mustTug("app", "allow", "remove", "gate", me)
	answers("right after allow remove "+me, 403, "Forbidden")
	h.mustTug("app", "allow", "remove", "gate", "192.0.2.0/24")
	answers("right after the list was emptied", 200, "v1")
	if _, err := dyn.Resource(traefikMiddlewares).Namespace(h.NS).Get(ctx, "gate-allow", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Middleware after the list was emptied: %v", err)
	}

	// maintenance without a list
	h.mustTug("app", "maintenance", "gate", "on")
	answers("right after maintenance on (no list)", 503, "maintenance")
	h.mustTug("app", "maintenance", "gate", "off")
	answers("right after maintenance off (no list)", 200, "v1")

	// the Middleware goes with the app
	h.mustTug("app", "allow", "add", "gate", "192.0.2.0/24")
	h.mustTug("app", "remove", "gate", "--yes")
	if _, err := dyn.Resource(traefikMiddlewares).Namespace(h.NS).Get(ctx, "gate-allow", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Middleware after app remove: %v", err)
	}
}

// A Middleware of the app's name that is not tug's stops allow add before
// anything changes, and stays as it was.
func TestAllowMiddlewareOfAnotherOwnerIsRefused(t *testing.T) {
	h := New(t)
	h.localRouter()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(h.Config)
	if err != nil {
		t.Fatal(err)
	}
	h.mustTug("app", "create", "gate")
	h.mustTug("app", "deploy", "gate", "--image", sampleV1)
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
		"metadata": map[string]any{"name": "gate-allow", "labels": map[string]any{"team": "ops"}},
		"spec":     map[string]any{"ipAllowList": map[string]any{"sourceRange": []any{"198.51.100.0/24"}}}}}
	if _, err := dyn.Resource(traefikMiddlewares).Namespace(h.NS).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := h.Tug("app", "allow", "add", "gate", "192.0.2.0/24")
	if res.Code == 0 || !strings.Contains(res.Stderr, `Middleware "gate-allow"`) {
		t.Fatalf("allow add over a Middleware that is not tug's: %s", res)
	}
	got, err := dyn.Resource(traefikMiddlewares).Namespace(h.NS).Get(ctx, "gate-allow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ranges, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "ipAllowList", "sourceRange")
	if got.GetLabels()["team"] != "ops" || got.GetLabels()["app.kubernetes.io/managed-by"] != "" || fmt.Sprint(ranges) != "[198.51.100.0/24]" {
		t.Errorf("their Middleware changed: %v", got.Object)
	}
	if out := h.mustTug("app", "allow", "list", "gate", "-o", "json").Stdout; strings.TrimSpace(out) != "[]" {
		t.Errorf("the refused change was recorded: %s", out)
	}
}
