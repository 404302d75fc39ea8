package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// answeredBy sends n requests to url through the router and counts the
// answers by the unit (the sample says its pod's name) and, for units not
// of pods, "failed" or "other".
func answeredBy(t *testing.T, r router, url string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		code, body, _, err := r.get(nil, url)
		_, from, ok := strings.Cut(strings.TrimSpace(body), " from ")
		switch {
		case err != nil || code != 200:
			got["failed"]++
		case ok:
			got[from]++
		default:
			got["other"]++
		}
	}
	return got
}

// unitSet is the app's pods now, as a set.
func (h *H) unitSet(appName string) map[string]bool {
	h.t.Helper()
	out := map[string]bool{}
	for _, n := range h.podNames(appName) {
		out[n] = true
	}
	return out
}

// Issues 34 (items 2, 8) and 40 (items 2, 10), through the real router
// with two namespaces: another namespace cannot take an app's URL with
// tug, nor with the app's own export applied beside it; an answer of a
// route someone made by hand for the URL is not the app's, so tug does
// not say it serves; and no answer carries a header of tug's.
func TestAppURLIsTheNamespaces(t *testing.T) {
	h := New(t)
	r := h.localRouter()
	other := h.Another()
	ctx := context.Background()
	h.mustTug("app", "create", "shop")
	// tug's probe (the twin rule that answers its secret header) passes
	// on the real router: the deploy is served
	var result struct {
		Routing string `json:"routing"`
	}
	res := h.mustTug("app", "deploy", "shop", "--image", sampleV1, "-o", "json")
	if err := json.Unmarshal([]byte(res.Stdout), &result); err != nil || result.Routing != "served" {
		t.Fatalf("deploy: routing %q (%v), want served: %s", result.Routing, err, res)
	}
	url := "http://" + r.appHost("shop", h.NS) + "/"
	own := h.unitSet("shop")

	// nothing of tug's bookkeeping reaches a client
	resp, err := r.client(nil).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for k := range resp.Header {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Tug-") {
			t.Errorf("a client got tug's header %s: %q", k, resp.Header.Values(k))
		}
	}

	// another namespace may not claim the host, not even a longer path
	other.mustTug("app", "create", "x")
	other.mustTug("app", "deploy", "x", "--image", sampleV2)
	res = other.Tug("domain", "add", "x", r.appHost("shop", h.NS), "--path", "/login")
	if res.Code == 0 || !strings.Contains(res.Stderr, "is routed by namespace "+h.NS) {
		t.Errorf("domain add of another namespace's URL at /login: %s", res)
	}

	// the app's export applied to the other namespace runs, but does not
	// take the app's URL
	out := h.mustTug("app", "export", "shop")
	if !strings.HasPrefix(out.Stdout, "# app shop, release ") || !strings.Contains(out.Stdout, "config") || strings.Contains(out.Stdout, r.appHost("shop", h.NS)) {
		t.Errorf("export header or hosts:\n%s", out.Stdout)
	}
	apply := exec.Command(kubectlPath(t), "--kubeconfig", env.kubeconfig, "apply", "-n", other.NS, "-f", "-")
	apply.Stdin = strings.NewReader(out.Stdout)
	if b, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply of the export: %v\n%s", err, b)
	}
	other.WaitPods("tug.dev/app=shop,tug.dev/process=web", 90*time.Second, "the copy's web unit ready in "+other.NS, AllReady(1))
	got := answeredBy(t, r, url, 20)
	for from, n := range got {
		if !own[from] {
			t.Errorf("%d of 20 requests to %s answered by %s, not the app's units %v (%v)", n, url, from, own, got)
		}
	}

	// a route made by hand in the other namespace for the URL that
	// catches tug's probe (its User-Agent; two header matches go before
	// the one of the app's probe rule) and answers with the header an old
	// export's copy sent: tug must not take that answer for the app's
	dyn := dynamic.NewForConfigOrDie(h.Config)
	hand := httpRoute(r, "probe-catcher", r.appHost("shop", h.NS), "x")
	rule := hand.Object["spec"].(map[string]any)["rules"].([]any)[0].(map[string]any)
	rule["matches"] = []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}, "headers": []any{
		map[string]any{"type": "Exact", "name": "User-Agent", "value": "tug (route check)"},
		map[string]any{"type": "Exact", "name": "Accept-Encoding", "value": "gzip"}}}}
	rule["filters"] = []any{map[string]any{
		"type": "ResponseHeaderModifier", "responseHeaderModifier": map[string]any{"set": []any{map[string]any{"name": "Tug-Route", "value": "shop"}}}}}
	if _, err := dyn.Resource(httpRoutes).Namespace(other.NS).Create(ctx, hand, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other.waitRouteAccepted(dyn, r, "probe-catcher")
	h.Eventually(30*time.Second, "the route by hand catches a request that looks like tug's probe", func() (bool, error) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("User-Agent", "tug (route check)")
		resp, err := r.client(nil).Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		return resp.Header.Get("Tug-Route") == "shop", fmt.Errorf("answer %d with Tug-Route %q", resp.StatusCode, resp.Header.Get("Tug-Route"))
	})
	res = h.Tug("app", "restart", "shop", "-o", "json")
	result.Routing = ""
	if res.Code != 0 || json.Unmarshal([]byte(res.Stdout), &result) != nil {
		t.Fatalf("app restart: %s", res)
	}
	if result.Routing != "accepted" {
		t.Errorf("restart said %q while another namespace's route answered tug's probe; want accepted", result.Routing)
	}
	// clients still reach the app's units
	own = h.unitSet("shop")
	got = answeredBy(t, r, url, 20)
	for from, n := range got {
		if !own[from] {
			t.Errorf("%d of 20 requests answered by %s, not the app's units %v (%v)", n, from, own, got)
		}
	}
}
