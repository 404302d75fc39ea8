package route

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
)

// "Routed" is what the router says and serves, not what was applied: after
// its routes are applied, a change waits (bounded) for the router to accept
// them (the route status its controller writes), then, where tug can reach
// the Gateway's address, for a request through it to be answered for the
// app's host.

// Routing says how far a change's routes got (deploy's Result.Routing).
const (
	// RoutingServed: a request through the router was answered for the host.
	RoutingServed = "served"
	// RoutingAccepted: the router accepted the route; tug could not send a
	// request through it (the Gateway's address is unknown or unreachable).
	RoutingAccepted = "accepted"
	// RoutingPending: applied, not yet confirmed by the router in time.
	RoutingPending = "pending"
)

// CodeRouteRefused is the exit code of a change whose route the router
// refused (docs/exit-codes.md).
const CodeRouteRefused = 18

// RouteError is a route the router refused: its controller's reason and
// message, from the route's status.
type RouteError struct {
	App, Route, Gateway string
	Condition, Reason   string
	Message             string
}

func (e *RouteError) Error() string {
	msg := fmt.Sprintf("the router refused route %s of app %q on Gateway %s: %s %s", e.Route, e.App, e.Gateway, e.Condition, e.Reason)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// ExitCode is CodeRouteRefused.
func (e *RouteError) ExitCode() int { return CodeRouteRefused }

// Probe says what a request through the router must get for the change to
// count as served.
type Probe string

const (
	// ProbeServe (the default): the app answers (no router error).
	ProbeServe Probe = ""
	// ProbeMaintenance: the maintenance page answers (503, Retry-After).
	ProbeMaintenance Probe = "maintenance"
	// ProbeNone: nothing to ask (routable off).
	ProbeNone Probe = "none"
	// ProbeAllow: the allow list changed. Where the router enforces it,
	// a request from tug's own address is refused (403) when the new list
	// leaves that address out and answered as the app's state says when
	// it admits it; a change that does not change that verdict cannot be
	// seen from here (accepted, not served).
	ProbeAllow Probe = "allow"
	// probeForbidden: the router refuses the request (its allow list).
	probeForbidden Probe = "forbidden"
	// probeAdmitted: the app answers, and not with a 403 (the router's
	// refusal, until it has the list that admits tug).
	probeAdmitted Probe = "admitted"
	// probeGone: the router no longer routes the host (its 404).
	probeGone Probe = "gone"
	// probeRouted: ProbeServe through the Gateway, the answer carrying
	// RouteHeader (not an Ingress's answer for the same host).
	probeRouted Probe = "routed"
	// probeSplit prefixes ProbeSplit's.
	probeSplit = "split:"
	// probeRelease prefixes the probe of one release of a split (its
	// label): ReleaseHeader asks for it, and must come back.
	probeRelease = "release:"
)

// ProbeSplit: the app answers through a split route, with SplitHeader
// saying marker (the router runs that split, not only accepted it), and
// each release with a share answers for itself.
func ProbeSplit(marker string) Probe { return Probe(probeSplit + marker) }

// splitLabels are the labels of the releases with a share in a split
// probe's marker ("v7=75% v8=25%": v7, v8); none for another probe, or a
// split of one backend.
func splitLabels(p Probe) []string {
	marker, ok := strings.CutPrefix(string(p), probeSplit)
	parts := strings.Fields(marker)
	if !ok || len(parts) < 2 {
		return nil
	}
	var out []string
	for _, part := range parts {
		if label, share, ok := strings.Cut(part, "="); ok && share != "0%" {
			out = append(out, label)
		}
	}
	return out
}

// How long a change waits for the router: its verdict on the routes, then
// an answer through it.
var (
	routeVerdictTimeout = 30 * time.Second
	routeServeTimeout   = 15 * time.Second
)

// Confirm waits for the router to accept the routes got (as applied) and
// then to serve every URL of the app (servedURLs), and to stop serving the
// hosts that before (the app as the router served it before the change;
// nil for a rollout) had and a has not, saying so to p. It returns one of
// the Routing values ("" when the app routes through no Gateway).
func (c Client) Confirm(ctx context.Context, p progress.Reporter, before, a *app.App, got []*unstructured.Unstructured, probe Probe) (string, error) {
	var gone []*url.URL
	if before != nil {
		gone = GoneURLs(before, a)
	}
	if a.Route == nil || a.Route.Gateway == "" || len(got) == 0 && len(gone) == 0 {
		return "", nil
	}
	p.Update("waiting for the router to accept the app's route")
	for _, r := range got {
		// the route as applied carries its status: a route whose spec did
		// not change (a rollout's) was accepted already, for this
		// generation, and needs no LIST and watch of its own
		if ok, refusal := verdict(r, a.Route.Gateway, r.GetGeneration()); ok && refusal == nil {
			continue
		}
		ok, err := c.awaitVerdict(ctx, a, r)
		if err != nil {
			return "", err
		}
		if !ok {
			return RoutingPending, nil
		}
	}
	if probe == ProbeNone {
		return RoutingAccepted, nil
	}
	gw := c.readGateway(ctx, a.Route.Gateway)
	if gw == nil || gw.address == "" || gw.httpPort == 0 {
		return RoutingAccepted, nil
	}
	return serveAll(ctx, p, before, a, gw, gone, probe), nil
}

// serveAll waits, through gw, for the router to serve each URL of the app
// as the change (probe) should, then to stop serving the hosts gone. It is
// RoutingServed when all did and every URL could tell the change apart,
// else RoutingAccepted.
func serveAll(ctx context.Context, p progress.Reporter, before, a *app.App, gw *gatewayView, gone []*url.URL, probe Probe) string {
	src := sourceTowards(net.JoinHostPort(gw.address, strconv.FormatInt(gw.httpPort, 10)))
	confirmed := true
	for _, u := range servedURLs(a) {
		want := expect(before, a, u.Hostname(), src, probe)
		if want == ProbeServe && throughGateway(a, u.Hostname()) {
			want = probeRouted
		}
		if want == ProbeNone {
			confirmed = false // nothing tug can ask tells this change apart
			continue
		}
		if !serveOne(ctx, p, a, gw, u, want) {
			return RoutingAccepted
		}
	}
	for _, u := range gone {
		p.Update(fmt.Sprintf("waiting for the router to stop serving %s", u.Hostname()))
		http := &url.URL{Scheme: "http", Host: u.Host, Path: u.Path}
		if !served(ctx, net.JoinHostPort(gw.address, strconv.FormatInt(gw.httpPort, 10)), http, probeGone, "") {
			return RoutingAccepted
		}
	}
	if !confirmed {
		return RoutingAccepted
	}
	return RoutingServed
}

// serveOne waits for the router to give u what want says, through gw,
// and, for a split of the app's own host, for each release with a share
// to answer for itself; false when it did not in time.
func serveOne(ctx context.Context, p progress.Reporter, a *app.App, gw *gatewayView, u *url.URL, want Probe) bool {
	port := gw.httpPort
	if u.Scheme == "https" {
		if port = gw.httpsPort; port == 0 {
			port = 443 // a host with its own certificate: the Ingress's TLS
		}
	}
	key := ""
	if throughGateway(a, u.Hostname()) {
		key = a.Route.Token
	}
	p.Update(fmt.Sprintf("waiting for the router to serve %s", u.Redacted()))
	addr := net.JoinHostPort(gw.address, strconv.FormatInt(port, 10))
	if !served(ctx, addr, u, want, key) {
		return false
	}
	// a split: each release with a share answers for itself (on the app's
	// own host, whose routes always have room for its rules)
	if key != "" && u.Hostname() == a.Route.Host {
		for _, label := range splitLabels(want) {
			p.Update(fmt.Sprintf("waiting for %s's units to answer %s", label, u.Redacted()))
			if !served(ctx, addr, u, Probe(probeRelease+label), key) {
				return false
			}
		}
	}
	return true
}

// expect is what a request from src for host through the router must get
// once the change (probe) is served; ProbeNone when no answer would tell
// the change apart. The router is taken to see src, the address tug's
// packets leave from, as the client: where a NAT or a load balancer stands
// between, it sees another, a request gets what was not predicted, and the
// change ends "accepted" (not confirmed), never served by mistake.
func expect(before, a *app.App, host string, src net.IP, probe Probe) Probe {
	refused := func(x *app.App) bool { return src != nil && enforcedAt(x, host) && !admits(x.Allow, src) }
	switch probe {
	case ProbeAllow:
		if src == nil || before == nil || refused(a) == refused(before) {
			return ProbeNone // tug's own verdict is the same before and after
		}
		switch {
		case refused(a):
			return probeForbidden
		case a.Unroutable:
			return ProbeNone
		case a.Maintenance:
			return ProbeMaintenance
		}
		return probeAdmitted
	case ProbeServe:
		if !refused(a) {
			return ProbeServe
		}
		// behind the router's 403 only a new host shows: routed at all
		if before != nil && hasHost(before, host) {
			return ProbeNone
		}
		return probeForbidden
	case ProbeMaintenance:
		if refused(a) {
			return ProbeNone
		}
	}
	return probe
}

func hasHost(a *app.App, host string) bool {
	for _, u := range app.URLs(a) {
		if hostOf(u) == host {
			return true
		}
	}
	return false
}

// GoneURLs are the URLs of before that after no longer has.
func GoneURLs(before, after *app.App) []*url.URL {
	now := map[string]bool{}
	for _, u := range app.URLs(after) {
		now[hostOf(u)] = true
	}
	var out []*url.URL
	for _, s := range app.URLs(before) {
		if u, err := url.Parse(s); err == nil && !now[u.Hostname()] {
			out = append(out, u)
		}
	}
	return out
}

func hostOf(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// servedURLs are what a request through the router must reach: the app's
// URL and each of its domains the router serves (through the Gateway, or
// through the router's own Ingress class; one that names another class is
// another controller's), each as its URL says (https with a certificate).
func servedURLs(a *app.App) []*url.URL {
	var out []*url.URL
	for _, s := range app.URLs(a) {
		u, err := url.Parse(s)
		if err != nil {
			continue
		}
		for _, d := range a.Domains {
			if d.Host == u.Hostname() && d.IngressClass != "" && d.IngressClass != a.Route.IngressClass {
				u = nil
				break
			}
		}
		if u != nil {
			out = append(out, u)
		}
	}
	return out
}

// awaitVerdict watches route r until its status, for the generation
// applied, says whether the Gateway accepted it: true when accepted with
// its references resolved, a *RouteError when refused, false when the
// router said nothing within routeVerdictTimeout.
func (c Client) awaitVerdict(ctx context.Context, a *app.App, r *unstructured.Unstructured) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, routeVerdictTimeout)
	defer cancel()
	lw := kube.Unstructured(c.Dynamic, HTTPRoutes, c.Namespace, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", r.GetName()).String()})
	var refused, unsliced *RouteError
	err := kube.Until(wctx, lw, func(routes map[string]*unstructured.Unstructured) (bool, error) {
		cur := routes[kube.Key(r)]
		if cur == nil {
			return false, nil
		}
		accepted, refusal := verdict(cur, a.Route.Gateway, r.GetGeneration())
		if refusal != nil {
			refusal.App, refusal.Route = a.Name, r.GetName()
			if noSliceYet(refusal) {
				// a Service made just before the route, which the
				// router has not seen yet (a canary's split)
				unsliced = refusal
				return false, nil
			}
			refused = refusal
			return true, nil
		}
		return accepted, nil
	})
	switch {
	case refused != nil:
		return false, refused
	case err != nil && unsliced != nil && ctx.Err() == nil:
		return false, unsliced
	case err == nil:
		return true, nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return false, nil
	}
	return false, err
}

// noSliceYet says whether the router refused a route only because it has
// not seen a backend Service, or its EndpointSlice, yet (Traefik's
// words): tug routes only to Services it applied just before, so the
// router's cache lags; a backend that stays missing is refused at the
// verdict's deadline.
func noSliceYet(e *RouteError) bool {
	return e.Reason == "BackendNotFound" && (strings.Contains(e.Message, "endpointslices not found") ||
		strings.Contains(e.Message, "getting service: service") && strings.Contains(e.Message, "not found"))
}

// verdict reads an HTTPRoute's status for its Gateway parent at generation
// gen (0: any): accepted when Accepted and ResolvedRefs are True; a
// RouteError when either is False.
func verdict(u *unstructured.Unstructured, gateway string, gen int64) (bool, *RouteError) {
	gwNS, gwName, _ := strings.Cut(gateway, "/")
	parents, _, _ := unstructured.NestedSlice(u.Object, "status", "parents")
	for _, p := range parents {
		pm, _ := p.(map[string]any)
		name, _, _ := unstructured.NestedString(pm, "parentRef", "name")
		ns, _, _ := unstructured.NestedString(pm, "parentRef", "namespace")
		if name != gwName || (ns != "" && ns != gwNS) {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(pm, "conditions")
		state := map[string]string{}
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			typ, _, _ := unstructured.NestedString(cm, "type")
			status, _, _ := unstructured.NestedString(cm, "status")
			observed, _, _ := unstructured.NestedInt64(cm, "observedGeneration")
			if gen > 0 && observed > 0 && observed < gen {
				continue // about an earlier spec
			}
			state[typ] = status
			if (typ == "Accepted" || typ == "ResolvedRefs") && status == "False" {
				reason, _, _ := unstructured.NestedString(cm, "reason")
				msg, _, _ := unstructured.NestedString(cm, "message")
				return false, &RouteError{Gateway: gateway, Condition: typ, Reason: reason, Message: msg}
			}
		}
		return state["Accepted"] == "True" && state["ResolvedRefs"] == "True", nil
	}
	return false, nil
}

// served sends requests for u through the router at addr until one gets
// what probe wants, for at most routeServeTimeout. Over HTTPS it checks
// that the router shows a certificate for the host, not who signed it
// (tug's machine may not trust the issuer): the request carries nothing
// secret (neither key is: see RouteHeader).
//
// With the app's route token (token, "" for a host the Gateway does not
// route), the request carries ProbeHeader and only an answer with the
// app's AnswerKey counts as the app's (a refusal by its allow list, which
// answers before the route's filters, excepted): an old Ingress rule, an
// exported copy, or another namespace's route for the host (or a longer
// path of it) made without reading the app's HTTPRoute is not the app. A
// route author who can read the app's HTTPRoute (or record), or who
// catches a probe and asks the app's route with its key, can answer as
// the app: the check tells mistakes apart, not a hostile route.
func served(ctx context.Context, addr string, u *url.URL, probe Probe, token string) bool {
	ctx, cancel := context.WithTimeout(ctx, routeServeTimeout)
	defer cancel()
	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			},
			DisableKeepAlives: true,
			Proxy:             nil,
			TLSClientConfig:   &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: true}, //nolint:gosec // a reachability check, nothing secret sent
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if answered(ctx, client, u, probe, token) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

func answered(ctx context.Context, client *http.Client, u *url.URL, probe Probe, token string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", "tug (route check)")
	if token != "" {
		req.Header.Set(ProbeHeader, ProbeKey(token))
	}
	if release, byRelease := strings.CutPrefix(string(probe), probeRelease); byRelease {
		req.Header.Set(ReleaseHeader, release)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if probe == probeGone {
		return resp.StatusCode == http.StatusNotFound
	}
	return showsCertificate(resp, u.Hostname()) && fromTheRoute(resp.Header, probe, token) && statusAnswers(resp, probe)
}

// showsCertificate says whether, over HTTPS, the router showed a
// certificate for host (a new one takes a moment to load; until then it
// shows a default one). Plain HTTP shows none and needs none.
func showsCertificate(resp *http.Response, host string) bool {
	return resp.TLS == nil || len(resp.TLS.PeerCertificates) > 0 && resp.TLS.PeerCertificates[0].VerifyHostname(host) == nil
}

// fromTheRoute says whether the answer's headers show it came through the
// route the probe asks about: the split's marker, the release asked for,
// the app's own route key (token), or, for a route with no key, any
// route of tug's.
func fromTheRoute(h http.Header, probe Probe, token string) bool {
	if marker, ok := strings.CutPrefix(string(probe), probeSplit); ok && h.Get(SplitHeader) != marker {
		return false
	}
	if release, ok := strings.CutPrefix(string(probe), probeRelease); ok && h.Get(ReleaseHeader) != release {
		return false
	}
	if token != "" && probe != probeForbidden && h.Get(RouteHeader) != AnswerKey(token) {
		return false // not the app's route (or not yet)
	}
	if probe == probeRouted && token == "" && h.Get(RouteHeader) == "" {
		return false
	}
	return true
}

// statusAnswers says whether the answer's status is what the probe waits
// for: the maintenance page, a refusal, or the app itself rather than one
// of the router's own answers.
func statusAnswers(resp *http.Response, probe Probe) bool {
	switch probe {
	case ProbeMaintenance:
		return resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != ""
	case probeForbidden:
		return resp.StatusCode == http.StatusForbidden
	}
	// the router's own answers: no route for the host (404), no backend
	// (500, 502), no ready unit or still the maintenance page (503)
	switch resp.StatusCode {
	case http.StatusNotFound, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable:
		return false
	case http.StatusForbidden:
		return probe != probeAdmitted
	}
	return true
}

// throughGateway says whether the app's HTTPRoutes carry host (its own
// URL, or a domain that needs no Ingress of its own).
func throughGateway(a *app.App, host string) bool {
	if a.Route != nil && host == a.Route.Host {
		return true
	}
	for _, d := range a.Domains {
		if d.Host == host && ThroughIngress(d) {
			return false
		}
	}
	hosts, _ := routedHosts(a)
	for _, h := range hosts {
		if h == host {
			return true
		}
	}
	return false
}
