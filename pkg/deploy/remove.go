package deploy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/text"
)

// Remove deletes every object of an app (Deployments and their units,
// Services, release records, one-off run pods) and waits until its units
// are gone. The app's record goes last, so an interrupted remove can be run
// again.
func Remove(ctx context.Context, d Deps, appName string) error {
	if d.Progress == nil {
		d.Progress = noProgress{}
	}
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	if _, err := store.GetApp(ctx, appName); err != nil {
		return err
	}
	lock, err := AcquireLock(ctx, d.Client, d.Namespace, appName, d.Holder)
	if err != nil {
		return err
	}
	defer lock.Unlock()

	ns, sel := d.Namespace, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)}
	background := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &background}
	d.Progress.Update("removing deployments")
	if err := d.Client.AppsV1().Deployments(ns).DeleteCollection(ctx, del, sel); err != nil {
		return kube.TranslateError(err)
	}
	if err := d.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).DeleteCollection(ctx, del, sel); err != nil {
		return kube.TranslateError(err)
	}
	if err := d.Client.NetworkingV1().Ingresses(ns).DeleteCollection(ctx, del, sel); err != nil {
		return kube.TranslateError(err)
	}
	if err := d.Client.NetworkingV1().NetworkPolicies(ns).DeleteCollection(ctx, del, sel); err != nil {
		return kube.TranslateError(err)
	}
	svcs, err := d.Client.CoreV1().Services(ns).List(ctx, sel)
	if err != nil {
		return kube.TranslateError(err)
	}
	for _, s := range svcs.Items {
		if err := d.Client.CoreV1().Services(ns).Delete(ctx, s.Name, del); err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	if err := d.Client.CoreV1().Pods(ns).DeleteCollection(ctx, del, sel); err != nil {
		return kube.TranslateError(err)
	}
	if err := waitNoPods(ctx, d, appName); err != nil {
		return err
	}
	d.Progress.Update("removing release records")
	if err := d.Client.CoreV1().Secrets(ns).DeleteCollection(ctx, del, sel); err != nil {
		return kube.TranslateError(err)
	}
	// the record, and any other ConfigMap of the app
	if err := d.Client.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, del, sel); err != nil {
		return kube.TranslateError(err)
	}
	return nil
}

// waitNoPods watches the app's pods until none is left.
func waitNoPods(ctx context.Context, d Deps, appName string) error {
	last := -1
	err := kube.WaitPods(ctx, d.Client, d.Namespace, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)}, func(pods map[string]*corev1.Pod) bool {
		if n := len(pods); n > 0 && n != last {
			last = n
			d.Progress.Update(fmt.Sprintf("waiting for %d %s to stop", n, text.Plural(n, "unit", "units")))
		}
		return len(pods) == 0
	})
	return kube.TranslateError(err)
}
