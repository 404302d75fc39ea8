package deploy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/usage"
)

// Moving an app between clusters ('tug app pool set' to a pool that tug's
// cluster map puts in another cluster), in steps that keep it serving:
//
//	(a) copy its records into the target, the copy marked as a move's target
//	(b) roll its release out there on the new pool, and wait until it runs
//	(c) mark the source copy superseded: from here the target serves
//	(d) drop the target's mark
//	(e) remove the app from the source
//
// all under the app's deploy lock in the source. A failure before (c)
// removes the target copy it made (recognised by its mark: the same
// clusters and start as the source's) and leaves the app serving where it
// was; an app of that name it did not make is never touched. A tug
// killed midway leaves marked copies (app.Move) from which the cluster
// lookup picks the one that serves; Move run again removes a target copy
// left before (c) and starts over, and FinishMove completes one left after.

// moveCleanupTimeout bounds the undo of a failed move, which runs after the
// command's own context may be gone (Ctrl-C).
const moveCleanupTimeout = 2 * time.Minute

// MoveOptions tune Move.
type MoveOptions struct {
	// Pool is the pool the app moves to, in the target cluster.
	Pool string
	// From and To name the source and target clusters in marks and messages.
	From, To string
	// Timeout: the target rollout fails when it makes no progress this long.
	Timeout time.Duration
	// DryRun says what would happen and changes nothing.
	DryRun bool
}

// MoveEnd is one side of a move.
type MoveEnd struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
}

// MoveResult is what a move did; its JSON shape is documented in
// docs/output.md.
type MoveResult struct {
	App  string  `json:"app"`
	Pool string  `json:"pool"`
	From MoveEnd `json:"from"`
	To   MoveEnd `json:"to"`
	// Status is "moved"; "dry-run" with Plan saying what would happen;
	// "failed" (the app still serves in From, and nothing of it is left in
	// To unless Failure says so); or "unfinished" (the app serves in To,
	// but its old copy in From is still there: the move runs again).
	Status string   `json:"status"`
	Plan   []string `json:"plan,omitempty"`
	// Release is the release the app runs in the target (0: never deployed).
	Release int `json:"release"`
	// Serving is where the app serves now: To once moved (or unfinished),
	// From otherwise.
	Serving MoveEnd `json:"serving"`
	// Failure says why a failed or unfinished move stopped: the target
	// rollout's diagnosis (class image-pull, crash, ...), or class
	// ClassError with the error's message; with "moved", what is left of
	// the old copy to report (units stuck terminating).
	Failure    *Failure `json:"failure,omitempty"`
	DurationMS int64    `json:"durationMs"`
}

// ClassError is the failure class of a move stopped by anything but a
// failed rollout (an API error, a Service that lists no ready unit).
const ClassError Class = "error"

// moveFailure is why a move stopped, for its result.
func moveFailure(err error) *Failure {
	var rolled *Error
	if errors.As(err, &rolled) && rolled.Result != nil && rolled.Result.Failure != nil {
		f := *rolled.Result.Failure
		return &f
	}
	return &Failure{Class: ClassError, Message: err.Error()}
}

// MoveError is a move that failed before the target took over: the app
// still serves in the source.
type MoveError struct {
	App, From, To string
	Err           error
	// CleanupErr: removing the target copy failed too; it is left marked,
	// and so is the source, and the next move removes it.
	CleanupErr error
	// Foreign: the target holds an app of the same name that this move
	// did not make (created meanwhile); it is left alone.
	Foreign bool
	// MarkErr: dropping the source's mark failed; 'tug app info' goes on
	// calling the move unfinished until a move or pool set clears it.
	MarkErr error
}

func (e *MoveError) Error() string {
	msg := fmt.Sprintf("moving app %q to cluster %q failed: %v; it still serves in cluster %q", e.App, e.To, e.Err, e.From)
	switch {
	case e.CleanupErr != nil:
		msg += fmt.Sprintf("; removing its copy from cluster %q failed too (%v): running 'tug app pool set' again removes it first", e.To, e.CleanupErr)
	case e.Foreign:
		msg += fmt.Sprintf("; an app of the same name that this move did not make is in cluster %q now, and tug left it alone", e.To)
	default:
		msg += fmt.Sprintf(", and nothing of it is left in cluster %q", e.To)
	}
	if e.MarkErr != nil {
		msg += fmt.Sprintf("; dropping the move's mark from its copy in cluster %q failed (%v), so 'tug app info' still calls the move unfinished: 'tug app pool set' to its current pool clears it", e.From, e.MarkErr)
	}
	return msg
}

func (e *MoveError) Unwrap() error { return e.Err }

// UnfinishedMoveError: the target serves, but the source copy could not be
// removed or the target's mark dropped; running the move again finishes it.
type UnfinishedMoveError struct {
	App, From, To string
	Err           error
}

func (e *UnfinishedMoveError) Error() string {
	return fmt.Sprintf("app %q serves in cluster %q now, but the move from cluster %q is unfinished: %v; run 'tug app pool set' again to finish it", e.App, e.To, e.From, e.Err)
}

func (e *UnfinishedMoveError) Unwrap() error { return e.Err }

// Move moves appName from the cluster src reaches to the one dst reaches,
// onto pool o.Pool. A move that failed or is unfinished (a *MoveError or
// *UnfinishedMoveError) comes with its result too, saying why and where
// the app serves; other errors (nothing was attempted) with none.
func Move(ctx context.Context, src, dst Deps, appName string, o MoveOptions) (*MoveResult, error) {
	start := time.Now()
	if src.Progress == nil {
		src.Progress = noProgress{}
	}
	if dst.Progress == nil {
		dst.Progress = src.Progress
	}
	from := &app.Store{Client: src.Client, Namespace: src.Namespace}
	to := &app.Store{Client: dst.Client, Namespace: dst.Namespace}
	a, err := from.GetApp(ctx, appName)
	if err != nil {
		return nil, err
	}
	if a.Move != nil && a.Move.Superseded {
		return nil, fmt.Errorf("this copy of app %q is superseded: it moved to cluster %q; see 'tug app info %s'", appName, a.Move.To, appName)
	}
	if len(a.Volumes) > 0 {
		return nil, usage.Errorf("app %q binds volumes (%s), whose data cannot move between clusters; unbind them first ('tug volume unbind')", appName, strings.Join(a.Volumes, ", "))
	}
	if err := refuseStaged(ctx, from, a); err != nil {
		return nil, err
	}
	res := &MoveResult{App: appName, Pool: o.Pool, Release: a.Release,
		From: MoveEnd{Cluster: o.From, Namespace: src.Namespace}, To: MoveEnd{Cluster: o.To, Namespace: dst.Namespace}}
	res.Serving = res.From
	stale, err := staleTarget(ctx, to, appName, a.Move, o)
	if err != nil {
		return nil, err
	}
	if o.DryRun {
		res.Status = "dry-run"
		if stale {
			res.Plan = append(res.Plan, fmt.Sprintf("remove the copy an earlier, unfinished move left in cluster %s (namespace %s)", o.To, dst.Namespace))
		}
		res.Plan = append(res.Plan, fmt.Sprintf("copy app %s's record, release history, config and credentials to cluster %s (namespace %s)", appName, o.To, dst.Namespace))
		if a.Release > 0 {
			res.Plan = append(res.Plan, fmt.Sprintf("roll out v%d's image and config there as release v%d on pool %s, and wait until it runs", a.Release, a.LastRelease+1, o.Pool))
		} else {
			res.Plan = append(res.Plan, fmt.Sprintf("set its pool to %s there (it was never deployed)", o.Pool))
		}
		res.Plan = append(res.Plan, fmt.Sprintf("remove it from cluster %s (namespace %s)", o.From, src.Namespace))
		res.DurationMS = time.Since(start).Milliseconds()
		return res, nil
	}

	lock, err := AcquireLock(ctx, src.Client, src.Namespace, appName, src.Holder)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if a, err = from.GetApp(ctx, appName); err != nil {
		return nil, err
	}
	if a, err = Reconcile(ctx, src.Client, from, a); err != nil {
		return nil, err
	}
	if err := refuseStaged(ctx, from, a); err != nil {
		return nil, err
	}
	// again under the lock: another move may have come and gone meanwhile
	if stale, err = staleTarget(ctx, &app.Store{Client: dst.Client, Namespace: dst.Namespace}, appName, a.Move, o); err != nil {
		return nil, err
	}
	if stale {
		src.Progress.Update(fmt.Sprintf("removing the copy an earlier move left in cluster %s", o.To))
		if err := Remove(ctx, dst, appName, RemoveOptions{}); err != nil {
			return nil, fmt.Errorf("removing the copy of app %q an earlier move left in cluster %q: %w", appName, o.To, err)
		}
	}
	started := time.Now().UTC()
	mark := &app.Move{Role: app.MoveTarget, From: o.From, To: o.To, Pool: o.Pool, StartedAt: started}
	if _, err := from.UpdateApp(ctx, appName, func(x *app.App) error {
		x.Move = &app.Move{Role: app.MoveSource, From: o.From, To: o.To, Pool: o.Pool, StartedAt: started}
		return nil
	}); err != nil {
		return nil, err
	}
	fail := func(err error) (*MoveResult, error) {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), moveCleanupTimeout)
		defer cancel()
		me := &MoveError{App: appName, From: o.From, To: o.To, Err: err}
		// Only the copy this move made goes: an app someone else put there
		// (created between the check and the copy) is theirs.
		there, gerr := (&app.Store{Client: dst.Client, Namespace: dst.Namespace}).GetApp(wctx, appName)
		switch {
		case app.IsNotFound(gerr):
		case gerr != nil:
			me.CleanupErr = gerr
		case there.Move.SameMove(mark) && there.Move.Role == app.MoveTarget:
			src.Progress.Update(fmt.Sprintf("removing the copy from cluster %s", o.To))
			if rerr := Remove(wctx, dst, appName, RemoveOptions{}); rerr != nil && !app.IsNotFound(rerr) {
				me.CleanupErr = rerr
			}
		default:
			me.Foreign = true
		}
		// The source keeps its mark while its copy is left in the target,
		// so that the next move recognises that copy and removes it.
		if me.CleanupErr == nil {
			if _, merr := from.UpdateApp(wctx, appName, func(x *app.App) error { x.Move = nil; return nil }); merr != nil {
				me.MarkErr = merr
			}
		}
		res.Status, res.Failure = "failed", moveFailure(err)
		if me.CleanupErr != nil {
			res.Failure.Message += fmt.Sprintf("; removing its copy from cluster %q failed too (%v)", o.To, me.CleanupErr)
		}
		if me.MarkErr != nil {
			res.Failure.Message += fmt.Sprintf("; dropping the move's mark from the copy in cluster %q failed (%v)", o.From, me.MarkErr)
		}
		res.DurationMS = time.Since(start).Milliseconds()
		return res, me
	}

	// (a)
	src.Progress.Update(fmt.Sprintf("copying app %s to cluster %s", appName, o.To))
	if _, err := from.CopyTo(ctx, to, appName, mark); err != nil {
		return fail(err)
	}
	// (b)
	if a.Release > 0 {
		change := SettingsChange(app.KindPool, fmt.Sprintf("pool %s (moved from cluster %s)", o.Pool, o.From), func(_ *app.App, r *app.Release) error {
			r.Pool = o.Pool
			return nil
		})
		// No rollback in the target (the source still serves), and no
		// release phase: with no config staged (refuseStaged), the change
		// starts from the deployed release, so nothing changes but where
		// the units run.
		rolled, err := Roll(ctx, dst, appName, change, Options{Timeout: o.Timeout, NoRollback: true, SkipReleasePhase: true})
		if err != nil {
			return fail(err)
		}
		res.Release = rolled.Release
	} else if _, err := to.UpdateApp(ctx, appName, func(x *app.App) error { x.Pool = o.Pool; return nil }); err != nil {
		return fail(err)
	}
	if err := servesThere(ctx, dst, appName); err != nil {
		return fail(err)
	}
	if err := lock.Lost(); err != nil {
		return fail(err)
	}
	// (c)
	if _, err := from.UpdateApp(ctx, appName, func(x *app.App) error {
		if x.Move == nil {
			return errors.New("the source copy lost its move mark")
		}
		x.Move.Superseded = true
		return nil
	}); err != nil {
		return fail(err)
	}
	// (d), (e)
	res.Serving = res.To
	err = finish(ctx, src, to, appName, true)
	res.Status, err = finishedMove(appName, o, err)
	if err != nil {
		res.Failure = moveFailure(err)
	}
	res.DurationMS = time.Since(start).Milliseconds()
	return res, err
}

// finishedMove is how a move whose target serves ended, given the error
// from finishing it: "moved", or "unfinished" with an
// *UnfinishedMoveError (running the move again finishes it). Units of the
// old copy stuck terminating are not an unfinished move: its records are
// gone, and a rerun would only roll a pointless release; the move is
// done, with that error to report.
func finishedMove(appName string, o MoveOptions, err error) (string, error) {
	var stuck *StuckUnitsError
	switch {
	case err == nil:
		return "moved", nil
	case errors.As(err, &stuck):
		return "moved", fmt.Errorf("app %q moved to cluster %q, but in cluster %q %w", appName, o.To, o.From, err)
	}
	return "unfinished", &UnfinishedMoveError{App: appName, From: o.From, To: o.To, Err: err}
}

// refuseStaged refuses to move a deployed app with config staged
// ('env set --no-restart') that does not run yet: a move moves what runs,
// and its rollout there would start from the staged release (BaseRelease)
// and put that config live unseen, without its release phase. A
// never-deployed app runs nothing; its staged releases move as they are.
func refuseStaged(ctx context.Context, store *app.Store, a *app.App) error {
	if a.Release == 0 || a.LastRelease <= a.Release {
		return nil
	}
	rels, err := store.ListReleases(ctx, a.Name)
	if err != nil {
		return err
	}
	for _, r := range rels {
		if r.Status == app.StatusStaged && r.Version > a.Release {
			return usage.Errorf("app %q has config staged with 'env set --no-restart' (release v%d) that does not run yet, and a move moves what runs; roll it out first ('tug app deploy', or 'tug env set' without --no-restart), then move the app", a.Name, r.Version)
		}
	}
	return nil
}

// staleTarget checks what the target cluster holds of the app: nothing, or
// the copy an earlier move left before switching over (true): marked as
// the target of the very move the source's mark (own) records. Any other
// app of that name is in the way, a copy marked by another move included.
func staleTarget(ctx context.Context, to *app.Store, appName string, own *app.Move, o MoveOptions) (bool, error) {
	there, err := to.GetApp(ctx, appName)
	switch {
	case app.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	case there.Move != nil && there.Move.Role == app.MoveTarget:
		if own != nil && own.Role == app.MoveSource && !own.Superseded && there.Move.SameMove(own) {
			return true, nil
		}
		m := there.Move
		return false, usage.Errorf("app %q in cluster %q (namespace %q) is the copy of a move from cluster %q started %s, which this copy of the app did not start; tug will not remove it: if it is a leftover, remove it ('tug app remove %s --context ...')", appName, o.To, to.Namespace, m.From, m.StartedAt.Format(time.RFC3339), appName)
	}
	return false, usage.Errorf("an app %q already exists in cluster %q (namespace %q); tug will not overwrite it: remove one of the two ('tug app remove %s --context ...')", appName, o.To, to.Namespace, appName)
}

// finish drops the target's mark (d) and removes the superseded source
// copy (e); held says the caller holds the source's lock.
func finish(ctx context.Context, src Deps, to *app.Store, appName string, held bool) error {
	// A fresh store: the record changed under other stores (the rollout's)
	// since this one last read it.
	to = &app.Store{Client: to.Client, Namespace: to.Namespace}
	if _, err := to.UpdateApp(ctx, appName, func(x *app.App) error { x.Move = nil; return nil }); err != nil {
		return err
	}
	src.Progress.Update("removing the app from its old cluster")
	if held {
		return removeHeld(ctx, src, appName, RemoveOptions{})
	}
	return Remove(ctx, src, appName, RemoveOptions{})
}

// FinishMove completes a move that a killed tug left after the switch:
// serving is the copy that serves (marked as the move's target, or already
// unmarked), old reaches the cluster of the superseded source copy (which
// the lookup found superseded; gone meanwhile is fine). It refuses when
// old's copy is not superseded: that move never switched over, and Move
// redoes it. A target whose source no cluster holds is AdoptMove's.
func FinishMove(ctx context.Context, serving, old Deps, appName string) error {
	if serving.Progress == nil {
		serving.Progress = noProgress{}
	}
	if old.Progress == nil {
		old.Progress = serving.Progress
	}
	to := &app.Store{Client: serving.Client, Namespace: serving.Namespace}
	if old.Client == nil {
		return fmt.Errorf("finishing the move of app %q: no cluster to remove its old copy from", appName)
	}
	from := &app.Store{Client: old.Client, Namespace: old.Namespace}
	a, err := from.GetApp(ctx, appName)
	if app.IsNotFound(err) {
		_, err = to.UpdateApp(ctx, appName, func(x *app.App) error { x.Move = nil; return nil })
		return err
	}
	if err != nil {
		return err
	}
	if a.Move == nil || !a.Move.Superseded {
		return fmt.Errorf("the copy of app %q in namespace %q is not superseded: it still serves, so tug leaves it", appName, old.Namespace)
	}
	return finish(ctx, old, to, appName, false)
}

// MoveRolledOut reports whether a move's target copy, reached through d,
// had completed its rollout there when the move stopped: its deployed
// release is on the move's pool and every Deployment of the app runs that
// release, rolled out (kubectl rollout status's rule). A never-deployed
// app has only its pool to set. It says nothing of a copy with no target
// mark (false).
func MoveRolledOut(ctx context.Context, d Deps, appName string) (bool, error) {
	a, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, appName)
	if err != nil {
		return false, err
	}
	if a.Move == nil || a.Move.Role != app.MoveTarget {
		return false, nil
	}
	if a.Release == 0 {
		return a.Pool == a.Move.Pool, nil
	}
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	r, _, err := store.GetRelease(ctx, appName, a.Release)
	if app.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if r.Pool != a.Move.Pool || r.Status != app.StatusDeployed {
		return false, nil
	}
	deps, err := d.Client.AppsV1().Deployments(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.AppSelector(appName)})
	if err != nil {
		return false, kube.TranslateError(err)
	}
	units := 0
	for _, p := range a.Processes {
		units += int(p.Units())
	}
	if units > 0 && len(deps.Items) == 0 {
		return false, nil
	}
	for i := range deps.Items {
		dep := &deps.Items[i]
		if dep.Spec.Template.Labels[kube.LabelRelease] != strconv.Itoa(a.Release) || !rolledOut(dep, dep.Generation) {
			return false, nil
		}
	}
	return true, nil
}

// AdoptMove makes a move's target copy the app when the move's source is
// gone (removed, or its cluster left tug's map) without the move having
// switched over: only when its rollout had completed (MoveRolledOut), and
// only when asked ('tug app pool set --adopt'). It drops the copy's mark.
func AdoptMove(ctx context.Context, d Deps, appName string) error {
	ok, err := MoveRolledOut(ctx, d, appName)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the copy of app %q in namespace %q is not a move's completed new copy; tug will not make it the app", appName, d.Namespace)
	}
	_, err = (&app.Store{Client: d.Client, Namespace: d.Namespace}).UpdateApp(ctx, appName, func(x *app.App) error {
		if x.Move == nil || x.Move.Role != app.MoveTarget {
			return errors.New("its move mark changed meanwhile")
		}
		x.Move = nil
		return nil
	})
	return err
}

// AbandonMove gives up a move that a killed tug left before its switch,
// when the app is asked to stay where it serves ('tug app pool set' to a
// pool of its own cluster): under the app's lock in src it removes the
// copy the move was making, reached through dst (a zero Deps when there is
// none to remove: the tug was killed before copying), and drops src's
// mark. It does nothing when src's copy is not a move's serving source; a
// copy in dst that is not that move's target (its mark records another
// move, or none) is left alone.
func AbandonMove(ctx context.Context, src, dst Deps, appName string) error {
	if src.Progress == nil {
		src.Progress = noProgress{}
	}
	from := &app.Store{Client: src.Client, Namespace: src.Namespace}
	a, err := from.GetApp(ctx, appName)
	if err != nil {
		return err
	}
	if a.Move == nil || a.Move.Role != app.MoveSource || a.Move.Superseded {
		return nil
	}
	lock, err := AcquireLock(ctx, src.Client, src.Namespace, appName, src.Holder)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if a, err = from.GetApp(ctx, appName); err != nil {
		return err
	}
	if a.Move == nil || a.Move.Role != app.MoveSource || a.Move.Superseded {
		return nil
	}
	if dst.Client != nil {
		to := &app.Store{Client: dst.Client, Namespace: dst.Namespace}
		there, err := to.GetApp(ctx, appName)
		switch {
		case app.IsNotFound(err):
		case err != nil:
			return err
		case there.Move != nil && there.Move.Role == app.MoveTarget && there.Move.SameMove(a.Move):
			src.Progress.Update(fmt.Sprintf("removing the copy the unfinished move to cluster %s left there", a.Move.To))
			if err := Remove(ctx, dst, appName, RemoveOptions{}); err != nil {
				return fmt.Errorf("removing the copy of app %q an unfinished move left in cluster %q: %w", appName, a.Move.To, err)
			}
		}
	}
	_, err = from.UpdateApp(ctx, appName, func(x *app.App) error {
		if x.Move != nil && !x.Move.Superseded {
			x.Move = nil
		}
		return nil
	})
	return err
}

// endpointsTimeout bounds the wait for the target's Service to list a ready
// unit once the units are ready (the endpoint controller's lag).
const endpointsTimeout = 30 * time.Second

// servesThere waits until the target's web Service lists a ready unit, so
// the source is removed only once the target answers. Apps with no web
// process, not routable or in maintenance have nothing to wait for.
func servesThere(ctx context.Context, d Deps, appName string) error {
	a, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, appName)
	if err != nil {
		return err
	}
	if _, web := a.Processes[app.WebProcess]; !web || a.Processes[app.WebProcess].Units() == 0 || a.Unroutable || a.Maintenance {
		return nil
	}
	d.Progress.Update("waiting for the new copy's Service to list a ready unit")
	lw := kube.EndpointSlices(d.Client, d.Namespace, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + ServiceName(appName)})
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
		return fmt.Errorf("the units run, but Service %s lists no ready unit after %s", ServiceName(appName), endpointsTimeout)
	}
	return err
}
