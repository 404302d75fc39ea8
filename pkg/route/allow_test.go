package route

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"tug.dev/tug/pkg/app"
)

// What a request from tug's own address must get once a change is served,
// and when no answer can tell the change apart (ProbeNone: accepted, not
// served, without waiting for an answer that cannot come).
func TestExpectThroughAnAllowList(t *testing.T) {
	me := net.ParseIP("10.200.0.100")
	const host = "shop-dev.apps.example.com"
	mk := func(router string, allow ...string) *app.App {
		return &app.App{Name: "shop", Namespace: "dev", Allow: allow,
			Route: &app.Route{Gateway: "infra/router", Host: host, Router: router}}
	}
	maint := mk("traefik")
	maint.Maintenance = true
	for _, tt := range []struct {
		name          string
		before, after *app.App
		src           net.IP
		probe, want   Probe
	}{
		{"a list that leaves tug out", mk("traefik"), mk("traefik", "192.0.2.0/24"), me, ProbeAllow, probeForbidden},
		{"a list that lets tug in", mk("traefik", "192.0.2.0/24"), mk("traefik", "192.0.2.0/24", "10.200.0.100/32"), me, ProbeAllow, probeAdmitted},
		{"the list emptied", mk("traefik", "192.0.2.0/24"), mk("traefik"), me, ProbeAllow, probeAdmitted},
		{"still refused: nothing shows", mk("traefik", "192.0.2.0/24"), mk("traefik", "192.0.2.0/24", "198.51.100.0/24"), me, ProbeAllow, ProbeNone},
		{"still admitted: nothing shows", mk("traefik", "10.0.0.0/8"), mk("traefik", "10.0.0.0/8", "192.0.2.0/24"), me, ProbeAllow, ProbeNone},
		{"admitted to the maintenance page", mk("traefik", "192.0.2.0/24"), maint, me, ProbeAllow, ProbeMaintenance},
		{"a router that does not enforce it", mk("other"), mk("other", "192.0.2.0/24"), me, ProbeAllow, ProbeNone},
		{"no router named", mk(""), mk("", "192.0.2.0/24"), me, ProbeAllow, ProbeNone},
		{"ingress-nginx does not serve the Gateway", mk("ingress-nginx"), mk("ingress-nginx", "192.0.2.0/24"), me, ProbeAllow, ProbeNone},
		{"own address unknown", mk("traefik"), mk("traefik", "192.0.2.0/24"), nil, ProbeAllow, ProbeNone},
		{"maintenance behind a refusal", mk("traefik", "192.0.2.0/24"), mk("traefik", "192.0.2.0/24"), me, ProbeMaintenance, ProbeNone},
		{"a served host behind a refusal", mk("traefik", "192.0.2.0/24"), mk("traefik", "192.0.2.0/24"), me, ProbeServe, ProbeNone},
		{"a new host behind a refusal: routed", nil, mk("traefik", "192.0.2.0/24"), me, ProbeServe, probeForbidden},
		{"maintenance, admitted", mk("traefik", "10.200.0.0/16"), mk("traefik", "10.200.0.0/16"), me, ProbeMaintenance, ProbeMaintenance},
	} {
		if got := expect(tt.before, tt.after, host, tt.src, tt.probe); got != tt.want {
			t.Errorf("%s: expect = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Through ingress-nginx only the Ingress's hosts are filtered at the router.
func TestEnforcedAtIngressNginxIngressOnly(t *testing.T) {
	a := &app.App{Route: &app.Route{Gateway: "infra/router", Router: "ingress-nginx"},
		Domains: []app.Domain{{Host: "gw.example.com"}, {Host: "tls.example.com", TLSSecret: "s"}}}
	if enforcedAt(a, "gw.example.com") || !enforcedAt(a, "tls.example.com") {
		t.Errorf("enforcedAt: gateway host %v, ingress host %v", enforcedAt(a, "gw.example.com"), enforcedAt(a, "tls.example.com"))
	}
}

// Until the router has the list that admits tug, it answers 403: that is
// not the app answering.
func TestAnsweredTellsTheRoutersRefusal(t *testing.T) {
	code := http.StatusForbidden
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/")
	for _, tt := range []struct {
		code  int
		probe Probe
		want  bool
	}{
		{403, probeForbidden, true},
		{200, probeForbidden, false},
		{403, probeAdmitted, false},
		{200, probeAdmitted, true},
		{503, probeAdmitted, false},
		{403, ProbeServe, true}, // an app may answer 403 itself
	} {
		code = tt.code
		if got := answered(context.Background(), srv.Client(), u, tt.probe, ""); got != tt.want {
			t.Errorf("%d for %s: answered = %v", tt.code, tt.probe, got)
		}
	}
}
