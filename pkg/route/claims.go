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
}

func (e *ClaimError) Error() string {
	if e.By != nil {
		return fmt.Sprintf("host %s is routed by namespace %s (%s); a host belongs to one namespace: remove it there first", e.Host, e.By.Namespace, e.By)
	}
	return fmt.Sprintf("host %s is under the apps domain %s, whose names are the apps' own URLs, and you may not list the routes of every namespace to tell it is free; use the app's own URL or a domain of your own, or ask a cluster admin to add it", e.Host, e.AppsDomain)
}

// CheckClaim says whether namespace may route host: no HTTPRoute or
// Ingress of another namespace names it (a listener-style wildcard that
// covers it counts). When the cluster's routes cannot be listed
// (Forbidden), a host under appsDomain other than own (the app's own URL)
// is refused, and any other host is taken to be the user's to name (their
// DNS points it here). A list that fails otherwise counts as not listed,
// with a warning.
func CheckClaim(ctx context.Context, c Client, client kubernetes.Interface, namespace, host, appsDomain, own string) error {
	host = strings.ToLower(host)
	by, listed, err := claimedElsewhere(ctx, c, client, namespace, host)
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

// claimedElsewhere is the first route or Ingress outside namespace that
// names host; listed is false when the user may not list them all.
func claimedElsewhere(ctx context.Context, c Client, client kubernetes.Interface, namespace, host string) (*Claim, bool, error) {
	listed := true
	if c.Dynamic != nil {
		list, err := c.Dynamic.Resource(HTTPRoutes).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsForbidden(err):
			listed = false
		case apierrors.IsNotFound(err): // no Gateway API
		case err != nil:
			// unknown, as when forbidden; a look that failed is said
			say(c.Warn, fmt.Sprintf("cannot list the HTTPRoutes of every namespace (%v): a host under the apps domain is refused", kube.TranslateError(err)))
			listed = false
		default:
			for _, r := range list.Items {
				if r.GetNamespace() == namespace {
					continue
				}
				hosts, _, _ := unstructured.NestedStringSlice(r.Object, "spec", "hostnames")
				for _, h := range hosts {
					if hostMatches(strings.ToLower(h), host) && h != "" {
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
		return nil, false, kube.TranslateError(err)
	default:
		for _, ing := range ings.Items {
			if ing.Namespace == namespace {
				continue
			}
			for _, r := range ing.Spec.Rules {
				if r.Host != "" && hostMatches(strings.ToLower(r.Host), host) {
					return &Claim{Namespace: ing.Namespace, Kind: "Ingress", Name: ing.Name}, true, nil
				}
			}
		}
	}
	return nil, listed, nil
}
