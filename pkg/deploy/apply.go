package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

// applied is what the server returned for the objects of a release.
type applied struct {
	deployments map[string]*appsv1.Deployment
	// routes are the HTTPRoutes as the server returned them.
	routes []*unstructured.Unstructured
}

// applyObjects server-side-applies a release's objects as field manager
// "tug": one write per object. Callers check the objects with guardOwned
// first, before they store anything. With dryRun the server validates and
// defaults them (admission included) but stores nothing.
func applyObjects(ctx context.Context, d Deps, objs render.Objects, dryRun bool) (*applied, error) {
	opts := metav1.PatchOptions{FieldManager: kube.FieldManager, Force: new(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	warnUnenforced(d, objs)
	out := &applied{deployments: map[string]*appsv1.Deployment{}}
	if err := applyDeployments(ctx, d, objs, opts, out); err != nil {
		return nil, err
	}
	if err := applyMaintenance(ctx, d, objs.Maintenance, opts, dryRun); err != nil {
		return nil, err
	}
	client, ns := d.Client, d.Namespace
	if svc := objs.Service; svc != nil {
		err := write{"service", svc.Name, svc, func(n string, b []byte, o metav1.PatchOptions) error {
			_, err := client.CoreV1().Services(ns).Patch(ctx, n, types.ApplyPatchType, b, o)
			return err
		}}.apply(opts)
		if err != nil {
			return nil, err
		}
	}
	if err := applyTrackServices(ctx, d, objs.TrackServices, opts); err != nil {
		return nil, err
	}
	if err := d.Routes().ApplyCertificates(ctx, objs.Certificates, opts); err != nil {
		return nil, err
	}
	if m := objs.Middleware; m != nil {
		// before the routes and Ingresses that name it: a route naming a
		// Middleware the router does not have is not served
		if err := d.Routes().ApplyMiddleware(ctx, m, opts); err != nil {
			return nil, err
		}
	}
	var writes []write
	for _, ing := range objs.Ingresses {
		writes = append(writes, write{"ingress", ing.Name, ing, func(n string, b []byte, o metav1.PatchOptions) error {
			_, err := client.NetworkingV1().Ingresses(ns).Patch(ctx, n, types.ApplyPatchType, b, o)
			return err
		}})
	}
	if np := objs.NetworkPolicy; np != nil {
		writes = append(writes, write{"network policy", np.Name, np, func(n string, b []byte, o metav1.PatchOptions) error {
			_, err := client.NetworkingV1().NetworkPolicies(ns).Patch(ctx, n, types.ApplyPatchType, b, o)
			return err
		}})
	}
	for _, h := range objs.Autoscalers {
		writes = append(writes, write{"autoscaler", h.Name, h, func(n string, b []byte, o metav1.PatchOptions) error {
			_, err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(ctx, n, types.ApplyPatchType, b, o)
			return err
		}})
	}
	for _, w := range writes {
		if err := w.apply(opts); err != nil {
			return nil, err
		}
	}
	if err := applyCronJobs(ctx, d, objs.CronJobs, opts); err != nil {
		return nil, err
	}
	for _, r := range objs.Routes {
		got, err := d.Routes().Apply(ctx, r, opts)
		if err != nil {
			return nil, err
		}
		out.routes = append(out.routes, got)
	}
	return out, nil
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

// write is one object to server-side-apply through patch.
type write struct {
	kind, name string
	obj        any
	patch      func(name string, data []byte, opts metav1.PatchOptions) error
}

func (w write) apply(opts metav1.PatchOptions) error {
	data, err := json.Marshal(w.obj)
	if err != nil {
		return err
	}
	if err := w.patch(w.name, data, opts); err != nil {
		return fmt.Errorf("applying %s %s: %w", w.kind, w.name, kube.TranslateError(err))
	}
	return nil
}

// applyDeployments applies the processes' Deployments, keeping the count
// an autoscaler chose, and keeps what the server returned in out.
func applyDeployments(ctx context.Context, d Deps, objs render.Objects, opts metav1.PatchOptions, out *applied) error {
	client, ns := d.Client, d.Namespace
	for _, dep := range objs.Deployments {
		if dep.Spec.Replicas == nil {
			// Autoscaled: keep the count the autoscaler chose, so a deploy
			// never resets it (and tug keeps owning the field, so server-side
			// apply never drops it to the default of 1).
			n, err := liveReplicas(ctx, client, ns, dep.Name, objs)
			if err != nil {
				return err
			}
			dep = dep.DeepCopy()
			dep.Spec.Replicas = &n
		}
		err := write{"deployment", dep.Name, dep, func(n string, b []byte, o metav1.PatchOptions) error {
			got, err := client.AppsV1().Deployments(ns).Patch(ctx, n, types.ApplyPatchType, b, o)
			if err == nil {
				out.deployments[got.Name] = got
			}
			return err
		}}.apply(opts)
		if err != nil {
			return err
		}
	}
	return nil
}

// applyMaintenance applies the maintenance page's Deployment and waits
// for it to answer: the page must answer before the Service switches to it.
func applyMaintenance(ctx context.Context, d Deps, m *appsv1.Deployment, opts metav1.PatchOptions, dryRun bool) error {
	if m == nil {
		return nil
	}
	client, ns := d.Client, d.Namespace
	err := write{"deployment", m.Name, m, func(n string, b []byte, o metav1.PatchOptions) error {
		_, err := client.AppsV1().Deployments(ns).Patch(ctx, n, types.ApplyPatchType, b, o)
		return err
	}}.apply(opts)
	if err != nil || dryRun {
		return err
	}
	return waitAvailable(ctx, client, ns, m.Name, m.Spec.Template.Spec.Containers[0].Image)
}

// guardOwned checks, before anything is written, that no object of the
// release exists without being the app's: server-side apply with force would
// take over (and relabel) a Service, Ingress or autoscaler that helm or
// kubectl made, and a later remove would delete it. One GET per object.
func guardOwned(ctx context.Context, d Deps, objs render.Objects) error {
	client, ns := d.Client, d.Namespace
	type target struct {
		kind, name, app string
		get             func(name string) (metav1.Object, error)
	}
	get := metav1.GetOptions{}
	deployment := func(n string) (metav1.Object, error) { return client.AppsV1().Deployments(ns).Get(ctx, n, get) }
	var targets []target
	for _, d := range objs.Deployments {
		targets = append(targets, target{"Deployment", d.Name, d.Labels[kube.LabelApp], deployment})
	}
	if m := objs.Maintenance; m != nil {
		targets = append(targets, target{"Deployment", m.Name, m.Labels[kube.LabelApp], deployment})
	}
	if s := objs.Service; s != nil {
		targets = append(targets, target{"Service", s.Name, s.Labels[kube.LabelApp], func(n string) (metav1.Object, error) {
			return client.CoreV1().Services(ns).Get(ctx, n, get)
		}})
	}
	for _, s := range objs.TrackServices {
		targets = append(targets, target{"Service", s.Name, s.Labels[kube.LabelApp], func(n string) (metav1.Object, error) {
			return client.CoreV1().Services(ns).Get(ctx, n, get)
		}})
	}
	for _, i := range objs.Ingresses {
		targets = append(targets, target{"Ingress", i.Name, i.Labels[kube.LabelApp], func(n string) (metav1.Object, error) {
			return client.NetworkingV1().Ingresses(ns).Get(ctx, n, get)
		}})
	}
	if p := objs.NetworkPolicy; p != nil {
		targets = append(targets, target{"NetworkPolicy", p.Name, p.Labels[kube.LabelApp], func(n string) (metav1.Object, error) {
			return client.NetworkingV1().NetworkPolicies(ns).Get(ctx, n, get)
		}})
	}
	for _, h := range objs.Autoscalers {
		targets = append(targets, target{"HorizontalPodAutoscaler", h.Name, h.Labels[kube.LabelApp], func(n string) (metav1.Object, error) {
			return client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, n, get)
		}})
	}
	if m := objs.Middleware; m != nil {
		targets = append(targets, target{"Middleware", m.GetName(), m.GetLabels()[kube.LabelApp], func(n string) (metav1.Object, error) {
			return d.Routes().GetMiddleware(ctx, n)
		}})
	}
	for _, r := range objs.Routes {
		targets = append(targets, target{"HTTPRoute", r.GetName(), r.GetLabels()[kube.LabelApp], func(n string) (metav1.Object, error) {
			return d.Routes().Get(ctx, n)
		}})
	}
	for _, t := range targets {
		obj, err := t.get(t.name)
		if _, err := kube.CheckOwned(t.kind, ns, t.name, t.app, obj, err); err != nil {
			return err
		}
	}
	if err := guardCronJobs(ctx, d, objs.CronJobs); err != nil {
		return err
	}
	return d.Routes().GuardCertificates(ctx, objs.Certificates)
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

// removeStale deletes the Deployments (and the Service) of process types the
// release no longer has: one LIST, and a DELETE only for what must go.
func removeStale(ctx context.Context, d Deps, appName string, objs render.Objects) error {
	client, ns := d.Client, d.Namespace
	keep := map[string]bool{}
	for _, d := range objs.Deployments {
		keep[d.Name] = true
	}
	if objs.Maintenance != nil {
		keep[objs.Maintenance.Name] = true
	}
	for _, name := range objs.Keep {
		keep[name] = true
	}
	list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if err != nil {
		return kube.TranslateError(err)
	}
	for _, d := range list.Items {
		if keep[d.Name] {
			continue
		}
		err := client.AppsV1().Deployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
		if err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	keepHPA := map[string]bool{}
	for _, h := range objs.Autoscalers {
		keepHPA[h.Name] = true
	}
	hpas, err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if err != nil {
		return kube.TranslateError(err)
	}
	for _, h := range hpas.Items {
		if keepHPA[h.Name] {
			continue
		}
		if err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).Delete(ctx, h.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	if err := removeStaleCronJobs(ctx, d, appName, objs.CronJobs); err != nil {
		return err
	}
	if err := removeStaleIngresses(ctx, d, appName, objs.Ingresses); err != nil {
		return err
	}
	if objs.NetworkPolicy == nil {
		if err := deleteOwned(ctx, appName, func() (metav1.Object, error) {
			return client.NetworkingV1().NetworkPolicies(ns).Get(ctx, render.NetworkPolicyName(appName), metav1.GetOptions{})
		}, func() error {
			return client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, render.NetworkPolicyName(appName), metav1.DeleteOptions{})
		}); err != nil {
			return err
		}
	}
	if err := d.Routes().RemoveStale(ctx, appName, objs.Routes); err != nil {
		return err
	}
	// after the routes and Ingresses no longer name it
	if err := d.Routes().RemoveStaleMiddlewares(ctx, appName, objs.Middleware); err != nil {
		return err
	}
	if err := d.Routes().RemoveStaleCertificates(ctx, appName, objs.Certificates); err != nil {
		return err
	}
	if err := removeStaleTrackServices(ctx, d, appName, objs.TrackServices); err != nil {
		return err
	}
	if objs.Service == nil {
		if err := deleteOwned(ctx, appName, func() (metav1.Object, error) {
			return client.CoreV1().Services(ns).Get(ctx, render.ServiceName(appName), metav1.GetOptions{})
		}, func() error {
			return client.CoreV1().Services(ns).Delete(ctx, render.ServiceName(appName), metav1.DeleteOptions{})
		}); err != nil {
			return err
		}
	}
	return nil
}

// deleteOwned deletes an object when it exists and is tug's, for appName; one
// that is not tug's is left alone (it is not in the way of anything).
func deleteOwned(ctx context.Context, appName string, get func() (metav1.Object, error), del func() error) error {
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

// removeStaleIngresses deletes the app's Ingresses that keep does not name
// (one LIST by the app's labels): a domain's class gone, or its last
// domain.
func removeStaleIngresses(ctx context.Context, d Deps, appName string, keep []*networkingv1.Ingress) error {
	list, err := d.Client.NetworkingV1().Ingresses(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if err != nil {
		return kube.TranslateError(err)
	}
	names := map[string]bool{}
	for _, i := range keep {
		names[i.Name] = true
	}
	for _, i := range list.Items {
		if names[i.Name] || !kube.Owned(i.Labels, appName) {
			continue
		}
		if err := d.Client.NetworkingV1().Ingresses(d.Namespace).Delete(ctx, i.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	return nil
}
