// Package move moves an app between clusters ('tug app pool set' to a pool
// that tug's cluster map puts in another cluster), in steps that keep it
// serving:
//
//	(a) copy its records into the target, the copy marked as a move's target
//	(b) roll its release out there on the new pool, and wait until it runs
//	(c) mark the source copy superseded: from here the target serves
//	(d) drop the target's mark
//	(e) remove the app from the source
//
// all under the app's deploy lock in the source, and from (a) to (d) under
// its lock in the target too, each a deploy.Txn: the package changes apps
// only through those. A failure before (c) removes the target copy it made
// (recognised by its mark: the same clusters and start as the source's)
// and leaves the app serving where it was; an app of that name it did not
// make is never touched. A tug killed midway leaves marked copies
// (app.Move) from which the cluster lookup picks the one that serves; App
// run again removes a target copy left before (c) and starts over, and
// Finish completes one left after. A move to yet another cluster gives the
// earlier move up first (Options.GiveUpEarlier); a move's new copy is never
// a move's source. Only a move's own mark is ever dropped (dropMark), and
// every change to a copy's record is made under that copy's lock.
//
// PoolSet is 'tug app pool set' with clusters configured: it settles what
// an unfinished move left, then moves the app or says to roll the pool
// change out where it is.
package move

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/lifecycle"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/rollout"
)

// cleanupTimeout bounds the undo of a failed move, which runs after the
// command's own context may be gone (Ctrl-C) and waits for the half-made
// copy's units to stop.
const cleanupTimeout = 2 * time.Minute

// Options tune a move.
type Options struct {
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
	// switch): under the lock the move gives that move up first, removing
	// its half-made copy, looked for in Earlier (a copy is removed only if
	// it carries that move's mark). Without it such a source is refused:
	// the new move's mark would erase the only record of that copy. The
	// caller (PoolSet) vouches that Earlier covers the cluster the copy may
	// be in.
	GiveUpEarlier bool
	Earlier       []deploy.Deps
}

// End is one side of a move.
type End struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
}

// Result is what a move did; its JSON shape is documented in
// docs/output.md.
type Result struct {
	App  string `json:"app"`
	Pool string `json:"pool"`
	From End    `json:"from"`
	To   End    `json:"to"`
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
	Serving End `json:"serving"`
	// Failure says why a failed or unfinished move stopped: the target
	// rollout's diagnosis (class image-pull, crash, ...), or class
	// rollout.ClassError with the error's message; with "moved", what is
	// left of the old copy to report (units stuck terminating).
	Failure    *rollout.Failure `json:"failure,omitempty"`
	DurationMS int64            `json:"durationMs"`
}

// failureOf is why a move stopped, for its result.
func failureOf(err error) *rollout.Failure {
	var rolled *deploy.Error
	if errors.As(err, &rolled) && rolled.Result != nil && rolled.Result.Failure != nil {
		f := *rolled.Result.Failure
		return &f
	}
	return &rollout.Failure{Class: rollout.ClassError, Message: err.Error()}
}

// mover is one move under way: the two sides, the locks it holds there
// (source t, target tt) and the result so far.
type mover struct {
	src, dst deploy.Deps
	app      string
	o        Options
	start    time.Time
	res      *Result
	// t and tt are the source's and the target's Txn; from and to their
	// stores as the steps use them.
	t, tt    *deploy.Txn
	from, to *app.Store
	// mark is the target copy's, own the source's: the same move.
	mark, own *app.Move
}

// App moves appName from the cluster src reaches to the one dst reaches,
// onto pool o.Pool. A move that failed or is unfinished (an *Error or
// *UnfinishedError) comes with its result too, saying why and where the
// app serves; other errors (nothing was attempted) with none.
func App(ctx context.Context, src, dst deploy.Deps, appName string, o Options) (*Result, error) {
	m := &mover{src: src, dst: dst, app: appName, o: o, start: time.Now()}
	if m.src.Progress == nil {
		m.src.Progress = progress.Nop{}
	}
	if m.dst.Progress == nil {
		m.dst.Progress = m.src.Progress
	}
	a, stale, err := m.look(ctx)
	if err != nil {
		return nil, err
	}
	if o.DryRun {
		return m.dryRun(a, stale), nil
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.t.End()
	defer m.tt.End() // first: the target's lock ends before the source's
	if err := m.clear(); err != nil {
		return nil, err
	}
	if err := m.markSource(); err != nil {
		return nil, err
	}
	if err := m.copyAndRoll(); err != nil {
		return m.fail(err)
	}
	if err := m.switchOver(); err != nil {
		return m.fail(err)
	}
	return m.finishUp()
}

// check says whether a may move: checked before the locks, and again
// under the source's (another tug may have changed the app meanwhile).
func (m *mover) check(ctx context.Context, from *app.Store, a *app.App) error {
	if err := movableSource(a, m.o); err != nil {
		return err
	}
	if len(a.Volumes) > 0 {
		return inputerr.Errorf("app %q binds volumes (%s), whose data cannot move between clusters; unbind them first ('tug volume unbind')", m.app, strings.Join(a.Volumes, ", "))
	}
	if len(a.Services) > 0 {
		// the target cluster has no such service, or another of that name
		// holding other data: either way the app would not get its own
		return inputerr.Errorf("app %q binds backing services (%s), which do not move between clusters; unbind them first ('tug service unbind %s NAME'), move the app, then bind services of the target cluster", m.app, strings.Join(a.Services, ", "), m.app)
	}
	return refuseStaged(ctx, from, a)
}

// look reads the app before the locks: whether it may move, and whether
// the target holds a copy an earlier move left (stale).
func (m *mover) look(ctx context.Context) (*app.App, bool, error) {
	from := &app.Store{Client: m.src.Client, Namespace: m.src.Namespace}
	to := &app.Store{Client: m.dst.Client, Namespace: m.dst.Namespace}
	a, err := from.GetApp(ctx, m.app)
	if err != nil {
		return nil, false, err
	}
	if err := m.check(ctx, from, a); err != nil {
		return nil, false, err
	}
	m.res = &Result{App: m.app, Pool: m.o.Pool, Release: a.Release,
		From: End{Cluster: m.o.From, Namespace: m.src.Namespace}, To: End{Cluster: m.o.To, Namespace: m.dst.Namespace}}
	m.res.Serving = m.res.From
	stale, err := staleTarget(ctx, to, m.app, a.Move, m.o)
	if err != nil {
		return nil, false, err
	}
	return a, stale, nil
}

// dryRun says what the move would do.
func (m *mover) dryRun(a *app.App, stale bool) *Result {
	res, o := m.res, m.o
	res.Status = "dry-run"
	if servingSource(a.Move) && a.Move.To != o.To {
		res.Plan = append(res.Plan, fmt.Sprintf("give up the unfinished move to cluster %s (started %s): remove the copy it left there, if any", a.Move.To, a.Move.StartedAt.Format(time.RFC3339)))
	}
	if stale {
		res.Plan = append(res.Plan, fmt.Sprintf("remove the copy an earlier, unfinished move left in cluster %s (namespace %s)", o.To, m.dst.Namespace))
	}
	res.Plan = append(res.Plan, fmt.Sprintf("copy app %s's record, release history, config and credentials to cluster %s (namespace %s)", m.app, o.To, m.dst.Namespace))
	if a.Release > 0 {
		res.Plan = append(res.Plan, fmt.Sprintf("roll out v%d's image and config there as release v%d on pool %s, and wait until it runs", a.Release, a.LastRelease+1, o.Pool))
	} else {
		res.Plan = append(res.Plan, fmt.Sprintf("set its pool to %s there (it was never deployed)", o.Pool))
	}
	res.Plan = append(res.Plan, fmt.Sprintf("remove it from cluster %s (namespace %s)", o.From, m.src.Namespace))
	res.DurationMS = time.Since(m.start).Milliseconds()
	return res
}

// lock takes the source's lock (the app checked again under it), then the
// target's, from before the copy until its mark is dropped: no other tug
// changes or removes the new copy (a remove tug suggests for leftovers)
// while this move makes it, checks it and switches to it. The target's
// ends with the source's.
func (m *mover) lock(ctx context.Context) error {
	from := &app.Store{Client: m.src.Client, Namespace: m.src.Namespace}
	t, err := deploy.Begin(ctx, m.src, m.app, func(a *app.App) error { return m.check(ctx, from, a) })
	if err != nil {
		return err
	}
	tt, err := deploy.Hold(t.Ctx(), m.dst, m.app)
	if err != nil {
		err = t.Explain(err)
		t.End()
		return err
	}
	m.t, m.tt, m.from, m.to = t, tt, t.Store(), tt.Store()
	return nil
}

// clear removes, under the locks, what earlier moves left in the way: the
// half-made copy of an unfinished move to another cluster (given up), and
// a copy an earlier run of this move left in the target.
func (m *mover) clear() error {
	a, o := m.t.App(), m.o
	// again under the locks: another move may have come and gone meanwhile
	stale, err := staleTarget(m.tt.Ctx(), m.to, m.app, a.Move, o)
	if err != nil {
		return m.tt.Explain(err)
	}
	if servingSource(a.Move) && a.Move.To != o.To {
		if err := removeMade(m.t.Ctx(), m.src, o.Earlier, m.app, a.Move); err != nil {
			return m.t.Explain(err)
		}
		m.res.GaveUp = a.Move.To
	}
	if stale {
		m.src.Progress.Update(fmt.Sprintf("removing the copy an earlier move left in cluster %s", o.To))
		if err := lifecycle.RemoveHeld(m.tt.Ctx(), m.dst, m.app, lifecycle.RemoveOptions{}); err != nil {
			return fmt.Errorf("removing the copy of app %q an earlier move left in cluster %q: %w", m.app, o.To, m.tt.Explain(err))
		}
	}
	return nil
}

// markSource marks the source copy as this move's.
func (m *mover) markSource() error {
	started := time.Now().UTC()
	o := m.o
	m.mark = &app.Move{Role: app.MoveTarget, From: o.From, To: o.To, Pool: o.Pool, StartedAt: started}
	m.own = &app.Move{Role: app.MoveSource, From: o.From, To: o.To, Pool: o.Pool, StartedAt: started}
	if _, err := m.t.Update(func(x *app.App) error { x.Move = m.own; return nil }); err != nil {
		return m.t.Explain(err)
	}
	return nil
}

// copyAndRoll makes the new copy (a), rolls it out on the new pool (b),
// and checks that it serves and is still whole before the switch.
func (m *mover) copyAndRoll() error {
	a, o, tctx := m.t.App(), m.o, m.tt.Ctx()
	m.src.Progress.Update(fmt.Sprintf("copying app %s to cluster %s", m.app, o.To))
	if _, err := m.from.CopyTo(tctx, m.to, m.app, m.mark); err != nil {
		return err
	}
	if err := m.tt.Read(m.app, nil); err != nil {
		return err
	}
	if a.Release > 0 {
		change := deploy.SettingsChange(app.KindPool, fmt.Sprintf("pool %s (moved from cluster %s)", o.Pool, o.From), func(_ *app.App, r *app.Release) error {
			r.Pool = o.Pool
			return nil
		})
		// No rollback in the target (the source still serves), and no
		// release phase: with no config staged (refuseStaged), the change
		// starts from the deployed release, so nothing changes but where
		// the units run.
		rolled, err := m.tt.Roll(change, deploy.Options{Timeout: o.Timeout, NoRollback: true, SkipReleasePhase: true})
		var failed *deploy.Error
		if errors.As(err, &failed) {
			// the move removes the copy and says where the app serves:
			// the rollout's own advice (units left for inspection, a
			// rollback) is not for a copy that goes
			failed.Moved = true
		}
		if err != nil {
			return err
		}
		m.res.Release = rolled.Release
	} else if _, err := m.tt.Update(func(x *app.App) error { x.Pool = o.Pool; return nil }); err != nil {
		return err
	}
	if err := servesThere(tctx, m.dst, m.app); err != nil {
		return err
	}
	// The new copy must still be whole, as this move made it, before the
	// source gives way to it.
	if err := wholeCopy(tctx, m.to, m.app, m.mark, m.res.Release, o.Pool); err != nil {
		return err
	}
	return errors.Join(m.t.Lost(), m.tt.Lost())
}

// switchOver marks the source superseded (c): from here the target serves.
func (m *mover) switchOver() error {
	_, err := m.t.Update(func(x *app.App) error {
		if !x.Move.SameMove(m.own) || x.Move.Role != app.MoveSource {
			return errors.New("the source copy's move mark changed meanwhile")
		}
		x.Move.Superseded = true
		return nil
	})
	return err
}

// finishUp drops the target's mark (d) and removes the source (e).
func (m *mover) finishUp() (*Result, error) {
	res := m.res
	res.Serving = res.To
	var err error
	res.Status, err = finishedMove(m.app, m.o, finish(m.t, m.tt, m.app, m.own))
	if err != nil {
		res.Failure = failureOf(err)
	}
	res.DurationMS = time.Since(m.start).Milliseconds()
	return res, err
}

// fail undoes a move that failed before its switch: the copy it made goes
// (only that copy: an app someone else put there is theirs), and so does
// the source's mark, unless the copy stays.
func (m *mover) fail(err error) (*Result, error) {
	err = m.tt.Explain(m.t.Explain(err))
	wctx, cancel := context.WithTimeout(context.WithoutCancel(m.t.Ctx()), cleanupTimeout)
	defer cancel()
	me := &Error{App: m.app, From: m.o.From, To: m.o.To, Err: err}
	m.removeCopy(wctx, me)
	// The source keeps its mark while its copy is left in the target,
	// so that the next move recognises that copy and removes it; and
	// it is not ours to change once the source's lock is lost.
	if me.CleanupErr == nil {
		if merr := m.t.Lost(); merr != nil {
			me.MarkErr = merr
		} else if _, merr := dropMark(m.t.Within(wctx), m.own); merr != nil {
			me.MarkErr = merr
		}
	}
	res := m.res
	res.Status, res.Failure = "failed", failureOf(err)
	if me.CleanupErr != nil {
		res.Failure.Message += fmt.Sprintf("; removing its copy from cluster %q failed too (%v)", m.o.To, me.CleanupErr)
	}
	if me.MarkErr != nil {
		res.Failure.Message += fmt.Sprintf("; dropping the move's mark from the copy in cluster %q failed (%v)", m.o.From, me.MarkErr)
	}
	res.DurationMS = time.Since(m.start).Milliseconds()
	return res, me
}

// removeCopy removes the copy this move made, and only while this move
// still holds the target's lock: once it is lost, another tug may be using
// it. What stops it is recorded in me.
func (m *mover) removeCopy(ctx context.Context, me *Error) {
	there, err := m.to.GetApp(ctx, m.app)
	switch {
	case app.IsNotFound(err):
	case err != nil:
		me.CleanupErr = err
	case !there.Move.SameMove(m.mark) || there.Move.Role != app.MoveTarget:
		me.Foreign = true
	case m.tt.Lost() != nil:
		me.CleanupErr = m.tt.Lost()
	default:
		m.src.Progress.Update(fmt.Sprintf("removing the copy from cluster %s", m.o.To))
		if rerr := lifecycle.RemoveHeld(ctx, m.dst, m.app, lifecycle.RemoveOptions{}); rerr != nil && !app.IsNotFound(rerr) {
			me.CleanupErr = rerr
		}
	}
}
