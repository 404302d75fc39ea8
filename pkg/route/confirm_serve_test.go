package route

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/progress"
)

// fakeRouter is a Gateway "infra/router" whose address and HTTP listener
// are an httptest server that answers Host hosts with 200 and everything
// else with the router's 404, and a dynamic client holding it.
// ingressHosts are answered (200) as an Ingress's rule would be: without
// the route's header.
// copyHosts are answered (200) by another namespace's route for the
// host: with a RouteHeader, but not the app's key.
var ingressHosts, copyHosts atomic.Value

// splitMarker is the SplitHeader the probe rule adds ("" none);
// releasesUp, the releases whose own probe rule finds ready units.
var splitMarker, releasesUp atomic.Value

// testToken is the route token of the app fakeRouter serves.
const testToken = "t0ken"

func fakeRouter(t *testing.T, hosts *atomic.Value) (*dynamicfake.FakeDynamicClient, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, _, _ := net.SplitHostPort(r.Host)
		if h == "" {
			h = r.Host
		}
		if served, _ := hosts.Load().(map[string]bool); served[h] {
			if r.Header.Get(ProbeHeader) == ProbeKey(testToken) {
				w.Header().Set(RouteHeader, AnswerKey(testToken)) // what the probe rule's filter adds
				if m, _ := splitMarker.Load().(string); m != "" {
					w.Header().Set(SplitHeader, m)
				}
				if rel := r.Header.Get(ReleaseHeader); rel != "" {
					if up, _ := releasesUp.Load().(map[string]bool); !up[rel] {
						w.WriteHeader(http.StatusServiceUnavailable) // the router: no ready unit behind it
						return
					}
					w.Header().Set(ReleaseHeader, rel)
				}
			}
			_, _ = w.Write([]byte("hello"))
			return
		}
		if copied, _ := copyHosts.Load().(map[string]bool); copied[h] {
			w.Header().Set(RouteHeader, "shop") // a copy of the app in another namespace, as tug made routes before
			_, _ = w.Write([]byte("hello from the copy"))
			return
		}
		if byIngress, _ := ingressHosts.Load().(map[string]bool); byIngress[h] {
			_, _ = w.Write([]byte("hello from the old Ingress rule")) // no route header
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.ParseInt(port, 10, 64)
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "router", "namespace": "infra"},
		"spec":     map[string]any{"listeners": []any{map[string]any{"name": "http", "protocol": "HTTP", "port": p, "hostname": "*.apps.example.com"}}},
		"status":   map[string]any{"addresses": []any{map[string]any{"value": host}}},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		HTTPRoutes: "HTTPRouteList", Gateways: "GatewayList",
	})
	if _, err := dyn.Resource(Gateways).Namespace("infra").Create(context.Background(), gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return dyn, srv
}

// acceptedRoute is route NAME in namespace dev, accepted by infra/router.
func acceptedRoute(t *testing.T, c Client, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": name, "namespace": c.Namespace, "generation": int64(1)},
		"status": map[string]any{"parents": []any{map[string]any{
			"parentRef": map[string]any{"name": "router", "namespace": "infra"},
			"conditions": []any{
				map[string]any{"type": "Accepted", "status": "True", "observedGeneration": int64(1)},
				map[string]any{"type": "ResolvedRefs", "status": "True", "observedGeneration": int64(1)},
			},
		}}},
	}}
	got, err := c.Dynamic.Resource(HTTPRoutes).Namespace(c.Namespace).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A route the router accepted counts as served once a request for each of
// the app's URLs reaches the app through the Gateway's address, and a
// removed domain once the router answers it with its 404; until then (a
// host the router does not serve) it is only accepted.
func TestConfirmAsksTheRouter(t *testing.T) {
	defer func(v, s time.Duration) { routeVerdictTimeout, routeServeTimeout = v, s }(routeVerdictTimeout, routeServeTimeout)
	routeVerdictTimeout, routeServeTimeout = 5*time.Second, 2*time.Second
	var hosts atomic.Value
	hosts.Store(map[string]bool{"shop-dev.apps.example.com": true, "shop.example.com": true})
	dyn, _ := fakeRouter(t, &hosts)
	c := Client{Dynamic: dyn, Namespace: "dev"}
	ctx := context.Background()
	settings := &clustersettings.Stored{Found: true, Cluster: clustersettings.Settings{
		clustersettings.Gateway: "infra/router", clustersettings.AppsDomain: "apps.example.com",
	}}
	a := &app.App{Name: "shop", Namespace: "dev", Domains: []app.Domain{{Host: "shop.example.com", Path: "/"}}}
	a.Route = c.Want(ctx, settings, a, "")
	if a.Route == nil || a.Route.Host != "shop-dev.apps.example.com" || a.Route.HTTPS || a.Route.Token == "" {
		t.Fatalf("route %+v", a.Route)
	}
	a.Route.Token = testToken
	got := []*unstructured.Unstructured{acceptedRoute(t, c, "shop")}
	state, err := c.Confirm(ctx, progress.Nop{}, nil, a, got, ProbeServe)
	if err != nil || state != RoutingServed {
		t.Fatalf("served app: %q, %v", state, err)
	}

	// a domain the router does not serve yet: accepted, not served
	b := a.Copy()
	b.Domains = append(b.Domains, app.Domain{Host: "new.example.com", Path: "/"})
	if state, err := c.Confirm(ctx, progress.Nop{}, a, b, got, ProbeServe); err != nil || state != RoutingAccepted {
		t.Errorf("unserved domain: %q, %v", state, err)
	}

	// domain remove: served once the router stops answering the host
	after := a.Copy()
	after.Domains = nil
	if state, _ := c.Confirm(ctx, progress.Nop{}, a, after, got, ProbeServe); state != RoutingAccepted {
		t.Errorf("removed domain still answered: %q", state)
	}
	hosts.Store(map[string]bool{"shop-dev.apps.example.com": true})
	if state, err := c.Confirm(ctx, progress.Nop{}, a, after, got, ProbeServe); err != nil || state != RoutingServed {
		t.Errorf("removed domain gone: %q, %v", state, err)
	}
	if state, _ := c.Confirm(ctx, progress.Nop{}, a, after, got, ProbeNone); state != RoutingAccepted {
		t.Errorf("nothing to ask: %q", state)
	}

	// cert remove: the host moves from the Ingress to the Gateway; the
	// old Ingress rule answering it is not the route serving it
	withCert := a.Copy()
	withCert.Domains = []app.Domain{{Host: "shop.example.com", Path: "/", TLSSecret: "shop-tls"}}
	ingressHosts.Store(map[string]bool{"shop.example.com": true})
	defer ingressHosts.Store(map[string]bool{})
	if state, _ := c.Confirm(ctx, progress.Nop{}, withCert, a, got, ProbeServe); state != RoutingAccepted {
		t.Errorf("answered by the old Ingress only: %q, want accepted", state)
	}
	hosts.Store(map[string]bool{"shop-dev.apps.example.com": true, "shop.example.com": true})
	if state, err := c.Confirm(ctx, progress.Nop{}, withCert, a, got, ProbeServe); err != nil || state != RoutingServed {
		t.Errorf("answered through the route: %q, %v", state, err)
	}
}

// Only the app answers for the app: another route that serves its host
// (an exported copy in another namespace, a tenant's route for a longer
// path) is not the app served, whatever headers it sends.
func TestConfirmTellsAnotherRoutesAnswerFromTheApps(t *testing.T) {
	defer func(v, s time.Duration) { routeVerdictTimeout, routeServeTimeout = v, s }(routeVerdictTimeout, routeServeTimeout)
	routeVerdictTimeout, routeServeTimeout = 5*time.Second, time.Second
	var hosts atomic.Value
	hosts.Store(map[string]bool{})
	copyHosts.Store(map[string]bool{"shop-dev.apps.example.com": true})
	defer copyHosts.Store(map[string]bool{})
	dyn, _ := fakeRouter(t, &hosts)
	c := Client{Dynamic: dyn, Namespace: "dev"}
	ctx := context.Background()
	a := &app.App{Name: "shop", Namespace: "dev", Route: &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com", Token: testToken}}
	got := []*unstructured.Unstructured{acceptedRoute(t, c, "shop")}
	if state, err := c.Confirm(ctx, progress.Nop{}, nil, a, got, ProbeServe); err != nil || state != RoutingAccepted {
		t.Errorf("answered by a copy: %q, %v; want accepted", state, err)
	}
	copyHosts.Store(map[string]bool{})
	hosts.Store(map[string]bool{"shop-dev.apps.example.com": true})
	if state, err := c.Confirm(ctx, progress.Nop{}, nil, a, got, ProbeServe); err != nil || state != RoutingServed {
		t.Errorf("answered by the app: %q, %v; want served", state, err)
	}
}

// A split is served once the router runs it and each release with a share
// answers for itself: a canary whose units the router cannot reach is not.
func TestConfirmAsksEachReleaseOfASplit(t *testing.T) {
	defer func(v, s time.Duration) { routeVerdictTimeout, routeServeTimeout = v, s }(routeVerdictTimeout, routeServeTimeout)
	routeVerdictTimeout, routeServeTimeout = 5*time.Second, time.Second
	var hosts atomic.Value
	hosts.Store(map[string]bool{"shop-dev.apps.example.com": true})
	splitMarker.Store("v7=75% v8=25%")
	defer splitMarker.Store("")
	releasesUp.Store(map[string]bool{"v7": true})
	dyn, _ := fakeRouter(t, &hosts)
	c := Client{Dynamic: dyn, Namespace: "dev"}
	ctx := context.Background()
	a := &app.App{Name: "shop", Namespace: "dev", Route: &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com", Token: testToken}}
	got := []*unstructured.Unstructured{acceptedRoute(t, c, "shop")}
	if state, err := c.Confirm(ctx, progress.Nop{}, nil, a, got, ProbeSplit("v7=75% v8=25%")); err != nil || state != RoutingAccepted {
		t.Errorf("v8's units do not answer: %q, %v; want accepted", state, err)
	}
	releasesUp.Store(map[string]bool{"v7": true, "v8": true})
	if state, err := c.Confirm(ctx, progress.Nop{}, nil, a, got, ProbeSplit("v7=75% v8=25%")); err != nil || state != RoutingServed {
		t.Errorf("both answer: %q, %v; want served", state, err)
	}
	if l := splitLabels(ProbeSplit("v7=100% v8=0%")); len(l) != 1 || l[0] != "v7" {
		t.Errorf("labels with a share: %v", l)
	}
}

// A route whose applied state the router accepted already (a rollout does
// not change its spec) needs no read of its own: the LIST a watch would
// start with is refused here, and Confirm still says accepted. One whose
// spec is newer than its status is watched (and so fails here).
func TestConfirmTakesTheAppliedRoutesVerdict(t *testing.T) {
	defer func(v time.Duration) { routeVerdictTimeout = v }(routeVerdictTimeout)
	routeVerdictTimeout = time.Second
	var hosts atomic.Value
	hosts.Store(map[string]bool{})
	dyn, _ := fakeRouter(t, &hosts)
	c := Client{Dynamic: dyn, Namespace: "dev"}
	route := acceptedRoute(t, c, "shop")
	dyn.PrependReactor("list", "httproutes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("listed the route")
	})
	a := &app.App{Name: "shop", Namespace: "dev", Route: &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com"}}
	if state, err := c.Confirm(context.Background(), progress.Nop{}, nil, a, []*unstructured.Unstructured{route}, ProbeNone); err != nil || state != RoutingAccepted {
		t.Errorf("an applied route accepted for its generation: %q, %v; want accepted with no LIST", state, err)
	}
	newer := route.DeepCopy()
	newer.SetGeneration(2)
	if _, err := c.Confirm(context.Background(), progress.Nop{}, nil, a, []*unstructured.Unstructured{newer}, ProbeNone); err == nil || !strings.Contains(err.Error(), "listed the route") {
		t.Errorf("a route whose status is about an earlier spec was not watched: %v", err)
	}
}
