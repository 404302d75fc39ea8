package deploy

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/rollout"
)

// Leaving maintenance hands the app's traffic from the maintenance page back
// to its web units. A unit that is not ready is no endpoint of the Service,
// so switching to units that are still starting makes the router answer
// with its own error (Traefik: a 503 through a Gateway, a 404 through an
// Ingress) until they are. So maintenance off first waits for the web units
// to be ready (before the record changes: when they never are, the app
// stays in maintenance), then switches the Service, and removes the page
// only once the router serves the units (pageDrop).

// leavesPage says whether the change from before to after takes the traffic
// of release r off the maintenance page.
func leavesPage(before, after *app.App, r *app.Release) bool {
	_, web := r.Processes[app.WebProcess]
	return web && before.Maintenance && !after.Maintenance && !after.Unroutable
}

// NoUnitsError is maintenance off for an app with no web unit to answer.
type NoUnitsError struct{ App string }

func (e *NoUnitsError) Error() string {
	return fmt.Sprintf("app %q has no web units to serve its requests, so it stays in maintenance; start them first with 'tug app scale %s web=1'", e.App, e.App)
}

// awaitServing waits until the web units are all ready (the web Deployment
// has rolled out), diagnosing units that fail the way a rollout does: a
// *rollout.Failure when they do, or make no progress for idle.
func awaitServing(ctx context.Context, d Deps, a *app.App, r *app.Release, idle time.Duration) error {
	name := render.DeploymentName(a.Name, app.WebProcess)
	dep, err := d.Client.AppsV1().Deployments(d.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil // nothing to wait for: applying the release makes it
	case err != nil:
		return kube.TranslateError(err)
	case dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0:
		return &NoUnitsError{App: a.Name}
	case rollout.RolledOut(dep):
		return nil
	}
	d.Progress.Update("waiting for the web units to be ready before leaving maintenance")
	err = (&rollout.Watch{Client: d.Client, Namespace: d.Namespace, App: a.Name, Release: r.Version, Purpose: rollout.PurposeScale,
		Generations: map[string]int64{name: dep.Generation}, Idle: idle, Progress: d.Progress}).Wait(ctx)
	if f, ok := err.(*rollout.Failure); ok {
		f.Message = "the app stays in maintenance: " + f.Message
	}
	return err
}

// pageDrop removes the maintenance page of an app that left maintenance.
func pageDrop(ctx context.Context, d Deps, appName string) error {
	deps := d.Client.AppsV1().Deployments(d.Namespace)
	name := render.MaintenanceName(appName)
	return DeleteOwned(ctx, appName, func() (metav1.Object, error) {
		return deps.Get(ctx, name, metav1.GetOptions{})
	}, func() error {
		return deps.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
	})
}
