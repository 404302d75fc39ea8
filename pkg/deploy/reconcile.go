package deploy

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/rollout"
)

// InterruptedReason is the failure reason of a release whose rollout stopped.
func InterruptedReason(why string) string {
	return "its rollout was interrupted before every unit ran it: " + why
}

// settle records how release v's rollout ended when Roll returns early: the
// release is interrupted, unless the app record already names it (only a
// status write after the record's failed) — then it is deployed. It writes
// only a release that still says pending, and uses a fresh short deadline,
// since ctx may be what was cancelled. It returns the release's status as
// it now stands ("" when unknown). It is best effort: what it cannot write,
// the next command that takes the lock reconciles.
func settle(ctx context.Context, store *app.Store, appName string, v int, cause error) app.Status {
	ctx, cancel := Detached(ctx)
	defer cancel()
	var st app.Status
	// through a short outage (the API server restarting), try again
	// until the deadline rather than leave the release pending
	err := kube.Retry(ctx, func(ctx context.Context) error {
		var err error
		st, err = settleOnce(ctx, store, appName, v, cause)
		return err
	})
	if err != nil {
		return ""
	}
	return st
}

func settleOnce(ctx context.Context, store *app.Store, appName string, v int, cause error) (app.Status, error) {
	r, _, err := store.GetRelease(ctx, appName, v)
	if err != nil {
		return "", err
	}
	if r.Status != app.StatusPending {
		return r.Status, nil
	}
	fresh := &app.Store{Client: store.Client, Namespace: store.Namespace}
	a, err := fresh.GetApp(ctx, appName)
	if err != nil && kube.Retryable(err) {
		return "", err // settle tries again
	}
	// a record that cannot be read (gone, forbidden) does not name v: the
	// release is interrupted, as a pending one must never stay
	if err == nil && a.Release == v {
		if err := store.SetReleaseStatus(ctx, appName, v, app.StatusDeployed, ""); err != nil {
			return "", err
		}
		return app.StatusDeployed, nil
	}
	why := "tug stopped"
	switch {
	case cause == nil:
	case errors.Is(cause, context.Canceled):
		why = "the command was cancelled (Ctrl-C or SIGTERM)"
	case errors.Is(cause, context.DeadlineExceeded):
		why = "the command ran out of time"
	default:
		why = cause.Error()
	}
	if err := store.SetReleaseStatus(ctx, appName, v, app.StatusInterrupted, InterruptedReason(why)); err != nil {
		return "", err
	}
	return app.StatusInterrupted, nil
}

// Reconcile settles the releases a stopped tug left behind, so no release
// says pending once a later command has looked. Call it holding the app's
// lock: then no rollout is under way, and a pending release is one whose
// tug was killed, lost its lock or could not write how it ended.
//
// The newest release after the record's that is pending or interrupted is
// recorded as deployed when every one of its processes' Deployments runs it
// and has rolled out (the cluster finished what tug started); every other
// pending release becomes interrupted. A pending release the record already
// names is deployed, a second "deployed" release is superseded, and a
// release numbered past the record's LastRelease is counted. It returns the
// app record as it stands afterwards.
func Reconcile(ctx context.Context, client kubernetes.Interface, store *app.Store, a *app.App) (*app.App, error) {
	rels, err := store.ListReleases(ctx, a.Name)
	if err != nil {
		return nil, err
	}
	// A tug killed between storing its release and counting it in the
	// record left a release numbered past LastRelease: count it, or every
	// later deploy would try that number again.
	if len(rels) > 0 && rels[0].Version > a.LastRelease {
		newest := rels[0].Version
		if a, err = store.UpdateApp(ctx, a.Name, func(x *app.App) error {
			x.LastRelease = max(x.LastRelease, newest)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	candidate, stale := unsettled(a, rels)
	if !stale && candidate == nil {
		return a, nil
	}
	if candidate != nil {
		finished, err := finishedByCluster(ctx, client, store, a, candidate)
		if err != nil {
			return nil, err
		}
		if finished {
			if a, err = store.GetApp(ctx, a.Name); err != nil {
				return nil, err
			}
			// older pending releases are still to settle
			if rels, err = store.ListReleases(ctx, a.Name); err != nil {
				return nil, err
			}
		}
	}
	return a, settleAll(ctx, store, a, rels)
}

// unsettled finds, in rels (newest first), the newest unfinished release
// after the record's (pending or interrupted), and whether any release's
// status is stale (pending, or deployed but not the record's).
func unsettled(a *app.App, rels []*app.Release) (candidate *app.Release, stale bool) {
	for _, r := range rels {
		switch {
		case r.Status == app.StatusPending:
			stale = true
		case r.Status == app.StatusDeployed && r.Version != a.Release:
			stale = true
		case r.Status == app.StatusCanary && a.Canary == nil:
			// a promote stopped between its record and status writes (the
			// record's release), or a canary that ended without its status
			stale = true
		}
		if candidate == nil && r.Version > a.Release && (r.Status == app.StatusPending || r.Status == app.StatusInterrupted) {
			candidate = r
		}
	}
	return candidate, stale
}

// finishedByCluster records candidate as deployed when every one of its
// processes' Deployments runs it and has rolled out: the cluster finished
// what a stopped tug started.
func finishedByCluster(ctx context.Context, client kubernetes.Interface, store *app.Store, a *app.App, candidate *app.Release) (bool, error) {
	deps, err := client.AppsV1().Deployments(store.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(a.Name)})
	if err != nil {
		return false, kube.TranslateError(err)
	}
	if !runsFully(deps.Items, candidate) {
		return false, nil
	}
	return true, markDeployed(ctx, store, a, candidate, a.Release, 0)
}

// settleAll gives every release left pending or deployed its status as
// the record a now says: the record's release is deployed, another
// pending one interrupted, another deployed one superseded.
func settleAll(ctx context.Context, store *app.Store, a *app.App, rels []*app.Release) error {
	for _, r := range rels {
		var err error
		switch {
		case (r.Status == app.StatusPending || r.Status == app.StatusCanary && a.Canary == nil) && r.Version == a.Release:
			err = store.SetReleaseStatus(ctx, a.Name, r.Version, app.StatusDeployed, "")
		case r.Status == app.StatusPending:
			err = store.SetReleaseStatus(ctx, a.Name, r.Version, app.StatusInterrupted,
				InterruptedReason(fmt.Sprintf("the tug deploying it stopped; the units run %s", runningOf(a))))
		case r.Status == app.StatusDeployed && r.Version != a.Release:
			err = store.SetReleaseStatus(ctx, a.Name, r.Version, app.StatusSuperseded, "")
		case r.Status == app.StatusCanary && a.Canary == nil:
			err = store.SetReleaseStatus(ctx, a.Name, r.Version, app.StatusInterrupted,
				InterruptedReason("its canary ended while the tug ending it stopped"))
		}
		if err != nil && !app.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func runningOf(a *app.App) string {
	if a.Release == 0 {
		return "no release"
	}
	return fmt.Sprintf("v%d", a.Release)
}

// runsFully reports whether each of r's processes has a Deployment whose
// pod template is r's and whose rollout has finished.
func runsFully(deps []appsv1.Deployment, r *app.Release) bool {
	byProc := map[string]*appsv1.Deployment{}
	for i := range deps {
		if render.IsCanary(deps[i].Labels) {
			continue // a canary's units say nothing of what the process runs
		}
		byProc[deps[i].Labels[kube.LabelProcess]] = &deps[i]
	}
	for proc := range r.Processes {
		d := byProc[proc]
		if d == nil || d.Spec.Template.Labels[kube.LabelRelease] != strconv.Itoa(r.Version) || !rollout.RolledOut(d) {
			return false
		}
	}
	return len(r.Processes) > 0
}
