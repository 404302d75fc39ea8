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
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/progress"
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
// all under the app's deploy lock in the source, and from (a) to (d) under
// its lock in the target too. A failure before (c)
// removes the target copy it made (recognised by its mark: the same
// clusters and start as the source's) and leaves the app serving where it
// was; an app of that name it did not make is never touched. A tug
// killed midway leaves marked copies (app.Move) from which the cluster
// lookup picks the one that serves; Move run again removes a target copy
// left before (c) and starts over, and FinishMove completes one left after.
// A move to yet another cluster gives the earlier move up first
// (GiveUpEarlier); a move's new copy is never a move's source. Only a
// move's own mark is ever dropped (dropMark), and every change to a
// copy's record is made under that copy's lock (lockApp).

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
	// GiveUpEarlier lets the move start from the serving source of an
	// unfinished move to another cluster than To (cut short before its
	// switch): under the lock Move gives that move up first, removing its
	// half-made copy, looked for in Earlier (a copy is removed only if it
	// carries that move's mark). Without it such a source is refused: the
	// new move's mark would erase the only record of that copy. The caller
	// (PoolSet) vouches that Earlier covers the cluster the copy may be in.
	GiveUpEarlier bool
	Earlier       []Deps
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
	// GaveUp names the cluster of an earlier unfinished move of the app
	// that this move gave up first (its half-made copy removed).
	GaveUp string `json:"gaveUp,omitempty"`
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
		msg += fmt.Sprintf("; dropping the move's mark from its copy in cluster %q failed (%v), so 'tug app info' still calls the move unfinished: 'tug app pool set' to its current pool clears it, restarting nothing", e.From, e.MarkErr)
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
		src.Progress = progress.Nop{}
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
	// what may move: checked now, and again under the lock (lockApp),
	// as another tug may have changed the app meanwhile
	check := func(a *app.App) error {
		if err := movableSource(a, o); err != nil {
			return err
		}
		if len(a.Volumes) > 0 {
			return usage.Errorf("app %q binds volumes (%s), whose data cannot move between clusters; unbind them first ('tug volume unbind')", appName, strings.Join(a.Volumes, ", "))
		}
		return refuseStaged(ctx, from, a)
	}
	if err := check(a); err != nil {
		return nil, err
	}
	res := &MoveResult{App: appName, Pool: o.Pool, Release: a.Release,
		From: MoveEnd{Cluster: o.From, Namespace: src.Namespace}, To: MoveEnd{Cluster: o.To, Namespace: dst.Namespace}}
	res.Serving = res.From
	stale, err := staleTarget(ctx, to, appName, a.Move, o)
	if err != nil {
		return nil, err
	}
	// the source of an unfinished move to another cluster: allowed by check
	// only with GiveUpEarlier, and given up first
	earlier := servingSource(a.Move) && a.Move.To != o.To
	if o.DryRun {
		res.Status = "dry-run"
		if earlier {
			res.Plan = append(res.Plan, fmt.Sprintf("give up the unfinished move to cluster %s (started %s): remove the copy it left there, if any", a.Move.To, a.Move.StartedAt.Format(time.RFC3339)))
		}
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

	t, err := Begin(ctx, src, appName, check)
	if err != nil {
		return nil, err
	}
	defer t.End()
	ctx, a, from = t.ctx, t.app, t.store
	// The target's lock too, from before the copy until its mark is
	// dropped: no other tug changes or removes the new copy (a remove
	// tug suggests for leftovers) while this move makes it, checks it
	// and switches to it. It ends with the source's lock as well.
	tlock, err := lock.Acquire(ctx, dst.lockRequest(appName))
	if err != nil {
		return nil, t.Explain(err)
	}
	tt := Hold(ctx, dst, tlock)
	defer tt.End()
	to = tt.store
	// again under the locks: another move may have come and gone meanwhile
	if stale, err = staleTarget(tt.ctx, to, appName, a.Move, o); err != nil {
		return nil, tt.Explain(err)
	}
	if earlier = servingSource(a.Move) && a.Move.To != o.To; earlier {
		if err := removeMade(ctx, src, o.Earlier, appName, a.Move); err != nil {
			return nil, t.Explain(err)
		}
		res.GaveUp = a.Move.To
	}
	if stale {
		src.Progress.Update(fmt.Sprintf("removing the copy an earlier move left in cluster %s", o.To))
		if err := removeHeld(tt.ctx, dst, appName, RemoveOptions{}); err != nil {
			return nil, fmt.Errorf("removing the copy of app %q an earlier move left in cluster %q: %w", appName, o.To, tt.Explain(err))
		}
	}
	started := time.Now().UTC()
	mark := &app.Move{Role: app.MoveTarget, From: o.From, To: o.To, Pool: o.Pool, StartedAt: started}
	own := &app.Move{Role: app.MoveSource, From: o.From, To: o.To, Pool: o.Pool, StartedAt: started}
	if _, err := from.UpdateApp(ctx, appName, func(x *app.App) error { x.Move = own; return nil }); err != nil {
		return nil, t.Explain(err)
	}
	fail := func(err error) (*MoveResult, error) {
		err = tt.Explain(t.Explain(err))
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), moveCleanupTimeout)
		defer cancel()
		me := &MoveError{App: appName, From: o.From, To: o.To, Err: err}
		// Only the copy this move made goes (an app someone else put
		// there is theirs), and only while this move still holds the
		// target's lock: once it is lost, another tug may be using it.
		there, gerr := to.GetApp(wctx, appName)
		switch {
		case app.IsNotFound(gerr):
		case gerr != nil:
			me.CleanupErr = gerr
		case !there.Move.SameMove(mark) || there.Move.Role != app.MoveTarget:
			me.Foreign = true
		case tt.Lost() != nil:
			me.CleanupErr = tt.Lost()
		default:
			src.Progress.Update(fmt.Sprintf("removing the copy from cluster %s", o.To))
			if rerr := removeHeld(wctx, dst, appName, RemoveOptions{}); rerr != nil && !app.IsNotFound(rerr) {
				me.CleanupErr = rerr
			}
		}
		// The source keeps its mark while its copy is left in the target,
		// so that the next move recognises that copy and removes it; and
		// it is not ours to change once the source's lock is lost.
		if me.CleanupErr == nil {
			if merr := t.Lost(); merr != nil {
				me.MarkErr = merr
			} else if _, merr := dropMark(wctx, from, appName, own); merr != nil {
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
	if _, err := from.CopyTo(tt.ctx, to, appName, mark); err != nil {
		return fail(err)
	}
	if err := tt.Read(appName, nil); err != nil {
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
		rolled, err := roll(tt, change, Options{Timeout: o.Timeout, NoRollback: true, SkipReleasePhase: true}, time.Now())
		if err != nil {
			return fail(err)
		}
		res.Release = rolled.Release
	} else if _, err := to.UpdateApp(tt.ctx, appName, func(x *app.App) error { x.Pool = o.Pool; return nil }); err != nil {
		return fail(err)
	}
	if err := servesThere(tt.ctx, dst, appName); err != nil {
		return fail(err)
	}
	// The new copy must still be whole, as this move made it, before the
	// source gives way to it.
	if err := wholeCopy(tt.ctx, to, appName, mark, res.Release, o.Pool); err != nil {
		return fail(err)
	}
	if err := errors.Join(t.Lost(), tt.Lost()); err != nil {
		return fail(err)
	}
	// (c)
	if _, err := from.UpdateApp(ctx, appName, func(x *app.App) error {
		if !x.Move.SameMove(own) || x.Move.Role != app.MoveSource {
			return errors.New("the source copy's move mark changed meanwhile")
		}
		x.Move.Superseded = true
		return nil
	}); err != nil {
		return fail(err)
	}
	// (d), (e)
	res.Serving = res.To
	err = finish(t, tt, appName, own)
	res.Status, err = finishedMove(appName, o, err)
	if err != nil {
		res.Failure = moveFailure(err)
	}
	res.DurationMS = time.Since(start).Milliseconds()
	return res, err
}

// wholeCopy checks, under the target's lock, that the copy a move made is
// still there as it made it: its record carries the move's mark, and it
// runs the release the move rolled out (release, 0 for an app never
// deployed, which has only its pool set), deployed on the move's pool.
func wholeCopy(ctx context.Context, to *app.Store, appName string, mark *app.Move, release int, pool string) error {
	there, err := to.GetApp(ctx, appName)
	if err != nil {
		return fmt.Errorf("the new copy is not whole: %w", err)
	}
	switch {
	case there.Move == nil || !there.Move.SameMove(mark) || there.Move.Role != app.MoveTarget:
		return errors.New("the new copy's record no longer carries this move's mark")
	case there.Pool != pool:
		return fmt.Errorf("the new copy's pool is %q, not %q", there.Pool, pool)
	case there.Release != release:
		return fmt.Errorf("the new copy runs release v%d, not v%d as the move rolled out", there.Release, release)
	case release == 0:
		return nil
	}
	r, _, err := to.GetRelease(ctx, appName, release)
	if err != nil {
		return fmt.Errorf("the new copy is not whole: %w", err)
	}
	if r.Status != app.StatusDeployed {
		return fmt.Errorf("the new copy's release v%d is %s, not deployed", release, r.Status)
	}
	return nil
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
		return false, usage.Errorf("app %q in cluster %q (namespace %q) is the copy of a move from cluster %q started %s, which this copy of the app did not start; tug will not remove it: if it is a leftover, remove it ('tug app remove %s --move-copy --context ...')", appName, o.To, to.Namespace, m.From, m.StartedAt.Format(time.RFC3339), appName)
	}
	return false, usage.Errorf("an app %q already exists in cluster %q (namespace %q); tug will not overwrite it: remove one of the two ('tug app remove %s --context ...')", appName, o.To, to.Namespace, appName)
}

// finish drops the target's mark (d) and removes the superseded source
// copy (e): src holds the source copy's lock, dst the target's; m is the
// move, as the source's mark records it. Only that move's mark is dropped:
// a new copy marked by another move is not known to be this copy's
// successor, and then both copies stay, with an error.
func finish(src, dst *Txn, appName string, m *app.Move) error {
	if err := dst.Lost(); err != nil {
		return err
	}
	// A fresh store: the record changed under other stores (the rollout's)
	// since this one last read it.
	to := &app.Store{Client: dst.d.Client, Namespace: dst.d.Namespace}
	other, err := dropMark(dst.ctx, to, appName, &app.Move{Role: app.MoveTarget, From: m.From, To: m.To, StartedAt: m.StartedAt})
	if err != nil {
		return dst.Explain(err)
	}
	if other != nil {
		return fmt.Errorf("the new copy of app %q (namespace %q) carries the mark of another move (%s), not of the move that superseded its old copy; tug leaves both copies as they are", appName, to.Namespace, other.Describe())
	}
	if err := src.Lost(); err != nil {
		return err
	}
	src.d.Progress.Update("removing the app from its old cluster")
	return src.Explain(removeHeld(src.ctx, src.d, appName, RemoveOptions{}))
}

// errMarkKept ends the UpdateApp of a dropMark that changes nothing.
var errMarkKept = errors.New("mark kept")

// dropMark clears m's mark from appName's record in store: that side
// (m.Role) of that move (app.Move.SameMove), and no other. It returns the
// mark of another move it left in place (nil when it dropped m's, or the
// record had none). The check and the write are one compare-and-swap.
func dropMark(ctx context.Context, store *app.Store, appName string, m *app.Move) (*app.Move, error) {
	var other *app.Move
	_, err := store.UpdateApp(ctx, appName, func(x *app.App) error {
		other = nil
		switch {
		case x.Move == nil:
			return errMarkKept
		case !x.Move.SameMove(m) || x.Move.Role != m.Role:
			other = x.Move
			return errMarkKept
		}
		x.Move = nil
		return nil
	})
	if errors.Is(err, errMarkKept) {
		err = nil
	}
	return other, err
}

// movableSource refuses a copy that a move to o.To must not start from: a
// superseded copy (its new copy serves, or is gone: PoolSet says which);
// a move's new copy, whose old copy may still serve and whose move may
// still be running; and the serving source of an unfinished move to
// another cluster than o.To, whose half-made copy there only this copy's
// mark records (PoolSet gives that move up first). The serving source of
// an unfinished move to o.To itself is that move run again (staleTarget).
func movableSource(a *app.App, o MoveOptions) error {
	m := a.Move
	switch {
	case m == nil:
		return nil
	case m.Superseded:
		return usage.Errorf("this copy of app %q is superseded: it moved to cluster %q (%s); 'tug app pool set %s %s' (without --context) finishes that move, or, if no configured cluster holds the new copy any more, 'tug app pool set %s %s' makes this copy the app again", a.Name, m.To, m.Describe(), a.Name, m.Pool, a.Name, a.Pool)
	case m.Role == app.MoveTarget:
		return usage.Errorf("this copy of app %q is the new copy of an unfinished move from cluster %q (started %s), and moves only once that move is finished: 'tug app pool set %s %s' (without --context) finishes it", a.Name, m.From, m.StartedAt.Format(time.RFC3339), a.Name, m.Pool)
	case m.To != o.To && !o.GiveUpEarlier:
		return usage.Errorf("app %q records an unfinished move to cluster %q (started %s), whose half-made copy there only that record names; give that move up first, then move the app: 'tug app pool set %s %s' (without --context) removes that copy and keeps the app where it is, nothing restarted", a.Name, m.To, m.StartedAt.Format(time.RFC3339), a.Name, a.Pool)
	}
	return nil
}

// FinishMove completes a move that a killed tug left after the switch:
// serving is the copy that serves (marked as the move's target, or already
// unmarked), old reaches the cluster of the superseded source copy (which
// the lookup found superseded; gone meanwhile is fine). It refuses when
// old's copy is not superseded: that move never switched over, and Move
// redoes it. A target whose source no cluster holds is AdoptMove's. It
// holds the app's lock in both clusters: the serving copy's, whose mark
// it drops, and the old copy's (the move's own lock), which it removes.
func FinishMove(ctx context.Context, serving, old Deps, appName string) error {
	if serving.Progress == nil {
		serving.Progress = progress.Nop{}
	}
	if old.Progress == nil {
		old.Progress = serving.Progress
	}
	if old.Client == nil {
		return fmt.Errorf("finishing the move of app %q: no cluster to remove its old copy from", appName)
	}
	st, err := Begin(ctx, serving, appName, nil)
	if err != nil {
		return err
	}
	defer st.End()
	cur := st.app
	// the old copy gone (a finish ran meanwhile, or it was removed): the
	// move is past its switch, and the serving copy's own mark goes
	gone := func() error {
		if cur.Move == nil || cur.Move.Role != app.MoveTarget {
			return nil
		}
		_, err := dropMark(st.ctx, st.store, appName, cur.Move)
		return st.Explain(err)
	}
	ot, err := Begin(st.ctx, old, appName, func(a *app.App) error {
		if a.Move == nil || !a.Move.Superseded {
			return fmt.Errorf("the copy of app %q in namespace %q is not superseded: it still serves, so tug leaves it", appName, old.Namespace)
		}
		return nil
	})
	if app.IsNotFound(err) {
		return gone()
	}
	if err != nil {
		return err
	}
	defer ot.End()
	return finish(ot, st, appName, ot.app.Move)
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
// only when asked ('tug app pool set --adopt'). It drops the copy's mark,
// under the app's lock.
func AdoptMove(ctx context.Context, d Deps, appName string) error {
	t, err := Begin(ctx, d, appName, nil)
	if err != nil {
		return err
	}
	defer t.End()
	ok, err := MoveRolledOut(t.ctx, d, appName)
	if err != nil {
		return t.Explain(err)
	}
	if !ok {
		return fmt.Errorf("the copy of app %q in namespace %q is not a move's completed new copy; tug will not make it the app", appName, d.Namespace)
	}
	other, err := dropMark(t.ctx, t.store, appName, t.app.Move)
	if err == nil && other != nil {
		err = errors.New("its move mark changed meanwhile")
	}
	return t.Explain(err)
}

// AbandonMove gives up a move that a killed tug left before its switch:
// under the app's lock in src it removes the copy the move was making,
// looked for in each of made (none when the tug was killed before copying,
// or no cluster holds a copy), and drops src's mark. PoolSet calls it when
// the app is asked to stay where it serves ('tug app pool set' to a pool of
// its own cluster), or to move to a third cluster. It does nothing when
// src's copy is not a move's serving source; a copy in made that is not
// that move's target (its mark records another move, or none) is left
// alone.
func AbandonMove(ctx context.Context, src Deps, made []Deps, appName string) error {
	a, err := (&app.Store{Client: src.Client, Namespace: src.Namespace}).GetApp(ctx, appName)
	if err != nil {
		return err
	}
	if !servingSource(a.Move) {
		return nil
	}
	t, err := Begin(ctx, src, appName, nil)
	if err != nil {
		return err
	}
	defer t.End()
	m := t.app.Move
	if !servingSource(m) {
		return nil
	}
	if err := removeMade(t.ctx, t.d, made, appName, m); err != nil {
		return t.Explain(err)
	}
	if err := t.Lost(); err != nil {
		return err
	}
	_, err = dropMark(t.ctx, t.store, appName, m)
	return t.Explain(err)
}

// removeMade removes the copy that move m, cut short before its switch,
// made: looked for in each of made, and removed only where it carries m's
// target mark, checked under that copy's lock (any other app of that name
// is left alone). The caller holds the source's lock.
func removeMade(ctx context.Context, src Deps, made []Deps, appName string, m *app.Move) error {
	for _, dst := range made {
		there, err := (&app.Store{Client: dst.Client, Namespace: dst.Namespace}).GetApp(ctx, appName)
		switch {
		case app.IsNotFound(err):
		case err != nil:
			return err
		case there.Move != nil && there.Move.Role == app.MoveTarget && there.Move.SameMove(m):
			src.Progress.Update(fmt.Sprintf("giving up the unfinished move to cluster %s: removing the copy it left there", m.To))
			err := Remove(ctx, dst, appName, RemoveOptions{OfMove: m})
			if err != nil && !app.IsNotFound(err) && !errors.Is(err, ErrNotThatCopy) {
				return fmt.Errorf("removing the copy of app %q an unfinished move left in cluster %q: %w", appName, m.To, err)
			}
		}
	}
	return nil
}

// servingSource reports whether m marks the copy of an unfinished move
// that still serves: its source, not superseded.
func servingSource(m *app.Move) bool {
	return m != nil && m.Role == app.MoveSource && !m.Superseded
}

// ReclaimMove makes a superseded copy the app again when its move's new
// copy is gone (removed by hand): under the app's lock it drops the
// superseded mark. Only PoolSet knows that no configured cluster holds
// the new copy (every cluster answered the lookup) and calls it; the
// caller then rolls the release out again, since the copy's removal may
// have begun (its Deployments, Services). A copy that is not superseded
// is left as it is.
func ReclaimMove(ctx context.Context, d Deps, appName string) error {
	t, err := Begin(ctx, d, appName, nil)
	if err != nil {
		return err
	}
	defer t.End()
	if t.app.Move == nil || !t.app.Move.Superseded {
		return nil
	}
	_, err = dropMark(t.ctx, t.store, appName, t.app.Move)
	return t.Explain(err)
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
