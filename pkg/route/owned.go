package route

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"tug.dev/tug/pkg/kube"
)

// The objects of other projects' APIs that tug writes for an app
// (HTTPRoutes, Traefik Middlewares, cert-manager Certificates) all go
// through the dynamic client and the same three steps: server-side apply,
// a read for the ownership guard, and removal of the app's stale ones by
// one LIST of its labels. ownedKind is those steps, once.

// ownedKind is one such resource.
type ownedKind struct {
	gvr schema.GroupVersionResource
	// noun is how messages name one object: "httproute".
	noun string
	// unserved says, after "applying NOUN NAME: ", why a cluster that
	// does not serve the resource cannot take it and what to do.
	unserved string
	// noClient says the same for a client built without the dynamic API.
	noClient string
}

var (
	httpRouteKind = ownedKind{gvr: HTTPRoutes, noun: "httproute", noClient: "no client for the Gateway API",
		unserved: "this cluster does not serve the Gateway API (no HTTPRoute resource), though its settings name a Gateway; ask its admin ('tug cluster settings show')"}
	middlewareKind = ownedKind{gvr: Middlewares, noun: "middleware", noClient: "no client for Traefik's resources",
		unserved: "this cluster does not serve Traefik's Middleware resource (middlewares.traefik.io), though its settings say its router is traefik; ask its admin ('tug cluster settings show')"}
	certificateKind = ownedKind{gvr: Certificates, noun: "certificate", noClient: "no client for cert-manager's API",
		unserved: "this cluster does not serve cert-manager's Certificate resource (cert-manager.io/v1), though the domain takes its certificate from an issuer; ask its admin ('tug cluster settings show')"}
)

// apply server-side-applies obj and returns what the server stored.
func (c Client) apply(ctx context.Context, k ownedKind, obj *unstructured.Unstructured, opts metav1.PatchOptions) (*unstructured.Unstructured, error) {
	if c.Dynamic == nil {
		return nil, fmt.Errorf("applying %s %s: %s", k.noun, obj.GetName(), k.noClient)
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	got, err := c.Dynamic.Resource(k.gvr).Namespace(c.Namespace).Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("applying %s %s: %s", k.noun, obj.GetName(), k.unserved)
		}
		return nil, fmt.Errorf("applying %s %s: %w", k.noun, obj.GetName(), kube.TranslateError(err))
	}
	return got, nil
}

// get reads one object; a cluster that does not serve the resource, or a
// client without the dynamic API, has none (NotFound).
func (c Client) get(ctx context.Context, k ownedKind, name string) (metav1.Object, error) {
	if c.Dynamic == nil {
		return nil, apierrors.NewNotFound(k.gvr.GroupResource(), name)
	}
	u, err := c.Dynamic.Resource(k.gvr).Namespace(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// removeStale deletes the app's objects of kind k that keep does not name
// (nil keep: all of them), by one LIST of the app's labels; an object the
// app does not own is never deleted, and one replaced since the LIST is
// not either (a UID precondition). A cluster that does not serve the
// resource has none of the app's; so has a user who may not list them
// while nothing is to be kept (an older Role, from before tug wrote the
// kind: what it cannot list it cannot have made).
func (c Client) removeStale(ctx context.Context, k ownedKind, appName string, keep []*unstructured.Unstructured) error {
	if c.Dynamic == nil {
		return nil
	}
	res := c.Dynamic.Resource(k.gvr).Namespace(c.Namespace)
	list, err := res.List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if apierrors.IsNotFound(err) || (apierrors.IsForbidden(err) && len(keep) == 0) {
		return nil
	}
	if err != nil {
		return kube.TranslateError(err)
	}
	names := map[string]bool{}
	for _, o := range keep {
		names[o.GetName()] = true
	}
	for _, o := range list.Items {
		if names[o.GetName()] || !kube.Owned(o.GetLabels(), appName) {
			continue
		}
		uid := o.GetUID()
		if err := res.Delete(ctx, o.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return kube.TranslateError(err)
		}
	}
	return nil
}

// guard checks that no object of objs exists without being the app's
// (kube.CheckOwned): one GET each.
func (c Client) guard(ctx context.Context, k ownedKind, kind string, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		cur, err := c.get(ctx, k, o.GetName())
		if _, err := kube.CheckOwned(kind, c.Namespace, o.GetName(), o.GetLabels()[kube.LabelApp], cur, err); err != nil {
			return err
		}
	}
	return nil
}

// toAny is m as the map of an unstructured object.
func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
