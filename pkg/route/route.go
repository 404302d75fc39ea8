// Package route holds how requests reach an app's web units: the
// HTTPRoutes its web process gets through the Gateway API (Render), the
// Ingresses of domains that do not go through a Gateway (RenderIngresses),
// the router's allow-list Middleware (allow.go), cert-manager Certificates
// (certificate.go), writing and removing them (Client, owned.go), the
// app's route as the cluster settings give it (Want), and what the router
// says and serves once they are applied (Confirm). pkg/render renders them
// with the rest of a release and pkg/deploy applies them in its order.
//
// When the cluster has a Gateway for the app (a.Route, resolved from the
// cluster settings), its web process gets one HTTPRoute per set of paths:
// the app's URL host and its domains, to the web Service. The Gateway is
// the admin's: tug only attaches to it, never changes it. HTTPRoutes are
// written with the dynamic client (unstructured): a typed Gateway API
// client would cost megabytes of binary for five fields.
package route

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
)

// HTTPRoutes is the Gateway API's HTTPRoute resource.
var HTTPRoutes = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}

// Name is the HTTPRoute of an app whose hosts all route every path.
func Name(appName string) string { return appName }

// Client writes and reads an app's routes in one namespace. A nil Dynamic
// is a cluster reached without the Gateway API: it has no routes.
type Client struct {
	Dynamic   dynamic.Interface
	Namespace string
	// Kube reads the namespace's labels for a Gateway listener that
	// selects namespaces by label (discover.go); nil matches on the
	// namespace's name alone.
	Kube kubernetes.Interface
	// Finder remembers the look for the namespace's Gateway for the
	// command; nil looks at each Want.
	Finder *Finder
	// Trust is the cluster settings' gatewayClasses: the Gateways
	// discovery may trust (discover.go). Want sets it from the settings.
	Trust string
	// Warn tells what an admin should act on (several Gateways admit the
	// namespace's routes); Note, what only -v shows (how the Gateway was
	// found, or why none was). nil says nothing.
	Warn, Note func(msg string)
}

// routedHosts are the hosts the app's HTTPRoutes carry, and the paths of
// each: its URL host, and every domain that goes through the Gateway (see
// ThroughIngress for those that do not).
func routedHosts(a *app.App) (hosts []string, paths map[string][]string) {
	paths = map[string][]string{}
	add := func(host, path string) {
		if path == "" {
			path = "/"
		}
		if _, ok := paths[host]; !ok {
			hosts = append(hosts, host)
		}
		for _, p := range paths[host] {
			if p == path {
				return
			}
		}
		paths[host] = append(paths[host], path)
	}
	if a.Route.Host != "" {
		add(a.Route.Host, "/")
	}
	for _, d := range a.Domains {
		if !ThroughIngress(d) {
			add(d.Host, d.Path)
		}
	}
	return hosts, paths
}

// ThroughIngress says whether a domain of an app routed through a Gateway
// is the Ingress's instead: one with a certificate of its own (a Gateway
// takes no listener, and so no certificate, from an app: its admin owns
// it, and Traefik 3.6 serves no ListenerSet), or one that names an
// IngressClass (domain add --ingress-class asks for that controller).
func ThroughIngress(d app.Domain) bool { return d.TLSSecret != "" || d.IngressClass != "" }

// Render is the app's HTTPRoutes, none when it routes through no
// Gateway: to backend (the web Service, port 80), with labels. Every host whose only path is / (the app's URL, most domains)
// is in one route named after the app; an HTTPRoute's rules apply to all
// its hostnames, so hosts with other paths get a route per set of paths
// (APP-HASH), and a path of one domain never routes on another.
func Render(a *app.App, backend string, labels map[string]string) []*unstructured.Unstructured {
	return RenderSplit(a, []Backend{{Name: backend}}, labels)
}

// Backend is a Service a route sends requests to, with its share of them
// (Weight, 0-100) when the route splits them (a canary); a route with one
// backend gives it every request whatever its weight.
type Backend struct {
	Name   string
	Weight int
	// Label names the backend in SplitHeader ("v3").
	Label string
}

// SplitHeader is the response header the probe rule of a split route adds:
// its shares ("v3=75% v4=25%"), so the probe sees which split the router
// runs (Confirm waits for it: a router may take a moment to load what it
// already accepted). Only the probe's requests get it (ProbeHeader).
const SplitHeader = "Tug-Split"

// RouteHeader is the response header the probe rule of the app's
// HTTPRoutes adds: AnswerKey of the app's route token. Confirm waits for
// it. An answer with it came through a route that carries the app's keys:
// not through an Ingress the router still serves the host by (a host
// moving between the two when its certificate comes or goes), nor through
// a copy of the app's route made by export (it has no token), nor through
// a route someone made without reading the app's HTTPRoute. It is no
// secret, and proves nothing against a hostile route author: both keys
// stand in plain text in the app's HTTPRoute (anyone who may read
// HTTPRoutes in the namespace can copy them), the token itself in the
// app's record (a ConfigMap: anyone who may read ConfigMaps in the
// namespace), and the twin rule answers AnswerKey to anyone who sends
// ProbeKey, which a probe over plain HTTP shows to the path and to a route
// that catches it.
const RouteHeader = "Tug-Route"

// ProbeHeader is the request header tug's probe sends (ProbeKey of the
// app's route token). Every rule of the app's HTTPRoutes has a twin that
// matches it, and only that twin adds RouteHeader and SplitHeader: a
// client that does not send it gets no header of tug's.
const ProbeHeader = "Tug-Probe"

// ProbeKey is ProbeHeader's value for route token token; AnswerKey is
// RouteHeader's. They are derived apart so that a route that only sees a
// probe does not hold the answer in the same request; but anyone who holds
// ProbeKey can ask the app's route for AnswerKey, and both stand in the
// app's HTTPRoute (see RouteHeader for what they prove).
func ProbeKey(token string) string { return tokenKey("probe", token) }

// AnswerKey: see ProbeKey.
func AnswerKey(token string) string { return tokenKey("answer", token) }

func tokenKey(use, token string) string {
	sum := sha256.Sum256([]byte("tug-route/" + use + "/" + token))
	return fmt.Sprintf("%x", sum[:16])
}

// NewToken is a new random route token (app.Route.Token): a mark, not a
// secret (see RouteHeader).
func NewToken() string { return rand.Text() }

// SplitMarker is SplitHeader's value for backends.
func SplitMarker(backends []Backend) string {
	parts := make([]string, len(backends))
	for i, b := range backends {
		parts[i] = fmt.Sprintf("%s=%d%%", b.Label, b.Weight)
	}
	return strings.Join(parts, " ")
}

// RenderSplit is Render with requests split between backends by their
// weights: the router sends each the exact share (weighted backendRefs).
// Labelled backends make every answer carry SplitHeader.
func RenderSplit(a *app.App, backends []Backend, labels map[string]string) []*unstructured.Unstructured {
	if a.Route == nil || a.Route.Gateway == "" {
		return nil
	}
	gwNS, gwName, _ := strings.Cut(a.Route.Gateway, "/")
	sets, groups := hostsByPaths(a)
	var routes []*unstructured.Unstructured
	for _, set := range sets {
		name := Name(a.Name)
		if set != "/" {
			sum := sha256.Sum256([]byte(set))
			name = fmt.Sprintf("%s-%x", a.Name, sum[:4])
		}
		var rules, hostnames []any
		ps := strings.Split(set, " ")
		perRelease := a.Route.Token != "" && len(backends) > 1 && backends[0].Label != "" && len(ps)*(2+len(backends)) <= maxRules
		for i, p := range ps {
			rules = append(rules, rule(a, p, backends, false))
			// an HTTPRoute takes at most maxRules rules: paths past
			// what leaves room get no twin (their probe ends accepted)
			if a.Route.Token != "" && len(ps)+i < maxRules {
				rules = append(rules, rule(a, p, backends, true))
			}
			if perRelease {
				for _, b := range backends {
					rules = append(rules, releaseRule(a, p, b))
				}
			}
		}
		for _, h := range groups[set] {
			hostnames = append(hostnames, h)
		}
		routes = append(routes, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": HTTPRoutes.GroupVersion().String(),
			"kind":       "HTTPRoute",
			"metadata": map[string]any{
				"name":      name,
				"namespace": a.Namespace,
				"labels":    toAny(labels),
			},
			"spec": map[string]any{
				"parentRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": gwNS, "name": gwName}},
				"hostnames":  hostnames,
				"rules":      rules,
			},
		}})
	}
	return routes
}

// hostsByPaths groups the app's routed hosts by the set of paths each
// routes (the sorted paths joined by spaces): one HTTPRoute per set, since
// a route's rules apply to all its hostnames. sets is sorted, so the
// routes render in a stable order.
func hostsByPaths(a *app.App) (sets []string, groups map[string][]string) {
	hosts, paths := routedHosts(a)
	groups = map[string][]string{}
	for _, h := range hosts {
		ps := append([]string(nil), paths[h]...)
		sort.Strings(ps)
		k := strings.Join(ps, " ")
		if _, ok := groups[k]; !ok {
			sets = append(sets, k)
		}
		groups[k] = append(groups[k], h)
	}
	sort.Strings(sets)
	return sets, groups
}

// rule is the rule of path p, or its probe twin: the same path and
// backends when the request carries ProbeHeader, answering with
// RouteHeader (and SplitHeader when the backends are labelled) and passing
// the backend no ProbeHeader.
func rule(a *app.App, p string, backends []Backend, probe bool) map[string]any {
	match := map[string]any{"path": map[string]any{"type": "PathPrefix", "value": p}}
	r := map[string]any{"matches": []any{match}, "backendRefs": backendRefs(backends)}
	filters := allowFilters(a) // the router enforces the allow list (allow.go)
	if probe {
		match["headers"] = []any{map[string]any{"type": "Exact", "name": ProbeHeader, "value": ProbeKey(a.Route.Token)}}
		set := []any{map[string]any{"name": RouteHeader, "value": AnswerKey(a.Route.Token)}}
		if backends[0].Label != "" {
			set = append(set, map[string]any{"name": SplitHeader, "value": SplitMarker(backends)})
		}
		filters = append(filters,
			map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{"remove": []any{ProbeHeader}}},
			map[string]any{"type": "ResponseHeaderModifier", "responseHeaderModifier": map[string]any{"set": set}})
	}
	if filters != nil {
		r["filters"] = filters
	}
	return r
}

// ReleaseHeader is the request header with which tug's probe asks, on a
// split route, for one release's units (a Backend's Label), and the
// response header that says it was theirs: a rule per backend matches
// ProbeHeader and it, and sends to that backend alone. The router tells
// which release answered only this way: Traefik 3.6 accepts filters on a
// backendRef (an extended feature) but does not apply them.
const ReleaseHeader = "Tug-Release"

// releaseRule is the rule of path p that answers tug's probe for backend
// b alone.
func releaseRule(a *app.App, p string, b Backend) map[string]any {
	r := rule(a, p, []Backend{b}, true)
	match := r["matches"].([]any)[0].(map[string]any)
	match["headers"] = append(match["headers"].([]any), map[string]any{"type": "Exact", "name": ReleaseHeader, "value": b.Label})
	filters := r["filters"].([]any)
	last := filters[len(filters)-1].(map[string]any)["responseHeaderModifier"].(map[string]any)
	last["set"] = []any{map[string]any{"name": RouteHeader, "value": AnswerKey(a.Route.Token)}, map[string]any{"name": ReleaseHeader, "value": b.Label}}
	req := filters[len(filters)-2].(map[string]any)["requestHeaderModifier"].(map[string]any)
	req["remove"] = []any{ProbeHeader, ReleaseHeader}
	return r
}

// maxRules is the most rules the Gateway API lets an HTTPRoute have.
const maxRules = 16

func backendRefs(backends []Backend) []any {
	refs := make([]any, 0, len(backends))
	for _, b := range backends {
		ref := map[string]any{"name": b.Name, "port": int64(80)}
		if len(backends) > 1 {
			ref["weight"] = int64(b.Weight)
		}
		refs = append(refs, ref)
	}
	return refs
}

// Gateways is the Gateway API's Gateway resource.
var Gateways = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}

// AppHost is an app's own host under the cluster's apps domain: one DNS
// label under it, so one wildcard certificate and listener (*.DOMAIN)
// cover every app (a wildcard covers one label only), and no two apps
// ever share a host. APP-NAMESPACE where neither name has a '-' (the
// label then has exactly one); otherwise the two could be read another
// way (app shop in team-prod, app shop-team in prod), so the label is
// APP-NAMESPACE cut to fit, then '-' and 8 hex digits of a hash of the
// pair: a label with at least two '-', which the first form never has,
// and which another pair matches only by cutting at another '-' of the
// same text and hitting the same hash. A label with "--" at its third and
// fourth characters is a reserved form (xn--, an IDN): those two become
// "-x" (the hash still tells the pair).
func AppHost(appName, namespace, domain string) string {
	label := appName + "-" + namespace
	if strings.Contains(appName, "-") || strings.Contains(namespace, "-") || len(label) > 63 {
		sum := sha256.Sum256([]byte(appName + "/" + namespace))
		keep := 63 - 1 - 8
		if len(label) > keep {
			label = strings.TrimRight(label[:keep], "-")
		}
		label = fmt.Sprintf("%s-%x", label, sum[:4])
	}
	if len(label) > 3 && label[2:4] == "--" {
		label = label[:2] + "-x" + label[4:]
	}
	return label + "." + domain
}

// gatewayView is what a command reads of the app's Gateway, when the user
// may: where it listens, and which hosts its listeners serve over TLS.
type gatewayView struct {
	address   string // its first status address ("" when none)
	httpPort  int64
	httpsPort int64
	tlsHosts  []string // listener hostnames of HTTPS listeners ("" for any)
}

// readGateway reads Gateway NAMESPACE/NAME; nil when it cannot be read (a
// developer often may not read the Gateway of another namespace): tug then
// routes without knowing its address or listeners.
func (c Client) readGateway(ctx context.Context, ref string) *gatewayView {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || c.Dynamic == nil {
		return nil
	}
	u, err := c.Dynamic.Resource(Gateways).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	v := &gatewayView{}
	listeners, _, _ := unstructured.NestedSlice(u.Object, "spec", "listeners")
	for _, l := range listeners {
		m, _ := l.(map[string]any)
		proto, _, _ := unstructured.NestedString(m, "protocol")
		port, _, _ := unstructured.NestedInt64(m, "port")
		host, _, _ := unstructured.NestedString(m, "hostname")
		switch proto {
		case "HTTP":
			if v.httpPort == 0 {
				v.httpPort = port
			}
		case "HTTPS":
			if v.httpsPort == 0 {
				v.httpsPort = port
			}
			v.tlsHosts = append(v.tlsHosts, host)
		}
	}
	addrs, _, _ := unstructured.NestedSlice(u.Object, "status", "addresses")
	for _, a := range addrs {
		m, _ := a.(map[string]any)
		if s, _, _ := unstructured.NestedString(m, "value"); s != "" {
			v.address = s
			break
		}
	}
	return v
}

// servesTLS says whether one of the Gateway's HTTPS listeners covers host.
func (v *gatewayView) servesTLS(host string) bool {
	if v == nil {
		return false
	}
	for _, h := range v.tlsHosts {
		if hostMatches(h, host) {
			return true
		}
	}
	return false
}

// hostMatches applies a listener hostname ("" for any, "*.d" for one label
// under d) to host.
func hostMatches(listener, host string) bool {
	switch {
	case listener == "":
		return true
	case strings.HasPrefix(listener, "*."):
		rest, ok := strings.CutPrefix(host, strings.SplitN(host, ".", 2)[0])
		return ok && rest == listener[1:]
	}
	return listener == host
}

// Want is the app's route as the cluster settings give it now for its
// pool: the Gateway to attach to (the settings', else the one found for
// the namespace: discover.go), the app's own host and whether the Gateway
// serves it over TLS, the class of the Ingress that serves domains with a
// certificate, the router behind them. nil when there is no Gateway and
// the settings name no ingress class or router. Without settings (nil: a
// library caller that read none) the record's route stays as it is.
func (c Client) Want(ctx context.Context, settings *clustersettings.Stored, a *app.App, pool string) *app.Route {
	if settings == nil {
		return a.Route
	}
	s := settings.For(pool)
	gw, domain, class, router := s.Get(clustersettings.Gateway), s.Get(clustersettings.AppsDomain), s.Get(clustersettings.IngressClass), s.Get(clustersettings.Router)
	r := &app.Route{Gateway: gw, IngressClass: class, Router: router}
	switch {
	case gw != "" && domain != "":
		r.Host = AppHost(a.Name, a.Namespace, domain)
		r.HTTPS = c.readGateway(ctx, gw).servesTLS(r.Host)
	case gw == "" && !settings.Unreadable:
		// settings that could not be read may name a Gateway: no guess
		c.Trust = s.Get(clustersettings.GatewayClasses)
		c.wantFound(ctx, a, domain, r)
	}
	if r.Gateway == "" && class == "" && router == "" {
		return nil
	}
	if r.Gateway != "" {
		r.Token = keepToken(a)
		c.keepOldHost(ctx, a, r)
	}
	return r
}

// OldAppHost is the app's own host as tug named it before AppHost hashed
// names with a '-': APP-NAMESPACE.DOMAIN always.
func OldAppHost(appName, namespace, domain string) string {
	return appName + "-" + namespace + "." + domain
}

// keepOldHost keeps the host the app's record already has when it is the
// app's old-style name (OldAppHost) under the same domain as the one
// AppHost gives it now: an app made before hashed names keeps its URL
// (bookmarks, DNS, links) and no other namespace can take the old name
// once it drops. Only routes made from now on get the new name. The old
// host moves to the new one, with a warning, when another namespace's
// route or Ingress names it (two apps shared it under the old naming: the
// first of them to change moves).
func (c Client) keepOldHost(ctx context.Context, a *app.App, r *app.Route) {
	if a.Route == nil || a.Route.Host == "" || r.Host == "" || a.Route.Host == r.Host {
		return
	}
	old := strings.ToLower(a.Route.Host)
	_, domain, ok := strings.Cut(r.Host, ".")
	if !ok || old != OldAppHost(a.Name, a.Namespace, domain) {
		return
	}
	if a.Route.OldHost {
		// decided before: once this app's route names the old host no
		// other namespace can claim it, so no look on every deploy
		r.Host, r.OldHost = old, true
		return
	}
	by, err := c.Finder.claim(ctx, c, old)
	switch {
	case err != nil:
		say(c.Warn, fmt.Sprintf("cannot tell whether another namespace routes %s (%v): app %s keeps it", old, err, a.Name))
	case by != nil:
		say(c.Warn, fmt.Sprintf("app %s's URL moves from %s to %s: %s also routes the old name (two apps had it under the old naming)", a.Name, old, r.Host, by))
		return
	default:
		r.OldHost = true
	}
	r.Host = old
}

// keepToken is the app's route token, a new one when it has none yet.
func keepToken(a *app.App) string {
	if a.Route != nil && a.Route.Token != "" {
		return a.Route.Token
	}
	return NewToken()
}

// wantFound routes r through the Gateway found for the namespace, if one
// is. A look that could not be made (Forbidden, an error) keeps the
// Gateway the app found before: a deploy by a user who may not list
// Gateways must not move the app off the route that a deploy by one who
// may found, nor must a passing error.
//
// A look that found no single Gateway keeps the app's found one too when
// it is still among those that admit the namespace (a second Gateway added
// later does not move the apps already routed), and when namespace labels
// could not be read (a user who may not read them cannot tell whether a
// selector still admits the app). A found Gateway that still admits the
// namespace but that discovery does not trust (not of a class in
// gatewayClasses: every Gateway, on a cluster upgraded from before the
// setting) is kept too, with a warning that says how to allow it: only an
// app that finds a Gateway for the first time needs a trusted one.
func (c Client) wantFound(ctx context.Context, a *app.App, domain string, r *app.Route) {
	d, err := c.Finder.find(ctx, c)
	found := a.Route != nil && a.Route.Discovered
	if err != nil || d.Forbidden {
		keepFound(a, r)
		c.sayLookFailed(a, r, d, err)
		return
	}
	if found && c.Trust == "" {
		// a Gateway the app routes through already stays its route while
		// it stands and admits the namespace, while the cluster trusts no
		// class: a cluster upgraded from before gatewayClasses trusts
		// none, and its apps must not go dark at their next deploy; only
		// an app finding a Gateway for the first time needs a trusted
		// one. Once an admin sets gatewayClasses, what it leaves out is
		// left: an admin can take trust away
		if why, ok := d.UntrustedAdmits(a.Route.Gateway); ok {
			keepFound(a, r)
			say(c.Warn, fmt.Sprintf("app %s keeps Gateway %s, which it routed through before, although discovery does not trust it (%s); an admin allows it with '%s' (or names one with '%s'); an app that finds a Gateway for the first time gets only a trusted one",
				a.Name, r.Gateway, why, TrustClasses, SetGateway))
			return
		}
	}
	if d.Gateway == "" && found && (d.LabelsUnread || slices.Contains(d.Candidates, a.Route.Gateway)) {
		keepFound(a, r)
		say(c.Note, fmt.Sprintf("app %s keeps Gateway %s, found before (%d Gateways admit namespace %s now; labels unread: %v)",
			a.Name, r.Gateway, len(d.Candidates), c.Namespace, d.LabelsUnread))
		return
	}
	if d.Gateway != "" {
		r.Gateway, r.Discovered = d.Gateway, true
		r.Host, r.HTTPS = d.AppHost(a.Name, domain)
	}
	if msg, loud := d.Message(); loud {
		say(c.Warn, msg)
	} else {
		say(c.Note, msg)
	}
}

// keepFound copies into r the Gateway the app found before, if it found
// one (a Gateway named by hand is not the look's to keep).
func keepFound(a *app.App, r *app.Route) {
	if a.Route != nil && a.Route.Discovered {
		r.Gateway, r.Host, r.HTTPS, r.Discovered = a.Route.Gateway, a.Route.Host, a.Route.HTTPS, true
	}
}

// sayLookFailed says what a look for the Gateway that failed (err) or was
// forbidden (d.Forbidden) leaves the app with: the Gateway kept in r, or
// none, where domains route through an Ingress.
func (c Client) sayLookFailed(a *app.App, r *app.Route, d Discovery, err error) {
	switch {
	case err != nil && r.Gateway != "":
		say(c.Warn, fmt.Sprintf("cannot look for the Gateway of namespace %s (%v): app %s keeps Gateway %s, found before", c.Namespace, err, a.Name, r.Gateway))
	case err != nil:
		say(c.Warn, fmt.Sprintf("cannot look for the Gateway of namespace %s (%v): domains route through an Ingress", c.Namespace, err))
	case r.Gateway != "":
		say(c.Note, fmt.Sprintf("you may not list Gateways in every namespace: app %s keeps Gateway %s, found before", a.Name, r.Gateway))
	default:
		msg, _ := d.Message()
		say(c.Note, msg)
	}
}

func say(to func(string), msg string) {
	if to != nil {
		to(msg)
	}
}
