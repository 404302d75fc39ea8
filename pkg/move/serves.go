package move

import (
	"context"
	"errors"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

// endpointsTimeout bounds the wait for the target's Service to list a ready
// unit once the units are ready (the endpoint controller's lag).
const endpointsTimeout = 30 * time.Second

// servesThere waits until the target's web Service lists a ready unit, so
// the source is removed only once the target answers. Apps with no web
// process, not routable or in maintenance have nothing to wait for.
func servesThere(ctx context.Context, d deploy.Deps, appName string) error {
	a, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, appName)
	if err != nil {
		return err
	}
	if _, web := a.Processes[app.WebProcess]; !web || a.Processes[app.WebProcess].Units() == 0 || a.Unroutable || a.Maintenance {
		return nil
	}
	d.Progress.Update("waiting for the new copy's Service to list a ready unit")
	lw := kube.EndpointSlices(d.Client, d.Namespace, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + render.ServiceName(appName)})
	wctx, cancel := context.WithTimeout(ctx, endpointsTimeout)
	defer cancel()
	err = kube.Until(wctx, lw, func(slices map[string]*discoveryv1.EndpointSlice) (bool, error) {
		for _, sl := range slices {
			for _, e := range sl.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if apierrors.IsForbidden(err) {
		return nil // the developer Role need not read EndpointSlices: the units are ready
	}
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the units run, but Service %s lists no ready unit after %s", render.ServiceName(appName), endpointsTimeout)
	}
	return err
}
