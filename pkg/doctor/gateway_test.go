package doctor

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/route"
)

// gatewayEnv is fakeEnv with a dynamic client for the Gateway API.
type gatewayEnv struct {
	fakeEnv
	dyn dynamic.Interface
}

func (e gatewayEnv) DynamicClient() (dynamic.Interface, error) { return e.dyn, nil }

// servesGatewayAPI makes the fake discovery list the Gateway API's kinds.
func servesGatewayAPI(c *fake.Clientset) {
	c.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
		GroupVersion: "gateway.networking.k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "gateways", Namespaced: true, Kind: "Gateway"}, {Name: "httproutes", Namespaced: true, Kind: "HTTPRoute"}},
	}}
}

func withSettings(c *fake.Clientset, data map[string]string) {
	_, _ = c.CoreV1().ConfigMaps(clustersettings.Namespace).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: clustersettings.Name, Namespace: clustersettings.Namespace}, Data: data}, metav1.CreateOptions{})
}

type listenerSpec struct {
	name, proto, host, from string
	selector                map[string]any
	kinds                   []any
}

// gateway is Gateway infra/router of class traefik with listeners ls and
// the conditions conds (type -> status), observed at generation observed.
func gateway(ls []listenerSpec, conds map[string]string, observed int64) *unstructured.Unstructured {
	var listeners []any
	for _, l := range ls {
		m := map[string]any{"name": l.name, "protocol": l.proto, "port": int64(80)}
		if l.host != "" {
			m["hostname"] = l.host
		}
		ar := map[string]any{}
		if l.from != "" {
			ns := map[string]any{"from": l.from}
			if l.selector != nil {
				ns["selector"] = l.selector
			}
			ar["namespaces"] = ns
		}
		if l.kinds != nil {
			ar["kinds"] = l.kinds
		}
		if len(ar) > 0 {
			m["allowedRoutes"] = ar
		}
		listeners = append(listeners, m)
	}
	var cs []any
	for _, typ := range []string{"Accepted", "Programmed"} {
		if st, ok := conds[typ]; ok {
			reason := typ
			if st != "True" {
				reason = "Invalid"
			}
			cs = append(cs, map[string]any{"type": typ, "status": st, "reason": reason, "message": "said the controller", "observedGeneration": observed})
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "router", "namespace": "infra", "generation": int64(2)},
		"spec":     map[string]any{"gatewayClassName": "traefik", "listeners": listeners},
		"status":   map[string]any{"conditions": cs},
	}}
	return u
}

var (
	ready      = map[string]string{"Accepted": "True", "Programmed": "True"}
	openToAll  = []listenerSpec{{name: "http", proto: "HTTP", host: "*.apps.example.com", from: "All"}, {name: "https", proto: "HTTPS", host: "*.apps.example.com", from: "All"}}
	gwSettings = map[string]string{"gateway": "infra/router", "appsDomain": "apps.example.com"}
)

func newDyn(t *testing.T, objs ...*unstructured.Unstructured) *dynamicfake.FakeDynamicClient {
	t.Helper()
	d := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{route.Gateways: "GatewayList"})
	for _, o := range objs {
		if err := d.Tracker().Create(route.Gateways, o, o.GetNamespace()); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// runGatewayChecks is gatewayChecks on a cluster with settings (nil:
// none), the Gateway API served or not, and the Gateways objs.
func runGatewayChecks(t *testing.T, settings map[string]string, api bool, missing []Permission, setup func(*fake.Clientset, *dynamicfake.FakeDynamicClient), objs ...*unstructured.Unstructured) []Check {
	t.Helper()
	c := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev", Labels: map[string]string{"kubernetes.io/metadata.name": "dev", "team": "blue"}}})
	if settings != nil {
		withSettings(c, settings)
	}
	if api {
		servesGatewayAPI(c)
	}
	dyn := newDyn(t, objs...)
	if setup != nil {
		setup(c, dyn)
	}
	return gatewayChecks(context.Background(), c, func() (dynamic.Interface, error) { return dyn, nil }, "dev", missing)
}

func TestGatewayCheck(t *testing.T) {
	forbidGet := func(_ *fake.Clientset, d *dynamicfake.FakeDynamicClient) {
		d.PrependReactor("get", "gateways", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(route.Gateways.GroupResource(), "router", nil)
		})
	}
	forbidList := func(_ *fake.Clientset, d *dynamicfake.FakeDynamicClient) {
		d.PrependReactor("list", "gateways", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(route.Gateways.GroupResource(), "", nil)
		})
	}
	secondGateway := func(_ *fake.Clientset, d *dynamicfake.FakeDynamicClient) {
		other := gateway(openToAll, ready, 2)
		other.SetName("other")
		if err := d.Tracker().Create(route.Gateways, other, "infra"); err != nil {
			t.Fatal(err)
		}
	}
	sameNS := []listenerSpec{{name: "http", proto: "HTTP", host: "*.apps.example.com"}}
	byTeam := func(team string) []listenerSpec {
		return []listenerSpec{{name: "http", proto: "HTTP", from: "Selector", selector: map[string]any{"matchLabels": map[string]any{"team": team}}}}
	}
	missingCreate := []Permission{
		{Verb: "create", Group: "gateway.networking.k8s.io", Resource: "httproutes", Scope: ScopeNamespace},
		{Verb: "patch", Group: "gateway.networking.k8s.io", Resource: "httproutes", Scope: ScopeNamespace},
		{Verb: "list", Group: "", Resource: "nodes", Scope: ScopeCluster},
	}
	for _, c := range []struct {
		name     string
		settings map[string]string
		api      bool
		missing  []Permission
		setup    func(*fake.Clientset, *dynamicfake.FakeDynamicClient)
		gw       *unstructured.Unstructured
		status   Status
		want     []string
	}{
		{name: "no settings", status: StatusOK, want: []string{"name no Gateway", "route through an Ingress", "tug cluster settings set gateway="}},
		{name: "usable", settings: gwSettings, api: true, gw: gateway(openToAll, ready, 2), status: StatusOK,
			want: []string{"Gateway infra/router is accepted and programmed and admits HTTPRoutes from namespace dev (listeners http, https), app URLs under apps.example.com"}},
		{name: "no Gateway API", settings: gwSettings, gw: gateway(openToAll, ready, 2), status: StatusFailed,
			want: []string{"does not serve the Gateway API", "tug cluster settings unset gateway"}},
		{name: "no such Gateway", settings: gwSettings, api: true, status: StatusFailed,
			want: []string{"Gateway infra/router, which the cluster settings name, does not exist", "'tug cluster settings set gateway=NAMESPACE/NAME'", "kubectl get gateways -A"}},
		{name: "not NAMESPACE/NAME", settings: map[string]string{"gateway": "router"}, api: true, status: StatusFailed,
			want: []string{`gateway is "router", not NAMESPACE/NAME`}},
		{name: "may not write routes", settings: gwSettings, api: true, missing: missingCreate, gw: gateway(openToAll, ready, 2), status: StatusFailed,
			want: []string{"you may not create, patch httproutes.gateway.networking.k8s.io in namespace dev", "docs/rbac/tug-developer-role.yaml"}},
		{name: "may not read the Gateway", settings: gwSettings, api: true, setup: forbidGet, status: StatusWarning,
			want: []string{"you may not read Gateway infra/router (get gateways in namespace infra)"}},
		{name: "no controller", settings: gwSettings, api: true, gw: gateway(openToAll, nil, 0), status: StatusFailed,
			want: []string{"no controller has accepted Gateway infra/router", `GatewayClass "traefik"`, "kubectl get gatewayclass traefik"}},
		{name: "refused", settings: gwSettings, api: true, gw: gateway(openToAll, map[string]string{"Accepted": "False", "Programmed": "False"}, 2), status: StatusFailed,
			want: []string{"is not accepted by its controller (Invalid: said the controller)", "kubectl describe gateway -n infra router"}},
		{name: "not programmed", settings: gwSettings, api: true, gw: gateway(openToAll, map[string]string{"Accepted": "True", "Programmed": "False"}, 2), status: StatusFailed,
			want: []string{"is not programmed by its controller (Invalid: said the controller)"}},
		{name: "status of an earlier spec", settings: gwSettings, api: true, gw: gateway(openToAll, ready, 1), status: StatusWarning,
			want: []string{"about generation 1 of 2"}},
		{name: "routes from its own namespace only", settings: gwSettings, api: true, gw: gateway(sameNS, ready, 2), status: StatusFailed,
			want: []string{"admits no HTTPRoute from namespace dev (its listeners' allowedRoutes: http: from Same (infra only))", "allowedRoutes.namespaces.from: All"}},
		{name: "selector matches", settings: map[string]string{"gateway": "infra/router"}, api: true, gw: gateway(byTeam("blue"), ready, 2), status: StatusOK,
			want: []string{"admits HTTPRoutes from namespace dev (listeners http)"}},
		{name: "selector does not match", settings: map[string]string{"gateway": "infra/router"}, api: true, gw: gateway(byTeam("red"), ready, 2), status: StatusFailed,
			want: []string{"http: from Selector"}},
		{name: "kinds without HTTPRoute", settings: gwSettings, api: true, status: StatusFailed,
			gw:   gateway([]listenerSpec{{name: "tls", proto: "HTTPS", from: "All", kinds: []any{map[string]any{"kind": "TLSRoute"}}}}, ready, 2),
			want: []string{"tls: from All, no HTTPRoute"}},
		{name: "no listener for the apps domain", settings: gwSettings, api: true, status: StatusFailed,
			gw:   gateway([]listenerSpec{{name: "shop", proto: "HTTP", host: "shop.example.com", from: "All"}}, ready, 2),
			want: []string{"none of those listeners (shop) serves names under the apps domain apps.example.com", "app-dev.apps.example.com", "*.apps.example.com"}},
		{name: "listener without hostname serves every name", settings: gwSettings, api: true, status: StatusOK,
			gw: gateway([]listenerSpec{{name: "any", proto: "HTTP", from: "All"}}, ready, 2), want: []string{"app URLs under apps.example.com"}},
		// the settings name no Gateway: the one that admits the
		// namespace's routes is found and checked like a named one
		{name: "found", settings: map[string]string{"appsDomain": "apps.example.com", "gatewayClasses": "infra/traefik"}, api: true, gw: gateway(openToAll, ready, 2), status: StatusOK,
			want: []string{"Gateway infra/router (the cluster settings name none; it is the one Gateway that admits routes from namespace dev) is accepted and programmed and admits HTTPRoutes from namespace dev"}},
		{name: "found, apps domain not covered", settings: map[string]string{"appsDomain": "other.example.com", "gatewayClasses": "infra/traefik"}, api: true, gw: gateway(openToAll, ready, 2), status: StatusOK,
			want: []string{"the one Gateway that admits routes from namespace dev) is accepted and programmed"}},
		{name: "found, not programmed", settings: map[string]string{"gatewayClasses": "infra/traefik"}, api: true, gw: gateway(openToAll, map[string]string{"Accepted": "True", "Programmed": "False"}, 2), status: StatusWarning,
			want: []string{"are not ones tug trusts (infra/router (not Accepted and Programmed by its controller))"}},
		{name: "found, class not allowed", api: true, gw: gateway(openToAll, ready, 2), status: StatusWarning,
			want: []string{`are not ones tug trusts (infra/router (class "traefik" in namespace infra is not one the cluster settings allow))`, "gatewayClasses=NAMESPACE/CLASS"}},
		{name: "none admits", api: true, gw: gateway(sameNS, ready, 2), status: StatusOK,
			want: []string{"name no Gateway and no Gateway admits routes from namespace dev", "route through an Ingress", "tug cluster settings set gateway="}},
		{name: "several admit", settings: map[string]string{"gatewayClasses": "infra/traefik"}, api: true, setup: secondGateway, gw: gateway(openToAll, ready, 2), status: StatusWarning,
			want: []string{"2 Gateways admit routes from namespace dev (infra/other, infra/router)", "tug will not pick one", "tug cluster settings set gateway="}},
		{name: "may not list Gateways", api: true, setup: forbidList, gw: gateway(openToAll, ready, 2), status: StatusWarning,
			want: []string{"you may not list Gateways in every namespace", "route through an Ingress"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var objs []*unstructured.Unstructured
			if c.gw != nil {
				objs = append(objs, c.gw)
			}
			checks := runGatewayChecks(t, c.settings, c.api, c.missing, c.setup, objs...)
			if len(checks) != 1 {
				t.Fatalf("%d checks, want 1: %+v", len(checks), checks)
			}
			got := checks[0]
			if got.Name != "gateway" || got.Status != c.status {
				t.Errorf("check %s %s, want gateway %s: %s", got.Name, got.Status, c.status, got.Message)
			}
			for _, w := range c.want {
				if !strings.Contains(got.Message, w) {
					t.Errorf("message %q\n  lacks %q", got.Message, w)
				}
			}
		})
	}
}

// A pool's own Gateway is checked for the namespace's apps of that pool,
// and the command that fixes it names the pool; the cluster's is checked
// as well (apps made without a pool get it).
func TestGatewayCheckPerPool(t *testing.T) {
	settings := map[string]string{"gateway": "infra/router", "appsDomain": "apps.example.com", "pool.gpu.gateway": "infra/gone", "pool.edge.appsDomain": "edge.example.com"}
	checks := runGatewayChecks(t, settings, true, nil, func(c *fake.Clientset, _ *dynamicfake.FakeDynamicClient) {
		s := &app.Store{Client: c, Namespace: "dev"}
		for _, a := range []*app.App{{Name: "train", Pool: "gpu"}, {Name: "web"}, {Name: "cdn", Pool: "edge"}} {
			if err := s.CreateApp(context.Background(), a); err != nil {
				t.Fatal(err)
			}
		}
	}, gateway(openToAll, ready, 2))
	if len(checks) != 2 {
		t.Fatalf("%d checks, want the cluster's Gateway (with pool edge) and pool gpu's: %+v", len(checks), checks)
	}
	if c := checks[0]; c.Status != StatusOK || !strings.Contains(c.Message, "Gateway infra/router (for the cluster, pool edge) is accepted") {
		t.Errorf("the cluster's Gateway: %+v", c)
	}
	if c := checks[1]; c.Status != StatusFailed || !strings.Contains(c.Message, "Gateway infra/gone (for pool gpu), which the cluster settings name, does not exist") ||
		!strings.Contains(c.Message, "'tug cluster settings set --pool gpu gateway=NAMESPACE/NAME'") {
		t.Errorf("pool gpu's Gateway: %+v", c)
	}
}

// Through Run: the check comes last, a failed one makes the report fail,
// and the review's missing HTTPRoute verbs are what it names.
func TestRunChecksTheGateway(t *testing.T) {
	allowNoRoutes := func(a authorizationv1.ResourceAttributes) (bool, error) {
		return a.Resource != "httproutes" || a.Verb == "get" || a.Verb == "list" || a.Verb == "watch", nil
	}
	for _, c := range []struct {
		name  string
		allow func(authorizationv1.ResourceAttributes) (bool, error)
		gw    []*unstructured.Unstructured
		ok    bool
		want  string
	}{
		{"usable", allowAll, []*unstructured.Unstructured{gateway(openToAll, ready, 2)}, true, "is accepted and programmed"},
		{"missing", allowAll, nil, false, "does not exist"},
		{"no route verbs", allowNoRoutes, []*unstructured.Unstructured{gateway(openToAll, ready, 2)}, false, "you may not create, patch, delete httproutes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := newFakeCluster("37", c.allow)
			withSettings(cl.Clientset, gwSettings)
			servesGatewayAPI(cl.Clientset)
			r, err := Run(context.Background(), gatewayEnv{fakeEnv: fakeEnv{client: cl}, dyn: newDyn(t, c.gw...)}, Options{ClientMinor: 37})
			if err != nil {
				t.Fatal(err)
			}
			last := r.Checks[len(r.Checks)-1]
			if last.Name != "gateway" || !strings.Contains(last.Message, c.want) || r.OK != c.ok {
				t.Errorf("OK %v (want %v), last check %+v, want %q", r.OK, c.ok, last, c.want)
			}
		})
	}
}
