package route

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
)

// fromTheRoute accepts an answer only with the headers the probe's route
// puts on it.
func TestFromTheRoute(t *testing.T) {
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	key := AnswerKey("tok")
	for _, tt := range []struct {
		name  string
		h     http.Header
		probe Probe
		token string
		want  bool
	}{
		{"split marker matches", hdr(SplitHeader, "m1", RouteHeader, key), Probe(probeSplit + "m1"), "tok", true},
		{"split marker differs", hdr(SplitHeader, "m0", RouteHeader, key), Probe(probeSplit + "m1"), "tok", false},
		{"release matches", hdr(ReleaseHeader, "v7", RouteHeader, key), Probe(probeRelease + "v7"), "tok", true},
		{"release differs", hdr(ReleaseHeader, "v6", RouteHeader, key), Probe(probeRelease + "v7"), "tok", false},
		{"another route's key", hdr(RouteHeader, "other"), ProbeServe, "tok", false},
		{"a refusal carries no key", hdr(), probeForbidden, "tok", true},
		{"routed without a key needs a route header", hdr(), probeRouted, "", false},
		{"routed without a key", hdr(RouteHeader, "x"), probeRouted, "", true},
		{"plain serve", hdr(), ProbeServe, "", true},
	} {
		if got := fromTheRoute(tt.h, tt.probe, tt.token); got != tt.want {
			t.Errorf("%s: fromTheRoute = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// statusAnswers tells the app's answers from the router's own.
func TestStatusAnswers(t *testing.T) {
	resp := func(code int, retryAfter bool) *http.Response {
		r := &http.Response{StatusCode: code, Header: http.Header{}}
		if retryAfter {
			r.Header.Set("Retry-After", "30")
		}
		return r
	}
	for _, tt := range []struct {
		name  string
		resp  *http.Response
		probe Probe
		want  bool
	}{
		{"maintenance page", resp(503, true), ProbeMaintenance, true},
		{"503 without Retry-After", resp(503, false), ProbeMaintenance, false},
		{"forbidden", resp(403, false), probeForbidden, true},
		{"not yet forbidden", resp(200, false), probeForbidden, false},
		{"app answers", resp(200, false), ProbeServe, true},
		{"router 404", resp(404, false), ProbeServe, false},
		{"router 502", resp(502, false), ProbeServe, false},
		{"app's own 403", resp(403, false), ProbeServe, true},
		{"403 when admitted is wanted", resp(403, false), probeAdmitted, false},
	} {
		if got := statusAnswers(tt.resp, tt.probe); got != tt.want {
			t.Errorf("%s: statusAnswers = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// showsCertificate needs, over HTTPS, a certificate for the host.
func TestShowsCertificate(t *testing.T) {
	cert := &x509.Certificate{DNSNames: []string{"shop.example.com"}}
	for _, tt := range []struct {
		name string
		tls  *tls.ConnectionState
		want bool
	}{
		{"plain http", nil, true},
		{"no certificate", &tls.ConnectionState{}, false},
		{"the host's", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}, true},
		{"a default one", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{DNSNames: []string{"default.invalid"}}}}, false},
	} {
		if got := showsCertificate(&http.Response{TLS: tt.tls}, "shop.example.com"); got != tt.want {
			t.Errorf("%s: showsCertificate = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A failed or forbidden look keeps the Gateway the app found, and says
// which of the four cases it was.
func TestSayLookFailed(t *testing.T) {
	found := &app.App{Name: "shop", Route: &app.Route{Gateway: "gw/main", Host: "shop.example.com", Discovered: true}}
	named := &app.App{Name: "shop", Route: &app.Route{Gateway: "gw/named"}}
	for _, tt := range []struct {
		name       string
		a          *app.App
		d          Discovery
		err        error
		warn, note string
	}{
		{name: "error, kept", a: found, err: errors.New("boom"), warn: "app shop keeps Gateway gw/main"},
		{name: "error, none", a: named, err: errors.New("boom"), warn: "domains route through an Ingress"},
		{name: "forbidden, kept", a: found, d: Discovery{Forbidden: true}, note: "you may not list Gateways in every namespace: app shop keeps"},
		{name: "forbidden, none", a: named, d: Discovery{Namespace: "dev", Forbidden: true}, note: "you may not list Gateways in every namespace, so tug cannot look"},
	} {
		var warns, notes []string
		c := Client{Namespace: "dev", Warn: func(m string) { warns = append(warns, m) }, Note: func(m string) { notes = append(notes, m) }}
		r := &app.Route{}
		keepFound(tt.a, r)
		c.sayLookFailed(tt.a, r, tt.d, tt.err)
		if tt.a == found && (r.Gateway != "gw/main" || r.Host != "shop.example.com" || !r.Discovered) {
			t.Errorf("%s: found Gateway not kept: %+v", tt.name, r)
		}
		if tt.a == named && r.Gateway != "" {
			t.Errorf("%s: a Gateway named by hand is not the look's to keep: %+v", tt.name, r)
		}
		got, want := notes, tt.note
		if tt.warn != "" {
			got, want = warns, tt.warn
		}
		if len(got) != 1 || !strings.Contains(got[0], want) || len(warns)+len(notes) != 1 {
			t.Errorf("%s: warnings %q, notes %q; want one saying %q", tt.name, warns, notes, want)
		}
	}
}

// Hosts that route the same paths share one HTTPRoute; the sets sort.
func TestHostsByPaths(t *testing.T) {
	a := &app.App{Name: "shop", Route: &app.Route{Gateway: "gw/main", Host: "shop.example.com"}, Domains: []app.Domain{
		{Host: "www.example.com"},
		{Host: "api.example.com", Path: "/v2"},
		{Host: "api.example.com", Path: "/v1"},
	}}
	sets, groups := hostsByPaths(a)
	if !reflect.DeepEqual(sets, []string{"/", "/v1 /v2"}) {
		t.Fatalf("sets %q", sets)
	}
	if !reflect.DeepEqual(groups["/"], []string{"shop.example.com", "www.example.com"}) || !reflect.DeepEqual(groups["/v1 /v2"], []string{"api.example.com"}) {
		t.Fatalf("groups %q", groups)
	}
}
