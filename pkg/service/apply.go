package service

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/session"
)

// Deps are what service actions reach the cluster with.
type Deps struct {
	Client kubernetes.Interface
	// Dynamic applies a plan's objects, whatever their kinds.
	Dynamic   dynamic.Interface
	Namespace string
	Progress  progress.Reporter
	// Exec runs commands in a service's unit (rotate, backup, restore).
	Exec session.Executor
	// Holder is who takes a service's lock; WaitLock how long to wait
	// for it while another tug holds it (0: fail at once).
	Holder   lock.Holder
	WaitLock time.Duration
	// WaitRuns is how long a rotate waits, before it revokes the old
	// login, for the runs started before it that still read that login (a
	// CronJob's run, a one-off run: no rollout replaces them). 0: revoke
	// at once and name them.
	WaitRuns time.Duration
	// WaitUnits has a rotate wait for the bound apps' old units to stop
	// and revoke the old login at once, even when the plan can have the
	// database refuse it from a deadline (RotateSpec.RevokeAfter).
	WaitUnits bool
}

// builtinKinds are the kinds plans usually make, mapped without asking the
// server's discovery (dozens of requests on a big cluster).
var builtinKinds = map[schema.GroupVersionKind]string{
	{Version: "v1", Kind: "Service"}:                              "services",
	{Version: "v1", Kind: "Secret"}:                               "secrets",
	{Version: "v1", Kind: "ConfigMap"}:                            "configmaps",
	{Version: "v1", Kind: "PersistentVolumeClaim"}:                "persistentvolumeclaims",
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}:           "statefulsets",
	{Group: "apps", Version: "v1", Kind: "Deployment"}:            "deployments",
	{Group: "batch", Version: "v1", Kind: "CronJob"}:              "cronjobs",
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}: "poddisruptionbudgets",
}

func (d Deps) resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	if r, ok := builtinKinds[gvk]; ok {
		return gvk.GroupVersion().WithResource(r), nil
	}
	// an operator's kind: one discovery request for its group version
	list, err := d.Client.Discovery().ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if err == nil {
		for _, r := range list.APIResources {
			if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
				return gvk.GroupVersion().WithResource(r.Name), nil
			}
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("the cluster does not serve %s %s (is its operator installed?)", gvk.GroupVersion(), gvk.Kind)
}

// apply makes or updates a service's objects by server-side apply. An
// object in the way that is not this service's is reported, never taken
// over (DESIGN.md, "Ownership").
func (d Deps) apply(ctx context.Context, service string, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		gvr, err := d.resource(o.GroupVersionKind())
		if err != nil {
			return err
		}
		rc := d.Dynamic.Resource(gvr).Namespace(d.Namespace)
		cur, err := rc.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err == nil && cur.GetLabels()[LabelService] != service {
			return fmt.Errorf("%s %q exists and is not tug's service %q: tug will not take it over; remove it or choose another name", o.GetKind(), o.GetName(), service)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
		body, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		force := true
		if _, err := rc.Patch(ctx, o.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: kube.FieldManager, Force: &force}); err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), kube.TranslateError(err))
		}
	}
	return nil
}

// deleteObjects removes a service's objects (keep says which to leave:
// its data volume), each only while it is the service's.
func (d Deps) deleteObjects(ctx context.Context, service string, objs []*unstructured.Unstructured, keep func(*unstructured.Unstructured) bool) error {
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		if keep(o) {
			continue
		}
		gvr, err := d.resource(o.GroupVersionKind())
		if err != nil {
			return err
		}
		rc := d.Dynamic.Resource(gvr).Namespace(d.Namespace)
		cur, err := rc.Get(ctx, o.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return kube.TranslateError(err)
		}
		if cur.GetLabels()[LabelService] != service {
			continue // not ours: left alone
		}
		bg := metav1.DeletePropagationBackground
		if err := rc.Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	return nil
}
