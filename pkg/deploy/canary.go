package deploy

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tug.dev/tug/pkg/kube"
)

// The Services of a canary's split route (pkg/render renders them).

// applyTrackServices applies the Services of a split route, before the
// route that names them.
func applyTrackServices(ctx context.Context, d Deps, svcs []*corev1.Service, opts metav1.PatchOptions) error {
	for _, svc := range svcs {
		err := write{"service", svc.Name, svc, func(n string, b []byte, o metav1.PatchOptions) error {
			_, err := d.Client.CoreV1().Services(d.Namespace).Patch(ctx, n, types.ApplyPatchType, b, o)
			return err
		}}.apply(opts)
		if err != nil {
			return err
		}
	}
	return nil
}

// removeStaleTrackServices deletes the Services of a split that keep does
// not name (after the routes no longer name them): one LIST.
func removeStaleTrackServices(ctx context.Context, d Deps, appName string, keep []*corev1.Service) error {
	svcs := d.Client.CoreV1().Services(d.Namespace)
	list, err := svcs.List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName) + "," + kube.LabelTrack})
	if err != nil {
		return kube.TranslateError(err)
	}
	for _, s := range list.Items {
		if !kube.Owned(s.Labels, appName) || slices.ContainsFunc(keep, func(k *corev1.Service) bool { return k.Name == s.Name }) {
			continue
		}
		if err := svcs.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	return nil
}
