package doctor

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/clustersettings"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/route"
)

// The gateway check: whether the Gateway that the cluster settings give
// the namespace's apps (the cluster's, and each of their pools') can route
// them. A route that tug writes to a Gateway that is missing, that no
// controller programmed, or that admits no route from the namespace is
// never served; doctor says so before a deploy or 'domain add' finds out.

// DynamicEnv is an Env that also hands out a dynamic client (the Gateway
// API has no typed client in tug); without it doctor makes one from the
// Env's RESTConfig when it needs one.
type DynamicEnv interface {
	DynamicClient() (dynamic.Interface, error)
}

const gatewayCheckName = "gateway"

const gatewayGroup = "gateway.networking.k8s.io"

// routeVerbs are what tug does to an app's HTTPRoute in its namespace:
// server-side apply (create, patch) and removal.
var routeVerbs = []string{"create", "patch", "delete"}

// gatewayTarget is one Gateway setting and the scopes it applies to ("the
// cluster", "pool gpu").
type gatewayTarget struct {
	ref    string
	domain string // the apps domain of the first scope
	scopes []string
	pools  []string // the pools among scopes, for the set command to suggest
	trust  string   // the gatewayClasses setting: which Gateways discovery trusts
	// found: the settings name none and ref is the Gateway tug found
	// for the namespace (route.Discover)
	found bool
}

// gatewayChecks reads the settings that apply to the namespace's apps and
// checks each Gateway they name. missing are the permissions the review
// found missing (for the HTTPRoute verbs).
func gatewayChecks(ctx context.Context, client kubernetes.Interface, dyn func() (dynamic.Interface, error), namespace string, missing []Permission) []Check {
	settings, err := clustersettings.Read(ctx, client)
	if err != nil {
		return []Check{{Name: gatewayCheckName, Status: StatusWarning,
			Message: "cannot read the cluster settings, which name the Gateway app routes attach to: " + err.Error()}}
	}
	if settings.Unreadable {
		return []Check{{Name: gatewayCheckName, Status: StatusWarning,
			Message: fmt.Sprintf("you may not read the cluster settings (ConfigMap %s/%s), so doctor cannot tell which Gateway routes your apps; ask the cluster's admin", clustersettings.Namespace, clustersettings.Name)}}
	}
	targets := gatewayTargets(settings, namespacePools(ctx, client, namespace))
	checks := make([]Check, 0, len(targets))
	for _, t := range targets {
		checks = append(checks, checkGateway(ctx, client, dyn, namespace, t, missing))
	}
	return checks
}

// namespacePools are the pools of the namespace's apps; none when there
// are none or they cannot be listed (the app group's review says why).
func namespacePools(ctx context.Context, client kubernetes.Interface, namespace string) []string {
	apps, err := (&app.Store{Client: client, Namespace: namespace}).ListApps(ctx)
	if err != nil {
		return nil
	}
	var pools []string
	for _, a := range apps {
		if a.Pool != "" && !slices.Contains(pools, a.Pool) {
			pools = append(pools, a.Pool)
		}
	}
	sort.Strings(pools)
	return pools
}

// gatewayTargets groups the cluster's setting and each pool's by the
// Gateway they name: the cluster's first (an app made without a pool gets
// it), then the pools' in name order.
func gatewayTargets(s *clustersettings.Stored, pools []string) []gatewayTarget {
	var out []gatewayTarget
	add := func(scope, pool string, set clustersettings.Settings) {
		ref := set.Get(clustersettings.Gateway)
		for i := range out {
			if out[i].ref == ref {
				out[i].scopes = append(out[i].scopes, scope)
				if pool != "" {
					out[i].pools = append(out[i].pools, pool)
				}
				return
			}
		}
		t := gatewayTarget{ref: ref, domain: set.Get(clustersettings.AppsDomain), trust: set.Get(clustersettings.GatewayClasses), scopes: []string{scope}}
		if pool != "" {
			t.pools = []string{pool}
		}
		out = append(out, t)
	}
	add("the cluster", "", s.For(""))
	for _, p := range pools {
		add("pool "+p, p, s.For(p))
	}
	return out
}

// forScopes is "" for the cluster alone, else " (for pool gpu)", " (for
// the cluster, pool gpu)".
func (t gatewayTarget) forScopes() string {
	if len(t.scopes) == 1 && t.scopes[0] == "the cluster" {
		return ""
	}
	return " (for " + strings.Join(t.scopes, ", ") + ")"
}

// setCommand is how an admin points the setting elsewhere.
func (t gatewayTarget) setCommand() string {
	if len(t.pools) > 0 && !slices.Contains(t.scopes, "the cluster") {
		return "tug cluster settings set --pool " + t.pools[0] + " gateway=NAMESPACE/NAME"
	}
	return "tug cluster settings set gateway=NAMESPACE/NAME"
}

func checkGateway(ctx context.Context, client kubernetes.Interface, dyn func() (dynamic.Interface, error), namespace string, t gatewayTarget, missing []Permission) Check {
	c := Check{Name: gatewayCheckName, Status: StatusFailed}
	if t.ref == "" {
		ref, found := checkFound(ctx, dyn, client, namespace, t)
		if ref == "" {
			return found
		}
		// the app's URL through a found Gateway is under whatever domain
		// its listeners cover (route.Discovery.AppHost), not a domain of
		// the settings that must be covered
		t.ref, t.found, t.domain = ref, true, ""
	}
	gwNS, gwName, ok := strings.Cut(t.ref, "/")
	if !ok || gwNS == "" || gwName == "" {
		c.Message = fmt.Sprintf("the cluster settings' gateway%s is %q, not NAMESPACE/NAME: no app route can attach to it; an admin fixes it with '%s'", t.forScopes(), t.ref, t.setCommand())
		return c
	}
	gw := "Gateway " + t.ref + t.forScopes()
	if t.found {
		gw = fmt.Sprintf("Gateway %s (the cluster settings name none%s; it is the one Gateway that admits routes from namespace %s)", t.ref, t.forScopes(), namespace)
	}

	// The Gateway API must be served for tug to write HTTPRoutes at all.
	if served, err := gatewayAPIServed(client); err != nil {
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("cannot tell whether this cluster serves the Gateway API, which %s needs: %s", gw, kube.TranslateError(err))
		return c
	} else if !served {
		c.Message = fmt.Sprintf("the cluster settings route apps through %s, but this cluster does not serve the Gateway API (%s/v1 gateways and httproutes): every deploy of a web app would fail to write its route; install the Gateway API's CRDs and a controller, or unset the setting ('tug cluster settings unset gateway')", gw, gatewayGroup)
		return c
	}

	if perms := missingRouteVerbs(missing); len(perms) > 0 {
		c.Message = fmt.Sprintf("apps here route through %s, but you may not %s httproutes.%s in namespace %s: a deploy or 'tug domain add' would fail to write the app's route; ask an admin to bind docs/rbac/tug-developer-role.yaml", gw, strings.Join(perms, ", "), gatewayGroup, namespace)
		return c
	}

	d, err := dyn()
	if err != nil {
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("cannot check %s: %s", gw, kube.TranslateError(err))
		return c
	}
	u, err := d.Resource(route.Gateways).Namespace(gwNS).Get(ctx, gwName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.Message = fmt.Sprintf("%s, which the cluster settings name, does not exist: app routes attach to it and are never served; create it, or an admin points the setting at one that does: '%s' ('kubectl get gateways -A' lists them)", gw, t.setCommand())
		return c
	case apierrors.IsForbidden(err):
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("you may not read %s (get gateways in namespace %s), so doctor cannot check it; app routes attach to it all the same, and deploy and 'tug domain add' report what the router says", gw, gwNS)
		return c
	case err != nil:
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("cannot read %s: %s", gw, kube.TranslateError(err))
		return c
	}

	return checkGatewayAdmits(ctx, client, namespace, t, u, gw)
}

// checkFound is the check where the settings name no Gateway: the one
// Gateway that admits the namespace's routes is what tug routes them
// through (route.Discover): its ref, for the usual check, or "" and the
// check when there is none to check.
func checkFound(ctx context.Context, dyn func() (dynamic.Interface, error), client kubernetes.Interface, namespace string, t gatewayTarget) (ref string, c Check) {
	c = Check{Name: gatewayCheckName, Status: StatusOK}
	none := "the cluster settings name no Gateway" + t.forScopes()
	var found route.Discovery
	served, err := gatewayAPIServed(client)
	if err == nil && served {
		var d dynamic.Interface
		if d, err = dyn(); err == nil {
			found, err = route.Client{Dynamic: d, Namespace: namespace, Kube: client, Trust: t.trust}.Discover(ctx)
		}
	}
	switch {
	case err != nil:
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("%s, and doctor cannot look for one that admits routes from namespace %s: %s", none, namespace, kube.TranslateError(err))
	case found.Gateway != "":
		return found.Gateway, c
	case len(found.Candidates) > 1:
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("%s and %d Gateways admit routes from namespace %s (%s): tug will not pick one, so domains route through an Ingress and apps get no URL of their own; an admin names one with '%s'",
			none, len(found.Candidates), namespace, strings.Join(found.Candidates, ", "), t.setCommand())
	case len(found.Untrusted) > 0:
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("%s and the Gateways that admit routes from namespace %s are not ones tug trusts (%s): domains route through an Ingress, and apps get no URL of their own; an admin names one with '%s' or allows its class with '%s'",
			none, namespace, strings.Join(found.Untrusted, ", "), t.setCommand(), route.TrustClasses)
	case found.Forbidden:
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("%s, and you may not list Gateways in every namespace, so tug cannot look for one that admits routes from namespace %s: domains route through an Ingress (an app that found a Gateway in an earlier deploy keeps it); an admin names one with '%s'", none, namespace, t.setCommand())
	case !served || found.NotServed:
		c.Message = fmt.Sprintf("%s and the cluster does not serve the Gateway API: domains route through an Ingress, and apps get no URL of their own; an admin routes them through a Gateway with '%s'", none, t.setCommand())
	default:
		c.Message = fmt.Sprintf("%s and no Gateway admits routes from namespace %s: domains route through an Ingress, and apps get no URL of their own; an admin routes them through one with '%s'", none, namespace, t.setCommand())
		if found.LabelsUnread {
			c.Message += " (you may not read the namespace's labels: a listener that selects namespaces by label was matched on its name alone)"
		}
	}
	return "", c
}

// checkGatewayAdmits checks that Gateway u, read, is ready and admits the
// namespace's routes for names under the apps domain.
func checkGatewayAdmits(ctx context.Context, client kubernetes.Interface, namespace string, t gatewayTarget, u *unstructured.Unstructured, gw string) Check {
	c := Check{Name: gatewayCheckName, Status: StatusFailed}
	if msg, status := gatewayReady(u, gw); msg != "" {
		c.Status, c.Message = status, msg
		return c
	}
	nsLabels, err := namespaceLabels(ctx, client, namespace, u)
	if err != nil {
		c.Status = StatusWarning
		c.Message = fmt.Sprintf("%s is programmed, but doctor cannot tell whether it admits routes from namespace %s: reading the namespace's labels (its listeners select namespaces by label): %s", gw, namespace, kube.TranslateError(err))
		return c
	}
	admitting, all := route.Admitting(u, namespace, nsLabels)
	if len(admitting) == 0 {
		c.Message = fmt.Sprintf("%s admits no HTTPRoute from namespace %s (its listeners' allowedRoutes: %s): app routes here are refused with NotAllowedByListeners; its admin allows them (allowedRoutes.namespaces.from: All, or a Selector that matches %s)", gw, namespace, strings.Join(all, "; "), namespace)
		return c
	}
	names := make([]string, len(admitting))
	for i, l := range admitting {
		names[i] = l.Name
	}
	c.Status = StatusOK
	c.Message = fmt.Sprintf("%s is accepted and programmed and admits HTTPRoutes from namespace %s (listeners %s)", gw, namespace, strings.Join(names, ", "))
	if t.domain != "" {
		host := route.AppHost("app", namespace, t.domain)
		if !slices.ContainsFunc(admitting, func(l route.Listener) bool { return hostnameCovers(l.Hostname, host) }) {
			c.Status = StatusFailed
			c.Message = fmt.Sprintf("%s admits HTTPRoutes from namespace %s, but none of those listeners (%s) serves names under the apps domain %s: app URLs such as %s would be refused; its admin adds a listener for *.%s, or the apps domain is changed ('tug cluster settings set appsDomain=DOMAIN')", gw, namespace, strings.Join(names, ", "), t.domain, host, t.domain)
			return c
		}
		c.Message += ", app URLs under " + t.domain
	}
	return c
}

// gatewayAPIServed says whether the API server serves gateways and
// httproutes in gateway.networking.k8s.io/v1.
func gatewayAPIServed(client kubernetes.Interface) (bool, error) {
	list, err := client.Discovery().ServerResourcesForGroupVersion(gatewayGroup + "/v1")
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	found := map[string]bool{}
	for _, r := range list.APIResources {
		found[r.Name] = true
	}
	return found[route.Gateways.Resource] && found[route.HTTPRoutes.Resource], nil
}

// missingRouteVerbs are the verbs of routeVerbs on httproutes in the
// namespace that the review found missing.
func missingRouteVerbs(missing []Permission) []string {
	var out []string
	for _, p := range missing {
		if p.Group == gatewayGroup && p.Resource == route.HTTPRoutes.Resource && p.Subresource == "" && p.Scope == ScopeNamespace &&
			slices.Contains(routeVerbs, p.Verb) && !slices.Contains(out, p.Verb) {
			out = append(out, p.Verb)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return verbOrder[a] - verbOrder[b] })
	return out
}

// gatewayReady reads the Gateway's Accepted and Programmed conditions: ""
// when both are True for its current spec, else what is wrong and how bad.
func gatewayReady(u *unstructured.Unstructured, gw string) (string, Status) {
	class, _, _ := unstructured.NestedString(u.Object, "spec", "gatewayClassName")
	describe := fmt.Sprintf("'kubectl describe gateway -n %s %s'", u.GetNamespace(), u.GetName())
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	state := map[string]map[string]any{}
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			typ, _, _ := unstructured.NestedString(m, "type")
			state[typ] = m
		}
	}
	for _, typ := range []string{"Accepted", "Programmed"} {
		m := state[typ]
		status, _, _ := unstructured.NestedString(m, "status")
		reason, _, _ := unstructured.NestedString(m, "reason")
		msg, _, _ := unstructured.NestedString(m, "message")
		observed, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		why := reason
		if msg != "" {
			why += ": " + msg
		}
		switch {
		case m == nil || (typ == "Accepted" && status == "Unknown"):
			if typ == "Accepted" {
				return fmt.Sprintf("no controller has accepted %s: is the controller of its GatewayClass %q running? ('kubectl get gatewayclass %s' says whether one accepted the class); until then app routes attached to it are never served", gw, class, class), StatusFailed
			}
			return fmt.Sprintf("%s is accepted but its controller has not said it is programmed: app routes may not be served; see %s", gw, describe), StatusFailed
		case status != "True":
			return fmt.Sprintf("%s is not %s by its controller (%s): app routes attached to it are not served; see %s", gw, strings.ToLower(typ), why, describe), StatusFailed
		case observed > 0 && observed < u.GetGeneration():
			return fmt.Sprintf("%s was changed and its controller has not looked at the change yet (its %s condition is about generation %d of %d): run doctor again in a moment; if it stays so, see %s", gw, typ, observed, u.GetGeneration(), describe), StatusWarning
		}
	}
	return "", StatusOK
}

// namespaceLabels are the labels of namespace, read only when one of the
// Gateway's listeners selects namespaces by label (a developer may not be
// allowed to read namespaces).
func namespaceLabels(ctx context.Context, client kubernetes.Interface, namespace string, u *unstructured.Unstructured) (map[string]string, error) {
	if !route.SelectsByLabel(u) {
		return nil, nil
	}
	ns, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return ns.Labels, nil
}

// hostnameCovers applies a listener hostname ("" for any, "*.d" for names
// under d) to host.
func hostnameCovers(listener, host string) bool {
	if listener == "" {
		return true
	}
	if suffix, ok := strings.CutPrefix(listener, "*"); ok {
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return listener == host
}
