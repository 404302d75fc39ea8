package route

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
)

// gl is one listener of a test Gateway.
type gl struct {
	name, proto, host, from string
	selector                map[string]any
	kinds                   []any
}

func testGateway(ns, name string, ls ...gl) *unstructured.Unstructured {
	var listeners []any
	for _, l := range ls {
		m := map[string]any{"name": l.name, "protocol": l.proto, "port": int64(80)}
		if l.host != "" {
			m["hostname"] = l.host
		}
		ar := map[string]any{}
		if l.from != "" {
			nsm := map[string]any{"from": l.from}
			if l.selector != nil {
				nsm["selector"] = l.selector
			}
			ar["namespaces"] = nsm
		}
		if l.kinds != nil {
			ar["kinds"] = l.kinds
		}
		m["allowedRoutes"] = ar
		listeners = append(listeners, m)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"gatewayClassName": "traefik", "listeners": listeners},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Accepted", "status": "True"},
			map[string]any{"type": "Programmed", "status": "True"}}},
	}}
}

// trustInfra is the gatewayClasses setting the tests' Gateways pass.
const trustInfra = "infra/traefik,traefik"

func gatewayDyn(t *testing.T, gws ...*unstructured.Unstructured) *dynamicfake.FakeDynamicClient {
	t.Helper()
	d := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{Gateways: "GatewayList", HTTPRoutes: "HTTPRouteList"})
	for _, g := range gws {
		if err := d.Tracker().Create(Gateways, g, g.GetNamespace()); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// devNS is namespace dev, labelled team=blue.
func devNS() *fake.Clientset {
	return fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev",
		Labels: map[string]string{corev1.LabelMetadataName: "dev", "team": "blue"}}})
}

func TestDiscoverKeepsTheGatewaysThatAdmitTheNamespace(t *testing.T) {
	byTeam := func(team string) map[string]any {
		return map[string]any{"matchLabels": map[string]any{"team": team}}
	}
	for _, tt := range []struct {
		name string
		gws  []*unstructured.Unstructured
		want []string // candidates
	}{
		{"Same admits its own namespace", []*unstructured.Unstructured{
			testGateway("dev", "own", gl{name: "http", proto: "HTTP", from: "Same"}),
			testGateway("infra", "other", gl{name: "http", proto: "HTTP", from: "Same"})}, []string{"dev/own"}},
		{"no from is Same", []*unstructured.Unstructured{
			testGateway("infra", "router", gl{name: "http", proto: "HTTP"})}, nil},
		{"All admits every namespace", []*unstructured.Unstructured{
			testGateway("infra", "router", gl{name: "http", proto: "HTTP", from: "All"})}, []string{"infra/router"}},
		{"Selector matching the namespace's labels", []*unstructured.Unstructured{
			testGateway("infra", "blue", gl{name: "http", proto: "HTTP", from: "Selector", selector: byTeam("blue")}),
			testGateway("infra", "red", gl{name: "http", proto: "HTTP", from: "Selector", selector: byTeam("red")})}, []string{"infra/blue"}},
		{"kinds without HTTPRoute", []*unstructured.Unstructured{
			testGateway("infra", "grpc", gl{name: "g", proto: "HTTPS", from: "All", kinds: []any{map[string]any{"kind": "GRPCRoute"}}}),
			testGateway("infra", "tcp", gl{name: "t", proto: "TCP", from: "All"})}, nil},
		{"kinds naming HTTPRoute", []*unstructured.Unstructured{
			testGateway("infra", "web", gl{name: "w", proto: "HTTP", from: "All", kinds: []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}}})}, []string{"infra/web"}},
		{"several", []*unstructured.Unstructured{
			testGateway("infra", "b", gl{name: "http", proto: "HTTP", from: "All"}),
			testGateway("infra", "a", gl{name: "http", proto: "HTTP", from: "All"})}, []string{"infra/a", "infra/b"}},
		{"none", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Client{Dynamic: gatewayDyn(t, tt.gws...), Namespace: "dev", Kube: devNS(), Trust: trustInfra}.Discover(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Candidates, tt.want) {
				t.Fatalf("candidates %q, want %q", d.Candidates, tt.want)
			}
			if one := len(tt.want) == 1; one != (d.Gateway != "") || one && d.Gateway != tt.want[0] {
				t.Errorf("Gateway %q with candidates %q", d.Gateway, d.Candidates)
			}
			if d.Gateways != len(tt.gws) {
				t.Errorf("Gateways = %d, want %d", d.Gateways, len(tt.gws))
			}
			msg, loud := d.Message()
			if loud != (len(tt.want) > 1) {
				t.Errorf("loud = %v: %s", loud, msg)
			}
			if len(tt.want) > 1 && (!strings.Contains(msg, "infra/a, infra/b") || !strings.Contains(msg, SetGateway)) {
				t.Errorf("several: message does not name them or the setting: %s", msg)
			}
		})
	}
}

// A user who may not read namespaces matches a selector on the
// namespace's name label only, and is told so.
func TestDiscoverSelectorWithoutNamespaceRead(t *testing.T) {
	gws := []*unstructured.Unstructured{
		testGateway("infra", "by-name", gl{name: "http", proto: "HTTP", from: "Selector",
			selector: map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: "dev"}}}),
		testGateway("infra", "by-team", gl{name: "http", proto: "HTTP", from: "Selector",
			selector: map[string]any{"matchLabels": map[string]any{"team": "blue"}}}),
	}
	kube := devNS()
	kube.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("namespaces"), "dev", nil)
	})
	d, err := Client{Dynamic: gatewayDyn(t, gws...), Namespace: "dev", Kube: kube, Trust: trustInfra}.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Gateway != "infra/by-name" || !d.LabelsUnread {
		t.Errorf("found %q (labels unread %v), want infra/by-name", d.Gateway, d.LabelsUnread)
	}
}

func TestDiscoverForbiddenAndNotServedAreNoErrors(t *testing.T) {
	forbidden := gatewayDyn(t, testGateway("infra", "router", gl{name: "http", proto: "HTTP", from: "All"}))
	forbidden.PrependReactor("list", "gateways", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(Gateways.GroupResource(), "", nil)
	})
	notServed := gatewayDyn(t)
	notServed.PrependReactor("list", "gateways", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(Gateways.GroupResource(), "")
	})
	failing := gatewayDyn(t)
	failing.PrependReactor("list", "gateways", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcdserver: request timed out")
	})
	ctx := context.Background()
	d, err := Client{Dynamic: forbidden, Namespace: "dev"}.Discover(ctx)
	if err != nil || !d.Forbidden || d.Gateway != "" {
		t.Errorf("forbidden: %+v, %v", d, err)
	}
	if msg, loud := d.Message(); loud || !strings.Contains(msg, "may not list Gateways") {
		t.Errorf("forbidden message (loud %v): %s", loud, msg)
	}
	if d, err := (Client{Dynamic: notServed, Namespace: "dev"}).Discover(ctx); err != nil || !d.NotServed {
		t.Errorf("not served: %+v, %v", d, err)
	}
	if d, err := (Client{Namespace: "dev"}).Discover(ctx); err != nil || !d.NotServed {
		t.Errorf("no dynamic client: %+v, %v", d, err)
	}
	if _, err := (Client{Dynamic: failing, Namespace: "dev"}).Discover(ctx); err == nil {
		t.Error("a failed LIST is not reported")
	}
}

func TestDiscoveryAppHost(t *testing.T) {
	d := Discovery{Namespace: "dev", Gateway: "dev/own", Listeners: []Listener{
		{Name: "http", Protocol: "HTTP", Hostname: "*.own.test"},
		{Name: "https", Protocol: "HTTPS", Hostname: "*.own.test"},
		{Name: "any", Protocol: "HTTP"},
	}}
	// the settings' apps domain, when a listener covers it (the one
	// without a hostname does), over HTTP only
	if h, tls := d.AppHost("shop", "apps.example.com"); h != "shop-dev.apps.example.com" || tls {
		t.Errorf("with the settings' domain: %q %v", h, tls)
	}
	// no apps domain: the wildcard listener's, over HTTPS too
	if h, tls := d.AppHost("shop", ""); h != "shop-dev.own.test" || !tls {
		t.Errorf("from the wildcard listener: %q %v", h, tls)
	}
	// an apps domain no listener covers gives way to the wildcard's
	d.Listeners = d.Listeners[:2]
	if h, _ := d.AppHost("shop", "apps.example.com"); h != "shop-dev.own.test" {
		t.Errorf("uncovered apps domain: %q", h)
	}
	// two wildcards: no guess
	d.Listeners = append(d.Listeners, Listener{Name: "b", Protocol: "HTTP", Hostname: "*.b.test"})
	if h, _ := d.AppHost("shop", ""); h != "" {
		t.Errorf("two wildcards: %q", h)
	}
}

// settings is a read ConfigMap with data.
func settings(data map[string]string) *clustersettings.Stored {
	s := &clustersettings.Stored{Cluster: clustersettings.Settings{clustersettings.GatewayClasses: trustInfra}, Found: true}
	for k, v := range data {
		s.Cluster[k] = v
	}
	return s
}

// The resolution order: the settings' Gateway (the cluster's, or its
// pool's) wins; the found one only where they name none; settings the
// user may not read find none.
func TestWantResolutionOrder(t *testing.T) {
	ctx := context.Background()
	own := testGateway("dev", "own", gl{name: "http", proto: "HTTP", host: "*.own.test", from: "Same"})
	a := &app.App{Name: "shop", Namespace: "dev"}
	var lists int
	dyn := gatewayDyn(t, own)
	dyn.PrependReactor("list", "gateways", func(k8stesting.Action) (bool, runtime.Object, error) { lists++; return false, nil, nil })
	var notes []string
	c := Client{Dynamic: dyn, Namespace: "dev", Kube: devNS(), Finder: &Finder{}, Note: func(m string) { notes = append(notes, m) }}

	named := settings(map[string]string{clustersettings.Gateway: "infra/router", clustersettings.AppsDomain: "apps.example.com"})
	if r := c.Want(ctx, named, a, ""); r == nil || r.Gateway != "infra/router" || r.Discovered || r.Host != "shop-dev.apps.example.com" {
		t.Errorf("settings' Gateway: %+v", r)
	}
	if lists != 0 {
		t.Errorf("looked for a Gateway although the settings name one (%d LISTs)", lists)
	}
	byPool := settings(nil)
	byPool.Pools = map[string]clustersettings.Settings{"gpu": {clustersettings.Gateway: "infra/gpu"}}
	if r := c.Want(ctx, byPool, a, "gpu"); r == nil || r.Gateway != "infra/gpu" || r.Discovered {
		t.Errorf("pool's Gateway: %+v", r)
	}
	for i := 0; i < 2; i++ {
		r := c.Want(ctx, byPool, a, "")
		if r == nil || r.Gateway != "dev/own" || !r.Discovered || r.Host != "shop-dev.own.test" {
			t.Fatalf("found Gateway: %+v", r)
		}
	}
	if lists != 1 {
		t.Errorf("%d LISTs of Gateways in one command, want 1 (the Finder remembers)", lists)
	}
	if len(notes) == 0 || !strings.Contains(notes[0], "dev/own") {
		t.Errorf("notes %q do not say which Gateway was found", notes)
	}
	unreadable := &clustersettings.Stored{Cluster: clustersettings.Settings{}, Unreadable: true}
	if r := c.Want(ctx, unreadable, a, ""); r != nil {
		t.Errorf("unreadable settings: %+v, want no route (they may name a Gateway)", r)
	}
	if r := c.Want(ctx, nil, &app.App{Name: "shop", Route: &app.Route{Gateway: "x/y"}}, ""); r == nil || r.Gateway != "x/y" {
		t.Errorf("no settings read: the record's route changed: %+v", r)
	}
}

// A user who may not list Gateways keeps the Gateway the app found
// before, and routes an app that found none through an Ingress, saying
// so only as a note; several Gateways warn.
func TestWantWhenTheLookCannotDecide(t *testing.T) {
	ctx := context.Background()
	forbidden := gatewayDyn(t)
	forbidden.PrependReactor("list", "gateways", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(Gateways.GroupResource(), "", nil)
	})
	var warns, notes []string
	c := Client{Dynamic: forbidden, Namespace: "dev", Warn: func(m string) { warns = append(warns, m) }, Note: func(m string) { notes = append(notes, m) }}
	none := settings(map[string]string{clustersettings.AppsDomain: "apps.example.com"})
	found := &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com", HTTPS: true, Discovered: true, Token: "t"}
	if r := c.Want(ctx, none, &app.App{Name: "shop", Namespace: "dev", Route: found}, ""); r == nil || *r != *found {
		t.Errorf("forbidden: the found route was not kept: %+v", r)
	}
	if r := c.Want(ctx, none, &app.App{Name: "shop", Namespace: "dev", Route: &app.Route{Gateway: "infra/old"}}, ""); r != nil {
		t.Errorf("forbidden: a Gateway the settings named before (now unset) was kept: %+v", r)
	}
	if len(warns) != 0 || len(notes) != 2 {
		t.Errorf("forbidden: warnings %q, notes %q; want notes only", warns, notes)
	}

	warns, notes = nil, nil
	c.Dynamic = gatewayDyn(t, testGateway("infra", "a", gl{name: "http", proto: "HTTP", from: "All"}),
		testGateway("infra", "b", gl{name: "http", proto: "HTTP", from: "All"}))
	if r := c.Want(ctx, none, &app.App{Name: "shop", Namespace: "dev"}, ""); r != nil {
		t.Errorf("several: %+v, want an Ingress", r)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "infra/a, infra/b") {
		t.Errorf("several: warnings %q", warns)
	}
}

// An app that found its Gateway keeps it when a second Gateway that also
// admits the namespace appears, and when the namespace's labels cannot be
// read to check a selector; one that found none still gets an Ingress.
func TestWantKeepsTheFoundGatewayWhenTheLookIsAmbiguous(t *testing.T) {
	ctx := context.Background()
	none := settings(map[string]string{clustersettings.AppsDomain: "apps.example.com"})
	found := &app.Route{Gateway: "infra/a", Host: "shop-dev.apps.example.com", Discovered: true, Token: "t"}
	c := Client{Namespace: "dev", Dynamic: gatewayDyn(t, testGateway("infra", "a", gl{name: "http", proto: "HTTP", from: "All"}),
		testGateway("infra", "b", gl{name: "http", proto: "HTTP", from: "All"}))}
	if r := c.Want(ctx, none, &app.App{Name: "shop", Namespace: "dev", Route: found}, ""); r == nil || *r != *found {
		t.Errorf("several, the found one among them: %+v, want %+v kept", r, found)
	}
	other := &app.Route{Gateway: "infra/gone", Host: "shop-dev.apps.example.com", Discovered: true}
	if r := c.Want(ctx, none, &app.App{Name: "shop", Namespace: "dev", Route: other}, ""); r != nil {
		t.Errorf("several, the found one no longer admits the namespace: %+v, want an Ingress", r)
	}

	kube := devNS()
	kube.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("namespaces"), "dev", nil)
	})
	c = Client{Namespace: "dev", Kube: kube, Dynamic: gatewayDyn(t, testGateway("infra", "a", gl{name: "http", proto: "HTTP", from: "Selector",
		selector: map[string]any{"matchLabels": map[string]any{"team": "blue"}}}))}
	if r := c.Want(ctx, none, &app.App{Name: "shop", Namespace: "dev", Route: found}, ""); r == nil || *r != *found {
		t.Errorf("labels unread: %+v, want %+v kept", r, found)
	}
	if r := c.Want(ctx, none, &app.App{Name: "shop", Namespace: "dev"}, ""); r != nil {
		t.Errorf("labels unread, nothing found before: %+v, want an Ingress", r)
	}
}

// Discovery trusts only Gateways an admin would: of a class the settings
// allow where they stand (NAMESPACE/CLASS; a bare CLASS only in the app's
// own namespace), Accepted and Programmed. A tenant's Gateway that admits
// All is not the route of other namespaces.
func TestDiscoverTrustsOnlyWhatAnAdminWould(t *testing.T) {
	all := gl{name: "http", proto: "HTTP", from: "All"}
	unready := testGateway("infra", "unready", all)
	unstructured.RemoveNestedField(unready.Object, "status")
	other := testGateway("infra", "other", all)
	other.Object["spec"].(map[string]any)["gatewayClassName"] = "someone-elses"
	for _, tt := range []struct {
		name, trust string
		gws         []*unstructured.Unstructured
		want        string // the Gateway found
		untrusted   int
	}{
		{"a tenant's Gateway that admits All", "infra/traefik,traefik", []*unstructured.Unstructured{testGateway("team", "mine", all)}, "", 1},
		{"the admin's beside a tenant's", "infra/traefik,traefik", []*unstructured.Unstructured{testGateway("team", "mine", all), testGateway("infra", "router", all)}, "infra/router", 1},
		{"no class allowed", "", []*unstructured.Unstructured{testGateway("infra", "router", all)}, "", 1},
		{"a class not allowed", "infra/traefik", []*unstructured.Unstructured{other}, "", 1},
		{"not accepted and programmed", "infra/traefik", []*unstructured.Unstructured{unready}, "", 1},
		{"the namespace's own, bare class", "traefik", []*unstructured.Unstructured{testGateway("dev", "own", all)}, "dev/own", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Client{Dynamic: gatewayDyn(t, tt.gws...), Namespace: "dev", Kube: devNS(), Trust: tt.trust}.Discover(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if d.Gateway != tt.want || len(d.Untrusted) != tt.untrusted {
				t.Errorf("found %q, untrusted %q; want %q and %d untrusted", d.Gateway, d.Untrusted, tt.want, tt.untrusted)
			}
			if msg, loud := d.Message(); tt.want == "" && (!loud || !strings.Contains(msg, "not trusted") || !strings.Contains(msg, "gatewayClasses=")) {
				t.Errorf("message %q (loud %v)", msg, loud)
			}
		})
	}
}

// A cluster upgraded from before gatewayClasses trusts no Gateway: an app
// that routes through a Gateway it found keeps it while that Gateway
// stands and admits the namespace, with a warning that says how to allow
// it; an app finding a Gateway for the first time gets none.
func TestWantKeepsAnUntrustedGatewayTheAppRoutesThrough(t *testing.T) {
	ctx := context.Background()
	upgraded := settings(map[string]string{clustersettings.AppsDomain: "apps.example.com", clustersettings.GatewayClasses: ""})
	found := &app.Route{Gateway: "infra/a", Host: "shop-dev.apps.example.com", HTTPS: true, Discovered: true, Token: "t"}
	var warns []string
	c := Client{Namespace: "dev", Kube: devNS(), Dynamic: gatewayDyn(t, testGateway("infra", "a", gl{name: "http", proto: "HTTP", from: "All"})),
		Warn: func(m string) { warns = append(warns, m) }}
	if r := c.Want(ctx, upgraded, &app.App{Name: "shop", Namespace: "dev", Route: found}, ""); r == nil || *r != *found {
		t.Errorf("upgraded: %+v, want %+v kept", r, found)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "keeps Gateway infra/a") || !strings.Contains(warns[0], "gatewayClasses=") {
		t.Errorf("upgraded: warnings %q, want one that says how to allow the Gateway", warns)
	}
	if r := c.Want(ctx, upgraded, &app.App{Name: "blog", Namespace: "dev"}, ""); r != nil {
		t.Errorf("a new app took an untrusted Gateway: %+v", r)
	}
	c.Dynamic = gatewayDyn(t)
	if r := c.Want(ctx, upgraded, &app.App{Name: "shop", Namespace: "dev", Route: found}, ""); r != nil {
		t.Errorf("the Gateway is gone: %+v, want an Ingress", r)
	}
	c.Dynamic = gatewayDyn(t, testGateway("infra", "a", gl{name: "http", proto: "HTTP", from: "Same"}))
	if r := c.Want(ctx, upgraded, &app.App{Name: "shop", Namespace: "dev", Route: found}, ""); r != nil {
		t.Errorf("the Gateway no longer admits the namespace: %+v, want an Ingress", r)
	}
	// once an admin sets gatewayClasses, a Gateway it leaves out is left:
	// trust can be taken away
	c.Dynamic = gatewayDyn(t, testGateway("infra", "a", gl{name: "http", proto: "HTTP", from: "All"}))
	c.Trust = ""
	set := settings(map[string]string{clustersettings.AppsDomain: "apps.example.com", clustersettings.GatewayClasses: "infra/other"})
	if r := c.Want(ctx, set, &app.App{Name: "shop", Namespace: "dev", Route: found}, ""); r != nil && r.Gateway == "infra/a" {
		t.Errorf("gatewayClasses set without its class: %+v, want the untrusted Gateway left", r)
	}
}
