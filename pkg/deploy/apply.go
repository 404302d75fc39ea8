package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/owned"
	"tug.dev/tug/pkg/render"
)

// applied is what the server returned for the objects of a release.
type applied struct {
	deployments map[string]*appsv1.Deployment
	// routes are the HTTPRoutes as the server returned them.
	routes []*unstructured.Unstructured
}

// applyObjects server-side-applies a release's objects as field manager
// "tug", in the order of Kinds (owned.Apply). Callers check the
// objects with guardOwned first, before they store anything. With dryRun
// the server validates and defaults them (admission included) but stores
// nothing. An autoscaled Deployment keeps the count its autoscaler chose,
// and the maintenance page answers before the Service switches to it.
func applyObjects(ctx context.Context, d Deps, objs render.Objects, dryRun bool) (*applied, error) {
	opts := metav1.PatchOptions{FieldManager: kube.FieldManager, Force: new(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	warnUnenforced(d, objs)
	deps, err := withLiveReplicas(ctx, d, objs)
	if err != nil {
		return nil, err
	}
	objs.Deployments = deps
	out := &applied{deployments: map[string]*appsv1.Deployment{}}
	page := ""
	if objs.Maintenance != nil {
		page = objs.Maintenance.Name
	}
	err = owned.Apply(ctx, d.owned(), d.OwnedKinds(), objs.List(), opts, func(_ *owned.Kind, got runtime.Object) error {
		switch o := got.(type) {
		case *appsv1.Deployment:
			if o.Name == page {
				if dryRun {
					return nil
				}
				return waitAvailable(ctx, d.Client, d.Namespace, page, objs.Maintenance.Spec.Template.Spec.Containers[0].Image)
			}
			out.deployments[o.Name] = o
		case *unstructured.Unstructured:
			if o.GetKind() == "HTTPRoute" {
				out.routes = append(out.routes, o)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// owned is what the loops of pkg/owned reach the app's namespace with.
func (d Deps) owned() owned.Clients {
	return owned.Clients{Typed: d.Client, Dynamic: d.Dynamic, Namespace: d.Namespace}
}

// warnUnenforced tells the user, through d.Warn, that the app's allow list
// is not enforced at the router for objs' routed objects.
func warnUnenforced(d Deps, objs render.Objects) {
	names := objs.AllowUnenforced()
	if len(names) == 0 || d.Warn == nil {
		return
	}
	appName := objs.NetworkPolicy.Labels[kube.LabelApp]
	d.Warn(fmt.Sprintf("app %q: the allow list is not enforced at the router for %s, only by the NetworkPolicy, for traffic straight to the units; tug enforces it at a router the cluster settings name (key router: traefik or ingress-nginx; docs/guide.md, \"Traffic\")",
		appName, strings.Join(names, ", ")))
}

// withLiveReplicas is objs' Deployments, each autoscaled one (applied
// without replicas) with the count its autoscaler chose: a deploy never
// resets it, and tug keeps owning the field, so server-side apply never
// drops it to the default of 1.
func withLiveReplicas(ctx context.Context, d Deps, objs render.Objects) ([]*appsv1.Deployment, error) {
	out := make([]*appsv1.Deployment, 0, len(objs.Deployments))
	for _, dep := range objs.Deployments {
		if dep.Spec.Replicas == nil {
			n, err := liveReplicas(ctx, d.Client, d.Namespace, dep.Name, objs)
			if err != nil {
				return nil, err
			}
			dep = dep.DeepCopy()
			dep.Spec.Replicas = &n
		}
		out = append(out, dep)
	}
	return out, nil
}

// guardOwned checks, before anything is written, that no object of the
// release exists without being the app's (owned.Guard): server-side apply
// with force would take over (and relabel) a Service, Ingress or
// autoscaler that helm or kubectl made, and a later remove would delete
// it. One GET per object.
func guardOwned(ctx context.Context, d Deps, objs render.Objects) error {
	return owned.Guard(ctx, d.owned(), d.OwnedKinds(), owned.App, objs.List())
}

// liveReplicas is an autoscaled Deployment's current unit count, or its
// autoscaler's minimum when it does not exist yet.
func liveReplicas(ctx context.Context, client kubernetes.Interface, ns, name string, objs render.Objects) (int32, error) {
	cur, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil && cur.Spec.Replicas != nil {
		return *cur.Spec.Replicas, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, kube.TranslateError(err)
	}
	for _, h := range objs.Autoscalers {
		if h.Name == name && h.Spec.MinReplicas != nil {
			return *h.Spec.MinReplicas, nil
		}
	}
	return 1, nil
}

// removeStale deletes what tug made of the app and objs no longer hold
// (render.Objects.Keep aside): one LIST per kind of Kinds, and a
// DELETE only for what must go (owned.Prune).
func removeStale(ctx context.Context, d Deps, appName string, objs render.Objects) error {
	return owned.Prune(ctx, d.owned(), d.OwnedKinds(), owned.App, appName, objs.List(), kept(objs)...)
}

// DeleteOwned deletes an object when it exists and is tug's, for appName; one
// that is not tug's is left alone (it is not in the way of anything).
func DeleteOwned(ctx context.Context, appName string, get func() (metav1.Object, error), del func() error) error {
	obj, err := get()
	exists, err := kube.CheckOwned("", "", "", appName, obj, err)
	var notOurs *kube.NotOwnedError
	switch {
	case errors.As(err, &notOurs):
		return nil
	case err != nil:
		return err
	case !exists:
		return nil
	}
	if err := del(); err != nil && !apierrors.IsNotFound(err) {
		return kube.TranslateError(err)
	}
	return nil
}

// waitAvailable watches a Deployment until a unit is available. For small
// helper Deployments (the maintenance page), not for app rollouts.
func waitAvailable(ctx context.Context, client kubernetes.Interface, ns, name, image string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	sel := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	err := kube.Until(ctx, kube.Deployments(client, ns, sel), func(deps map[string]*appsv1.Deployment) (bool, error) {
		for _, d := range deps {
			if d.Name == name && d.Status.AvailableReplicas > 0 {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s did not start within 2m; check that its image %s can be pulled (set TUG_MAINTENANCE_IMAGE to use another)", name, image)
	}
	return kube.TranslateError(err)
}
