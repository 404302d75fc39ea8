package deploy

import (
	"maps"
	"reflect"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/owned"
	"tug.dev/tug/pkg/render"
)

// unchanged says the rollout would run exactly what runs now, so no
// release is made (Options.SkipUnchanged): the base release is the
// deployed one, and the next one has its image, process types, settings,
// jobs and config; the app's units and route stay as they are, and the
// units are the base release's, all of them ready. A build from source
// asks for it: a reproducible build of unchanged source makes the same
// image digest, and rolling every unit onto the image it already runs
// would only restart them. A release with a release phase to run is
// always made: the phase runs with each release (and the base's may have
// been skipped).
func (r *rolling) unchanged() bool {
	a, base, next := r.a, r.base, r.next
	if base == nil || base.Status != app.StatusDeployed || base.Version != a.Release {
		return false
	}
	if next.ReleaseCommand != "" && !r.opts.SkipReleasePhase {
		return false
	}
	if !maps.Equal(r.baseConfig, r.config) || !reflect.DeepEqual(r.unitsBefore, a.Processes) || !reflect.DeepEqual(a.Route, r.want) {
		return false
	}
	return base.RunsLike(next) && r.runsBase()
}

// runsBase says the cluster runs the base release as tug would apply it:
// each process's Deployment names the release (after a deploy with
// --no-rollback a failed release's units may run instead), has rolled out
// with every unit ready (a release deployed with --no-wait may never have
// got there), and applying it again would change nothing (a hand edit
// with kubectl, another unit count: a server-side dry run would bump its
// generation); the web Service and the CronJobs exist. Anything unknown
// (a request failed) is no: the rollout then puts it all back.
func (r *rolling) runsBase() bool {
	t, a, base := r.t, r.a, r.base
	ctx, client, ns := t.ctx, t.d.Client, t.d.Namespace
	list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(a.Name)})
	if err != nil {
		return false
	}
	live := map[string]*appsv1.Deployment{}
	for i := range list.Items {
		live[list.Items[i].Name] = &list.Items[i]
	}
	objs := render.Release(a, base, r.config)
	for _, want := range objs.Deployments {
		d := live[want.Name]
		if d == nil || d.Spec.Template.Labels[kube.LabelRelease] != strconv.Itoa(base.Version) || !rolledOut(d) {
			return false
		}
	}
	deps, err := withLiveReplicas(ctx, t.d, objs)
	if err != nil {
		return false
	}
	again := map[string]int64{}
	opts := metav1.PatchOptions{FieldManager: kube.FieldManager, Force: new(true), DryRun: []string{metav1.DryRunAll}}
	err = owned.Apply(ctx, t.d.owned(), t.d.OwnedKinds().Only("Deployment"), render.Objects{Deployments: deps}.List(), opts, func(_ *owned.Kind, got runtime.Object) error {
		if d, ok := got.(*appsv1.Deployment); ok {
			again[d.Name] = d.Generation
		}
		return nil
	})
	if err != nil {
		return false
	}
	for name, gen := range again {
		if gen != live[name].Generation {
			return false
		}
	}
	if svc := objs.Service; svc != nil {
		if _, err := client.CoreV1().Services(ns).Get(ctx, svc.Name, metav1.GetOptions{}); err != nil {
			return false
		}
	}
	for _, cj := range objs.CronJobs {
		if _, err := client.BatchV1().CronJobs(ns).Get(ctx, cj.Name, metav1.GetOptions{}); err != nil {
			return false
		}
	}
	return true
}

// rolledOut says a Deployment's controller has seen its spec and every
// unit it wants runs that spec and is available.
func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration == d.Generation && s.Replicas == want && s.UpdatedReplicas == want && s.AvailableReplicas == want
}
