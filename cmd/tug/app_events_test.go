package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
)

// app events reads the app's record and the apps named like its objects
// in one LIST, and still leaves their events out: shop-api's units would
// pass for those of shop's process "api".
func TestAppEventsReadsTheAppsOnce(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop", Processes: map[string]app.Process{"web": {Replicas: 1}, "api": {Replicas: 1}}})
	p.mustCreateApp(t, &app.App{Name: "shop-api", Processes: map[string]app.Process{"web": {Replicas: 1}}})
	event := func(pod, reason string, ago time.Duration) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: pod + ".1", Namespace: "dev"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod, Namespace: "dev"}, Reason: reason, Type: "Normal",
			LastTimestamp: metav1.NewTime(p.ago(reason, ago))}
	}
	p.add(t, event("shop-web-1", "Started", time.Minute), event("shop-api-web-1", "Killing", 2*time.Minute))
	p.cs.ClearActions()
	r := p.run(t, false, "app", "events", "shop", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"Pod/shop-web-1"`) || strings.Contains(r.stdout, "shop-api-web-1") {
		t.Errorf("exit %d, stdout %q, stderr %q; want shop-web-1's event and not shop-api's", r.code, r.stdout, r.stderr)
	}
	var records []string
	for _, a := range p.cs.Actions() {
		// the app records (the releases' are ConfigMaps too)
		l, ok := a.(k8stesting.ListAction)
		releases := ok && strings.Contains(l.GetListRestrictions().Labels.String(), "tug.dev/kind=release")
		if a.GetResource().Resource == "configmaps" && !releases {
			records = append(records, a.GetVerb())
		}
	}
	if strings.Join(records, " ") != "list" {
		t.Errorf("app records read with %q, want one list", records)
	}
}

// A missing app is the error every app command gives, hinted and routed.
func TestAppEventsNotFound(t *testing.T) {
	p := newPrinterFixture(t)
	p.mustCreateApp(t, &app.App{Name: "shop"})
	for _, c := range []struct {
		app, want string
		code      int
	}{
		{"nope", "error: app \"nope\" not found in namespace \"dev\"; see 'tug app list'\n", 1},
		{"Bad_Name", "error: invalid app name \"Bad_Name\": use lower-case letters, digits and '-', starting with a letter and ending with a letter or digit\nrun 'tug app events --help' for usage\n", 2},
	} {
		if r := p.run(t, false, "app", "events", c.app); r.code != c.code || r.stderr != c.want {
			t.Errorf("app events %s: exit %d, stderr %q; want %d, %q", c.app, r.code, r.stderr, c.code, c.want)
		}
	}

	prod := newAppServer(t, "ns-prod", map[string]func(*app.App){"shop": nil})
	edge := newAppServer(t, "ns-edge", map[string]func(*app.App){"blog": nil})
	run := clusterRunner(t, kubeconfigServers(t, "prod", prod.url, "edge", edge.url), "prod prod web", "edge edge gpu")
	r := run("app", "events", "nope")
	want := "error: app \"nope\" not found in namespace \"ns-prod\"; see 'tug app list'; searched clusters: edge (namespace \"ns-edge\"), prod (namespace \"ns-prod\")\n"
	if r.code != 1 || r.stderr != want {
		t.Errorf("routed: exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}
	run = clusterRunner(t, kubeconfigServers(t, "prod", prod.url, "gpu", deadServer), "prod prod web", "gpu gpu gpu")
	r = run("app", "events", "nope")
	want = "error: app \"nope\" not found in namespace \"ns-prod\"; see 'tug app list'; searched clusters: prod (namespace \"ns-prod\"); unreachable, so not searched: gpu (cannot reach the cluster at https://127.0.0.1:1: connection refused; check --context or KUBECONFIG)\n"
	if r.code != 1 || r.stderr != want {
		t.Errorf("routed, a cluster silent: exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}
}

func TestNewAppEventsCmd(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		follow  bool
		since   time.Duration
		wantErr string
	}{
		{name: "all", argv: []string{"shop"}},
		{name: "follow since", argv: []string{"shop", "-f", "--since", "10m", "-o", "json"}, follow: true, since: 10 * time.Minute},
		{name: "negative since", argv: []string{"shop", "--since", "-1m"}, wantErr: "--since must be positive"},
		{name: "follow yaml", argv: []string{"shop", "-f", "-o", "yaml"}, wantErr: "-f prints a table or JSON lines"},
		{name: "bad app", argv: []string{"Bad_Name"}, wantErr: `invalid app name "Bad_Name"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newAppEventsCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.App != "shop" || o.follow != tt.follow || o.Since != tt.since {
				t.Fatalf("error %v, options %+v", err, o)
			}
		})
	}
}
