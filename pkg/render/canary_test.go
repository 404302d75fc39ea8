package render

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

// backendsOf reads the first rule's backendRefs of a rendered route:
// name -> weight (-1 when the ref has none).
func backendsOf(t *testing.T, r *unstructured.Unstructured) map[string]int64 {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules")
	refs, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "backendRefs")
	out := map[string]int64{}
	for _, ref := range refs {
		m := ref.(map[string]any)
		w, ok := m["weight"].(int64)
		if !ok {
			w = -1
		}
		out[m["name"].(string)] = w
	}
	return out
}

// splitHeaderOf is the SplitHeader the probe rule of the route's first
// path sets; it fails the test when a rule that every client matches sets
// a header of tug's.
func splitHeaderOf(t *testing.T, r *unstructured.Unstructured) string {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules")
	got := ""
	for i, rule := range rules {
		matches, _, _ := unstructured.NestedSlice(rule.(map[string]any), "matches")
		_, probe, _ := unstructured.NestedSlice(matches[0].(map[string]any), "headers")
		filters, _, _ := unstructured.NestedSlice(rule.(map[string]any), "filters")
		for _, f := range filters {
			sets, _, _ := unstructured.NestedSlice(f.(map[string]any), "responseHeaderModifier", "set")
			for _, s := range sets {
				name := s.(map[string]any)["name"]
				if !probe {
					t.Errorf("rule %d, which every client matches, sets %s", i, name)
				}
				if name == route.SplitHeader && i == 1 {
					got = s.(map[string]any)["value"].(string)
				}
			}
		}
	}
	return got
}

func TestRenderSplitsByWeightThroughAGateway(t *testing.T) {
	a, r, cfg := renderFixture()
	a.Release = 7
	a.Route = &app.Route{Gateway: "gw/main", Host: "shop-dev.apps.test", Token: "secret"}
	if objs := Release(a, r, cfg); len(objs.TrackServices) > 0 || len(objs.Keep) > 0 ||
		!maps.Equal(backendsOf(t, objs.Routes[0]), map[string]int64{"shop": -1}) || splitHeaderOf(t, objs.Routes[0]) != "" {
		t.Fatalf("without a canary: one backend, no split: %+v", objs.Routes[0].Object)
	}
	cases := []struct {
		weight int
		want   map[string]int64
		header string
		sel    string // the web Service's release selector
	}{
		{0, map[string]int64{"shop-track-stable": -1}, "v7=100%", "7"},
		{25, map[string]int64{"shop-track-stable": 75, "shop-track-canary": 25}, "v7=75% v8=25%", ""},
		{100, map[string]int64{"shop-track-canary": -1}, "v8=100%", "8"},
	}
	for _, c := range cases {
		a.Canary = &app.Canary{Release: 8, Weight: c.weight, Units: 1, Exact: true, Strategy: app.StrategyCanary}
		objs := Release(a, r, cfg)
		if got := backendsOf(t, objs.Routes[0]); !maps.Equal(got, c.want) {
			t.Errorf("weight %d: backends %v, want %v", c.weight, got, c.want)
		}
		if got := splitHeaderOf(t, objs.Routes[0]); got != c.header {
			t.Errorf("weight %d: %s %q, want %q", c.weight, route.SplitHeader, got, c.header)
		}
		if got := objs.Service.Spec.Selector[kube.LabelRelease]; got != c.sel {
			t.Errorf("weight %d: the web Service selects release %q, want %q", c.weight, got, c.sel)
		}
		if len(objs.TrackServices) != 2 || objs.TrackServices[0].Spec.Selector[kube.LabelRelease] != "7" || objs.TrackServices[1].Spec.Selector[kube.LabelRelease] != "8" {
			t.Errorf("weight %d: the two sides' Services: %+v", c.weight, objs.TrackServices)
		}
		if !slices.Equal(objs.Keep, []string{"shop-web-canary"}) {
			t.Errorf("weight %d: the canary's Deployment is not kept: %v", c.weight, objs.Keep)
		}
	}
	// maintenance: the page answers, no split
	a.Canary.Weight, a.Maintenance = 25, true
	if objs := Release(a, r, cfg); len(objs.TrackServices) > 0 || !maps.Equal(backendsOf(t, objs.Routes[0]), map[string]int64{"shop": -1}) {
		t.Errorf("in maintenance the route should not split: %v", backendsOf(t, objs.Routes[0]))
	}
}

func TestRenderSplitsByUnitsWithoutAGateway(t *testing.T) {
	a, r, cfg := renderFixture()
	a.Release = 7
	a.Canary = &app.Canary{Release: 8, Weight: 25, Units: 1, Strategy: app.StrategyCanary}
	objs := Release(a, r, cfg)
	if len(objs.Routes) > 0 || len(objs.TrackServices) > 0 {
		t.Fatalf("no Gateway: no route, no split Services: %v %v", objs.Routes, objs.TrackServices)
	}
	if _, ok := objs.Service.Spec.Selector[kube.LabelRelease]; ok {
		t.Errorf("between 0%% and 100%% the web Service selects both releases' units: %v", objs.Service.Spec.Selector)
	}
	d := Canary(a, &app.Release{App: "shop", Version: 8, Image: "shop:8", Processes: map[string]string{"web": "serve"}}, cfg)
	if d.Name != "shop-web-canary" || *d.Spec.Replicas != 1 || d.Spec.Template.Labels[kube.LabelRelease] != "8" || !IsCanary(d.Spec.Template.Labels) {
		t.Fatalf("canary Deployment: %s %d %v", d.Name, *d.Spec.Replicas, d.Spec.Template.Labels)
	}
	// its units carry the web Service's selector: the split by units
	for k, v := range objs.Service.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("canary units lack the Service's %s=%s", k, v)
		}
	}
	// and the deployed release's Deployment never selects by track, so
	// the two Deployments' selectors tell their pods apart one way
	if _, ok := d.Spec.Selector.MatchLabels[kube.LabelTrack]; !ok {
		t.Error("the canary's selector should name its track")
	}
}

// The router's answer tells a served split apart only through a Gateway
// that splits by weight; otherwise the app's answer is enough.
func TestSplitProbe(t *testing.T) {
	a := &app.App{Name: "shop", Release: 7, Canary: &app.Canary{Release: 8, Weight: 25, Units: 1, Exact: true, Strategy: app.StrategyCanary}}
	if Gatewayed(a) || SplitProbe(a) != route.ProbeServe {
		t.Errorf("without a Gateway: gatewayed %v, probe %q", Gatewayed(a), SplitProbe(a))
	}
	a.Route = &app.Route{Gateway: "gw/main", Host: "shop-dev.apps.test"}
	if !Gatewayed(a) || SplitProbe(a) != route.ProbeSplit("v7=75% v8=25%") {
		t.Errorf("through a Gateway: gatewayed %v, probe %q", Gatewayed(a), SplitProbe(a))
	}
	a.Maintenance = true
	if SplitProbe(a) != route.ProbeServe {
		t.Errorf("in maintenance: probe %q, want the plain answer", SplitProbe(a))
	}
}
