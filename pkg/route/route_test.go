package route

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
)

func TestAppHostStaysOneLabel(t *testing.T) {
	if got := AppHost("shop", "dev", "apps.example.com"); got != "shop-dev.apps.example.com" {
		t.Errorf("AppHost = %q", got)
	}
	long := strings.Repeat("n", 60)
	a, b := AppHost("shop", long, "d.io"), AppHost("shop", long[:59]+"m", "d.io")
	label := strings.Split(a, ".")[0]
	if len(label) > 63 || !strings.HasPrefix(label, "shop-") || a == b {
		t.Errorf("AppHost for a long namespace = %q (%d), %q", a, len(label), b)
	}
}

func TestHostMatches(t *testing.T) {
	for _, tt := range []struct {
		listener, host string
		want           bool
	}{
		{"", "anything.example.com", true},
		{"*.apps.example.com", "shop-dev.apps.example.com", true},
		{"*.apps.example.com", "a.b.apps.example.com", false},
		{"*.apps.example.com", "apps.example.com", false},
		{"shop.example.com", "shop.example.com", true},
	} {
		if got := hostMatches(tt.listener, tt.host); got != tt.want {
			t.Errorf("hostMatches(%q, %q) = %v", tt.listener, tt.host, got)
		}
	}
}

// Clients get no header of tug's: only the probe rule, which matches the
// app's ProbeKey, adds RouteHeader (the app's AnswerKey); every rule has
// such a twin.
func TestRenderSendsClientsNoHeaderOfTugs(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: "dev", Route: &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com", Token: "t0ken"},
		Domains: []app.Domain{{Host: "shop.example.com", Path: "/api"}}}
	routes := Render(a, "shop", nil)
	if len(routes) != 2 {
		t.Fatalf("%d routes", len(routes))
	}
	for _, r := range routes {
		rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules")
		probes := 0
		for _, rule := range rules {
			m := rule.(map[string]any)
			matches, _, _ := unstructured.NestedSlice(m, "matches")
			headers, _, _ := unstructured.NestedSlice(matches[0].(map[string]any), "headers")
			filters, _, _ := unstructured.NestedSlice(m, "filters")
			var set []any
			for _, f := range filters {
				s, _, _ := unstructured.NestedSlice(f.(map[string]any), "responseHeaderModifier", "set")
				set = append(set, s...)
			}
			if len(headers) == 0 {
				if len(set) != 0 {
					t.Errorf("route %s: a rule every client matches sets %v", r.GetName(), set)
				}
				continue
			}
			probes++
			h := headers[0].(map[string]any)
			if h["name"] != ProbeHeader || h["value"] != ProbeKey("t0ken") {
				t.Errorf("route %s: probe match %v", r.GetName(), h)
			}
			if len(set) != 1 || set[0].(map[string]any)["value"] != AnswerKey("t0ken") {
				t.Errorf("route %s: probe rule sets %v", r.GetName(), set)
			}
		}
		if probes*2 != len(rules) {
			t.Errorf("route %s: %d probe rules of %d", r.GetName(), probes, len(rules))
		}
	}
	if ProbeKey("t0ken") == AnswerKey("t0ken") || AnswerKey("t0ken") == AnswerKey("other") {
		t.Error("keys should differ by use and by token")
	}
}

// Two apps never get one host: app shop in team-prod and app shop-team in
// prod wrote the same APP-NAMESPACE; every host is one label that is no
// reserved form.
func TestAppHostsNeverCollide(t *testing.T) {
	pairs := [][2]string{{"shop", "team-prod"}, {"shop-team", "prod"}, {"shop-team-prod", "x"}, {"shop", "dev"}, {"shopdev", "x"},
		{"ab", "cd"}, {"ab", "c-d"}, {"a-b", "c"}, {"xn--z", "dev"}, {"shop", strings.Repeat("n", 60)}, {"shop", strings.Repeat("n", 59) + "m"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		h := AppHost(p[0], p[1], "apps.example.com")
		label, rest, _ := strings.Cut(h, ".")
		if rest != "apps.example.com" || len(label) > 63 || len(label) > 3 && label[2:4] == "--" || strings.HasSuffix(label, "-") {
			t.Errorf("%v: host %q", p, h)
		}
		if o, ok := seen[h]; ok {
			t.Errorf("%v and %v share host %q", p, o, h)
		}
		seen[h] = p
	}
	if got := AppHost("shop", "dev", "d.io"); got != "shop-dev.d.io" {
		t.Errorf("an app and a namespace without '-' keep APP-NAMESPACE: %q", got)
	}
}

// An HTTPRoute takes at most 16 rules: a host with many paths keeps a rule
// for each, and twins for as many as fit.
func TestRenderKeepsTheRuleLimit(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: "dev", Route: &app.Route{Gateway: "infra/router", Token: "t"}}
	for i := range 10 {
		a.Domains = append(a.Domains, app.Domain{Host: "shop.example.com", Path: fmt.Sprintf("/p%d", i)})
	}
	routes := Render(a, "shop", nil)
	rules, _, _ := unstructured.NestedSlice(routes[0].Object, "spec", "rules")
	if len(routes) != 1 || len(rules) != 16 {
		t.Errorf("%d routes, %d rules; want 1 of 16 (10 paths, 6 twins)", len(routes), len(rules))
	}
}

// A split route answers tug's probe for each release alone: a rule per
// backend that matches the probe's key and ReleaseHeader, to that backend
// only, answering with both.
func TestRenderSplitAnswersForEachRelease(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: "dev", Route: &app.Route{Gateway: "infra/router", Host: "shop-dev.apps.example.com", Token: "t"}}
	routes := RenderSplit(a, []Backend{{Name: "shop-track-stable", Weight: 75, Label: "v7"}, {Name: "shop-track-canary", Weight: 25, Label: "v8"}}, nil)
	rules, _, _ := unstructured.NestedSlice(routes[0].Object, "spec", "rules")
	if len(rules) != 4 {
		t.Fatalf("%d rules, want the plain one, its twin and one per release", len(rules))
	}
	for i, label := range map[int]string{2: "v7", 3: "v8"} {
		m := rules[i].(map[string]any)
		matches, _, _ := unstructured.NestedSlice(m, "matches")
		headers, _, _ := unstructured.NestedSlice(matches[0].(map[string]any), "headers")
		refs, _, _ := unstructured.NestedSlice(m, "backendRefs")
		if len(headers) != 2 || headers[1].(map[string]any)["value"] != label || len(refs) != 1 || refs[0].(map[string]any)["weight"] != nil {
			t.Errorf("rule %d: headers %v, backends %v", i, headers, refs)
		}
		filters, _, _ := unstructured.NestedSlice(m, "filters")
		set, _, _ := unstructured.NestedSlice(filters[len(filters)-1].(map[string]any), "responseHeaderModifier", "set")
		if len(set) != 2 || set[1].(map[string]any)["value"] != label {
			t.Errorf("rule %d sets %v", i, set)
		}
	}
}

// An app made before hashed names keeps the APP-NAMESPACE host its record
// has (its URL does not change at the next deploy, and no other namespace
// can take the name once it drops); a new app gets the new name; the old
// host moves, with a warning, when another namespace routes it.
func TestWantKeepsTheAppsOldStyleHost(t *testing.T) {
	ctx := context.Background()
	s := &clustersettings.Stored{Found: true, Cluster: clustersettings.Settings{clustersettings.Gateway: "infra/router", clustersettings.AppsDomain: "apps.example.com"}}
	old := "shop-team-prod.apps.example.com"
	existing := &app.App{Name: "shop", Namespace: "team-prod", Route: &app.Route{Gateway: "infra/router", Host: old, Token: "t"}}
	var warns []string
	c := Client{Namespace: "team-prod", Dynamic: gatewayDyn(t), Kube: fake.NewClientset(), Warn: func(m string) { warns = append(warns, m) }}
	if r := c.Want(ctx, s, existing, ""); r == nil || r.Host != old {
		t.Errorf("existing app: %+v, want host %s kept", r, old)
	}
	if r := c.Want(ctx, s, &app.App{Name: "shop", Namespace: "team-prod"}, ""); r == nil || r.Host != AppHost("shop", "team-prod", "apps.example.com") {
		t.Errorf("new app: %+v, want the new name", r)
	}
	other := &app.App{Name: "shop", Namespace: "team-prod", Route: &app.Route{Gateway: "infra/router", Host: "blog-team-prod.apps.example.com", Token: "t"}}
	if r := c.Want(ctx, s, other, ""); r == nil || r.Host != AppHost("shop", "team-prod", "apps.example.com") {
		t.Errorf("a stored host that is not the app's old name: %+v, want the new name", r)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %q", warns)
	}

	dyn := gatewayDyn(t)
	taken := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "shop-team", "namespace": "prod"},
		"spec":     map[string]any{"hostnames": []any{old}},
	}}
	if err := dyn.Tracker().Create(HTTPRoutes, taken, "prod"); err != nil {
		t.Fatal(err)
	}
	c.Dynamic = dyn
	if r := c.Want(ctx, s, existing, ""); r == nil || r.Host != AppHost("shop", "team-prod", "apps.example.com") {
		t.Errorf("old host routed by another namespace: %+v, want the new name", r)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "moves from "+old) {
		t.Errorf("warnings %q, want one that says the URL moves", warns)
	}
}

// A catch-all route of another namespace (an admin's *.apps.example.com)
// is no claim on an app's old-style host: it keeps it. Once kept, the
// record says so (OldHost) and no later change looks again: a look would
// list every route and Ingress of the cluster on each deploy.
func TestWantKeepsTheOldHostPastACatchAllAndDecidesOnce(t *testing.T) {
	ctx := context.Background()
	s := &clustersettings.Stored{Found: true, Cluster: clustersettings.Settings{clustersettings.Gateway: "infra/router", clustersettings.AppsDomain: "apps.example.com"}}
	old := "shop-team-prod.apps.example.com"
	dyn := gatewayDyn(t)
	catchAll := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "fallback", "namespace": "infra"},
		"spec":     map[string]any{"hostnames": []any{"*.apps.example.com"}},
	}}
	if err := dyn.Tracker().Create(HTTPRoutes, catchAll, "infra"); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientset()
	c := Client{Namespace: "team-prod", Dynamic: dyn, Kube: kube}
	existing := &app.App{Name: "shop", Namespace: "team-prod", Route: &app.Route{Gateway: "infra/router", Host: old, Token: "t"}}
	r := c.Want(ctx, s, existing, "")
	if r == nil || r.Host != old || !r.OldHost {
		t.Fatalf("with a catch-all elsewhere: %+v, want the old host kept and recorded", r)
	}
	existing.Route = r
	lists := 0
	kube.PrependReactor("list", "ingresses", func(k8stesting.Action) (bool, runtime.Object, error) { lists++; return false, nil, nil })
	if r := c.Want(ctx, s, existing, ""); r == nil || r.Host != old || lists != 0 {
		t.Errorf("the next change: %+v after %d Ingress lists; want the old host, no look", r, lists)
	}
}
