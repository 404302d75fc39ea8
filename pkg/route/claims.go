package route

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// A host is claimed cluster-wide: on a Gateway (or a router) that serves
// several namespaces, the route with the longest matching path wins, so a
// route of one namespace for a host another namespace serves takes that
// other namespace's requests for its path (a "/login" of someone else's
// app). Before an app's route names a host, tug looks at every HTTPRoute
// and Ingress of the cluster; a user who may not list them cannot take a
// name under the apps domain (the apps' own URLs) that is not the app's.

// Claim is who else routes a host: a route or Ingress of another
// namespace.
type Claim struct {
	Namespace, Kind, Name string
}

func (c Claim) String() string { return fmt.Sprintf("%s %s/%s", c.Kind, c.Namespace, c.Name) }

// ClaimError refuses a host another namespace routes, or one under the
// apps domain that tug cannot tell is free.
type ClaimError struct {
	Host, Namespace string
	By              *Claim // nil: not listed (Forbidden), under the apps domain
	AppsDomain      string
	// Wildcard: a wildcard host that would cover names under the apps
	// domain, refused whoever routes them.
	Wildcard bool
}

func (e *ClaimError) Error() string {
	if e.Wildcard {
		return fmt.Sprintf("host %s is a wildcard that covers names under the apps domain %s, whose names are the apps' own URLs: it would catch every app URL no route names yet; name the hosts one by one, or use a wildcard of a domain of your own", e.Host, e.AppsDomain)
	}
	if e.By != nil {
		return fmt.Sprintf("host %s is routed by namespace %s (%s); a host belongs to one namespace: remove it there first", e.Host, e.By.Namespace, e.By)
	}
	return fmt.Sprintf("host %s is under the apps domain %s, whose names are the apps' own URLs, and you may not list the routes of every namespace to tell it is free; use the app's own URL or a domain of your own, or ask a cluster admin to add it", e.Host, e.AppsDomain)
}

// CheckClaim says whether namespace may route host: no HTTPRoute or
// Ingress of another namespace names it. Wildcards count both ways: an
// HTTPRoute's "*.example.com" (which the Gateway API matches against any
// number of labels) claims every name under example.com, an Ingress's
// only the names one label under it, and a wildcard host asked for is
// refused where a route of another namespace names a host it would cover.
// An HTTPRoute with no hostnames matches every host of its Gateway but
// claims none: the router prefers any route that names the host, so it
// takes only the requests no route names (it is not looked at here).
//
// A wildcard whose names meet the apps domain (*.APPSDOMAIN, or a wider
// one such as *.example.com over apps.example.com) is always refused: it
// would catch every app URL no route names yet. When the cluster's routes
// cannot be listed (Forbidden), a host under appsDomain other than own
// (the app's own URL) is refused, and any other host is taken to be the
// user's to name (their DNS points it here). A list that fails otherwise
// fails the check, with the reason, before anything changes.
//
// Two namespaces that claim one host at the same moment are not
// serialised: each command holds only its own app's lock, so both checks
// may pass before either route is written.
func CheckClaim(ctx context.Context, c Client, client kubernetes.Interface, namespace, host, appsDomain, own string) error {
	host = strings.ToLower(host)
	if wild, ok := strings.CutPrefix(host, "*."); ok && appsDomain != "" && (underDomain(wild, appsDomain) || underDomain(strings.ToLower(strings.TrimSuffix(appsDomain, ".")), wild)) {
		return &ClaimError{Host: host, Namespace: namespace, AppsDomain: appsDomain, Wildcard: true}
	}
	by, listed, err := claimedElsewhere(ctx, c, client, namespace, host, false)
	if err != nil {
		return err
	}
	if by != nil {
		return &ClaimError{Host: host, Namespace: namespace, By: by}
	}
	if !listed && host != own && underDomain(host, appsDomain) {
		return &ClaimError{Host: host, Namespace: namespace, AppsDomain: appsDomain}
	}
	return nil
}

// underDomain says whether host is domain or a name under it.
func underDomain(host, domain string) bool {
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	return domain != "" && (host == domain || strings.HasSuffix(host, "."+domain))
}

// hostsMeet says whether a route hostname routed (of an HTTPRoute when
// multiLabel, whose "*.d" covers any number of labels under d; else of an
// Ingress, whose "*.d" covers one) and a host asked for (a name or "*.d",
// taken as covering any number of labels) share a name.
func hostsMeet(routed, host string, multiLabel bool) bool {
	rw, rWild := strings.CutPrefix(routed, "*.")
	hw, hWild := strings.CutPrefix(host, "*.")
	switch {
	case !rWild && !hWild:
		return routed == host
	case rWild && !hWild:
		if multiLabel {
			return strings.HasSuffix(host, "."+rw)
		}
		return hostMatches(routed, host)
	case !rWild && hWild:
		return strings.HasSuffix(routed, "."+hw)
	}
	if !multiLabel && rw != hw {
		// an Ingress's *.rw covers a.rw only: it meets *.hw when a.rw is
		// under hw
		return strings.HasSuffix(rw, "."+hw)
	}
	return underDomain(rw, hw) || underDomain(hw, rw)
}

// claimedElsewhere is the first route or Ingress outside namespace that
// names host; listed is false when the user may not list them all.
func claimedElsewhere(ctx context.Context, c Client, client kubernetes.Interface, namespace, host string, exact bool) (*Claim, bool, error) {
	listed := true
	hostsMeet := func(routed, host string, multiLabel bool) bool {
		if exact {
			return routed == host
		}
		return hostsMeet(routed, host, multiLabel)
	}
	if c.Dynamic != nil {
		list, err := c.Dynamic.Resource(HTTPRoutes).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsForbidden(err):
			listed = false
		case apierrors.IsNotFound(err): // no Gateway API
		case err != nil:
			return nil, false, fmt.Errorf("cannot list the HTTPRoutes of every namespace to tell whether another routes host %s: %w", host, kube.TranslateError(err))
		default:
			for _, r := range list.Items {
				if r.GetNamespace() == namespace {
					continue
				}
				hosts, _, _ := unstructured.NestedStringSlice(r.Object, "spec", "hostnames")
				// no hostnames: every host of its Gateway, a claim on none
				for _, h := range hosts {
					if h != "" && hostsMeet(strings.ToLower(h), host, true) {
						return &Claim{Namespace: r.GetNamespace(), Kind: "HTTPRoute", Name: r.GetName()}, true, nil
					}
				}
			}
		}
	}
	if client == nil {
		return nil, listed, nil
	}
	ings, err := client.NetworkingV1().Ingresses(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
		listed = false
	case err != nil:
		return nil, false, fmt.Errorf("cannot list the Ingresses of every namespace to tell whether another routes host %s: %w", host, kube.TranslateError(err))
	default:
		for _, ing := range ings.Items {
			if ing.Namespace == namespace {
				continue
			}
			for _, r := range ing.Spec.Rules {
				if r.Host != "" && hostsMeet(strings.ToLower(r.Host), host, false) {
					return &Claim{Namespace: ing.Namespace, Kind: "Ingress", Name: ing.Name}, true, nil
				}
			}
		}
	}
	return nil, listed, nil
}
