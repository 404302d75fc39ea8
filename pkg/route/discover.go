package route

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tug.dev/tug/pkg/kube"
)

// How an app finds its Gateway when the cluster settings name none: the
// one Gateway of the cluster that discovery trusts (see trusts) with a
// listener that admits HTTPRoutes from the app's namespace (Admitting). None, or several (tug will not guess
// between two admins' Gateways), leaves the app on Ingresses; so does a
// user who may not list Gateways in every namespace (the developer Role
// is namespaced): for them the look is skipped, never an error.

// SetGateway is how an admin names the Gateway when discovery cannot.
const SetGateway = "tug cluster settings set gateway=NAMESPACE/NAME"

// TrustClasses is how an admin lets discovery trust a GatewayClass.
const TrustClasses = "tug cluster settings set gatewayClasses=NAMESPACE/CLASS"

// A Gateway admits routes from a namespace by its own spec: whoever may
// create one (a tenant, in many clusters) could make one that admits All
// and become the route of every namespace that names none. So discovery
// trusts only what an admin would: a Gateway of a GatewayClass the
// cluster settings allow (gatewayClasses: NAMESPACE/CLASS for Gateways of
// CLASS standing in NAMESPACE, for every namespace they admit; a bare
// CLASS for a Gateway of CLASS in the app's own namespace, its own), whose
// controller Accepted and Programmed it.

// trusts says why Gateway u may not be the route of namespace's apps under
// the gatewayClasses setting trust ("" when it may).
func trusts(trust string, u *unstructured.Unstructured, namespace string) string {
	class, _, _ := unstructured.NestedString(u.Object, "spec", "gatewayClassName")
	allowed := false
	for _, e := range strings.Split(trust, ",") {
		e = strings.TrimSpace(e)
		ns, c, scoped := strings.Cut(e, "/")
		switch {
		case e == "":
		case scoped && c == class && ns == u.GetNamespace():
			allowed = true
		case !scoped && e == class && u.GetNamespace() == namespace:
			allowed = true
		}
	}
	if !allowed {
		return fmt.Sprintf("class %q in namespace %s is not one the cluster settings allow", class, u.GetNamespace())
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	state := map[string]string{}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ, _, _ := unstructured.NestedString(m, "type")
		st, _, _ := unstructured.NestedString(m, "status")
		state[typ] = st
	}
	if state["Accepted"] != "True" || state["Programmed"] != "True" {
		return "not Accepted and Programmed by its controller"
	}
	return ""
}

// Discovery is what the look for the namespace's Gateway found.
type Discovery struct {
	Namespace string
	// Gateway is NAMESPACE/NAME of the one Gateway that admits the
	// namespace's HTTPRoutes; "" when none or several do.
	Gateway string
	// Listeners are its listeners that admit them.
	Listeners []Listener
	// Candidates are every trusted Gateway that admits them, sorted.
	Candidates []string
	// Untrusted are the Gateways that admit them but discovery may not
	// trust (see trusts), each with why, sorted.
	Untrusted []string
	// untrustedWhy is why each of Untrusted is not trusted, by NAMESPACE/NAME.
	untrustedWhy map[string]string
	// Gateways counts the Gateways of the cluster.
	Gateways int
	// Forbidden: the user may not list Gateways in every namespace.
	Forbidden bool
	// NotServed: the cluster does not serve the Gateway API.
	NotServed bool
	// LabelsUnread: a listener selects namespaces by label and the user
	// may not read the namespace's, so only kubernetes.io/metadata.name
	// was matched.
	LabelsUnread bool
}

// Discover lists the cluster's Gateways and keeps those that admit
// HTTPRoutes from namespace. Only an error other than Forbidden or an API
// not served is returned.
func (c Client) Discover(ctx context.Context) (Discovery, error) {
	d := Discovery{Namespace: c.Namespace}
	if c.Dynamic == nil {
		d.NotServed = true
		return d, nil
	}
	list, err := c.Dynamic.Resource(Gateways).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
		d.Forbidden = true
		return d, nil
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		d.NotServed = true
		return d, nil
	case err != nil:
		return d, kube.TranslateError(err)
	}
	var nsLabels map[string]string
	admit := map[string][]Listener{}
	for i := range list.Items {
		u := &list.Items[i]
		if u.GetDeletionTimestamp() != nil {
			continue
		}
		d.Gateways++
		if nsLabels == nil && SelectsByLabel(u) {
			var ok bool
			nsLabels, ok = NamespaceLabels(ctx, c.Kube, c.Namespace)
			d.LabelsUnread = !ok
		}
		if ls, _ := Admitting(u, c.Namespace, nsLabels); len(ls) > 0 {
			ref := u.GetNamespace() + "/" + u.GetName()
			if why := trusts(c.Trust, u, c.Namespace); why != "" {
				d.Untrusted = append(d.Untrusted, ref+" ("+why+")")
				if d.untrustedWhy == nil {
					d.untrustedWhy = map[string]string{}
				}
				d.untrustedWhy[ref] = why
				continue
			}
			admit[ref] = ls
			d.Candidates = append(d.Candidates, ref)
		}
	}
	sort.Strings(d.Candidates)
	sort.Strings(d.Untrusted)
	if len(d.Candidates) == 1 {
		d.Gateway = d.Candidates[0]
		d.Listeners = admit[d.Gateway]
	}
	return d, nil
}

// UntrustedAdmits says why Gateway ref (NAMESPACE/NAME) is not trusted,
// and whether it is one that still stands and admits the namespace's
// routes without being trusted.
func (d Discovery) UntrustedAdmits(ref string) (why string, ok bool) {
	why, ok = d.untrustedWhy[ref]
	return why, ok
}

// AppHost is the app's own host through the found Gateway, and whether
// one of its HTTPS listeners serves it: under domain (the settings' apps
// domain) when an admitting listener covers that name, else under the
// domain of its one wildcard listener (*.DOMAIN), else "" (the app routes
// only its domains).
func (d Discovery) AppHost(appName, domain string) (host string, https bool) {
	if domain != "" {
		host = AppHost(appName, d.Namespace, domain)
		if !d.covers(host, "") {
			host = ""
		}
	}
	if host == "" {
		var wild []string
		for _, l := range d.Listeners {
			if w, ok := strings.CutPrefix(l.Hostname, "*."); ok && !slices.Contains(wild, w) {
				wild = append(wild, w)
			}
		}
		if len(wild) != 1 {
			return "", false
		}
		host = AppHost(appName, d.Namespace, wild[0])
	}
	return host, d.covers(host, "HTTPS")
}

// covers says whether an admitting listener of protocol proto ("" any)
// serves host.
func (d Discovery) covers(host, proto string) bool {
	for _, l := range d.Listeners {
		if (proto == "" || l.Protocol == proto) && hostMatches(l.Hostname, host) {
			return true
		}
	}
	return false
}

// Message says what the look found and what the app's routes do about it;
// loud when an admin should act (several Gateways), else a note for -v
// and doctor.
func (d Discovery) Message() (msg string, loud bool) {
	ns := "namespace " + d.Namespace
	switch {
	case d.Gateway != "":
		return fmt.Sprintf("the cluster settings name no Gateway; apps of %s route through Gateway %s, the one that admits their routes", ns, d.Gateway), false
	case len(d.Candidates) > 1:
		return fmt.Sprintf("the cluster settings name no Gateway and %d admit routes from %s (%s): tug will not pick one, so the app's domains route through an Ingress; an admin names one with '%s'",
			len(d.Candidates), ns, strings.Join(d.Candidates, ", "), SetGateway), true
	case d.Forbidden:
		return fmt.Sprintf("the cluster settings name no Gateway and you may not list Gateways in every namespace, so tug cannot look for one that admits routes from %s: domains route through an Ingress, unless the app found a Gateway before (it keeps it); an admin names one with '%s'", ns, SetGateway), false
	case d.NotServed:
		return "the cluster settings name no Gateway and the cluster does not serve the Gateway API: domains route through an Ingress", false
	}
	if len(d.Untrusted) > 0 {
		return fmt.Sprintf("the cluster settings name no Gateway and the only ones that admit routes from %s are not trusted (%s): domains route through an Ingress; an admin names one with '%s' or allows its class with '%s'",
			ns, strings.Join(d.Untrusted, ", "), SetGateway, TrustClasses), true
	}
	msg = fmt.Sprintf("the cluster settings name no Gateway and none of the cluster's %d Gateways admits routes from %s: domains route through an Ingress", d.Gateways, ns)
	if d.LabelsUnread {
		msg += " (you may not read the namespace's labels, so a listener that selects namespaces by label was matched on its name alone)"
	}
	return msg, false
}

// Finder remembers the look for one namespace's Gateway for the rest of a
// command: a change resolves the app's route more than once (its guard,
// its write, a restore), and each must find the same. The zero value is
// ready; safe for concurrent use.
type Finder struct {
	mu    sync.Mutex
	done  bool
	found Discovery
	err   error
	// claims are the claims looked up (claim), by host
	claims map[string]*Claim
}

// claim is who else routes host (claimedElsewhere for c's namespace; nil
// when no one does or when the user may not list the routes to tell),
// once per Finder and host (nil Finder: every time).
//
// Only a route or Ingress that names host itself counts: a catch-all
// wildcard (an admin's *.apps.example.com) is no claim on it.
func (f *Finder) claim(ctx context.Context, c Client, host string) (*Claim, error) {
	if f == nil {
		by, _, err := claimedElsewhere(ctx, c, c.Kube, c.Namespace, host, true)
		return by, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if by, ok := f.claims[host]; ok {
		return by, nil
	}
	by, _, err := claimedElsewhere(ctx, c, c.Kube, c.Namespace, host, true)
	if err == nil {
		if f.claims == nil {
			f.claims = map[string]*Claim{}
		}
		f.claims[host] = by
	}
	return by, err
}

// find is c.Discover, once per Finder (nil: every time).
func (f *Finder) find(ctx context.Context, c Client) (Discovery, error) {
	if f == nil {
		return c.Discover(ctx)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.done {
		f.found, f.err = c.Discover(ctx)
		// a failed look (a timeout) is not remembered: the next may answer
		f.done = f.err == nil
	}
	return f.found, f.err
}
