package canary

import (
	"errors"
	"fmt"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
)

// settling is what settleCanary does with a canary a stopped tug left.
type settling int

const (
	settleNone settling = iota
	// settleReapply gives a running canary the weights its record says.
	settleReapply
	// settleHaltSteps records that a running canary's steps stopped (the
	// tug taking them holds the lock no more), then reapplies.
	settleHaltSteps
	settleFinishPromote
	// settleUndoPromote puts the deployed release's units back and aborts:
	// an abort asked for after a promote that had not yet made the
	// canary's release the deployed one.
	settleUndoPromote
	settleAbortStart
	settleFinishAbort
	// settleEnd finishes endSplit: one release runs, what the split left goes.
	settleEnd
	// settleKeepExpired promotes a blue-green release past its --keep.
	settleKeepExpired
)

// settleFor decides what settleCanary does with a's canary, now, for a
// command that wants it aborted (aborting) or not. The phase is recorded
// before each step acts, so it says what the stopped tug was doing.
func settleFor(a *app.App, now time.Time, aborting bool) settling {
	c := a.Canary
	switch {
	case c == nil:
		return settleNone
	case c.Phase == app.CanaryEnding:
		return settleEnd
	case c.Phase == app.CanaryPromoting && (aborting || c.Undoing) && c.Release != a.Release:
		return settleUndoPromote
	case c.Release == a.Release || c.Phase == app.CanaryPromoting:
		return settleFinishPromote
	case c.Phase == app.CanaryStarting:
		return settleAbortStart
	case c.Phase == app.CanaryAborting:
		return settleFinishAbort
	case c.Strategy == app.StrategyBlueGreen && !c.KeepUntil.IsZero() && now.After(c.KeepUntil) && !aborting:
		return settleKeepExpired
	case len(c.Steps) > 0 && !c.StepsStopped:
		return settleHaltSteps
	}
	return settleReapply
}

// settled is what settleCanary did, for the command that took the lock:
// an abort tells a promote it finished from one it undid.
type settled struct {
	action  settling
	release int // the canary's
	// err is why the promote of an expired blue-green failed (it stays)
	err error
}

// settleCanary finishes, under the lock, what a stopped tug left of a
// canary, so the record, the weights and the units agree (settleFor
// decides how; docs/reliability.md, "kill -9 during a canary"); did, when
// not nil, gets what it did.
func settleCanary(t *deploy.Txn, aborting bool, did *settled) error {
	a := t.App()
	c := a.Canary
	what := settleFor(a, time.Now(), aborting)
	if did != nil && c != nil {
		*did = settled{action: what, release: c.Release}
	}
	say := t.Deps().Progress.Update
	switch what {
	case settleNone:
		return nil
	case settleEnd:
		say(fmt.Sprintf("ending the split between v%d and v%d that a stopped tug left", a.Release, c.Release))
		r, cfg, err := t.Store().GetRelease(t.Ctx(), a.Name, a.Release)
		if err != nil {
			return err
		}
		return endSplit(t, r, cfg)
	case settleUndoPromote:
		return undoPromote(t)
	case settleFinishPromote:
		say(fmt.Sprintf("finishing the promote of v%d that a stopped tug left", c.Release))
		_, err := promote(t, time.Now())
		return err
	case settleAbortStart:
		say(fmt.Sprintf("aborting the canary v%d that a stopped tug left starting", c.Release))
		return abortCanary(t, app.StatusInterrupted, deploy.InterruptedReason(fmt.Sprintf("the tug starting it as a %s stopped; v%d kept every request", c.Strategy, a.Release)))
	case settleFinishAbort:
		say(fmt.Sprintf("finishing the abort of v%d that a stopped tug left", c.Release))
		// with the status and reason it began with (a crash's "failed"
		// stays failed)
		st, reason := c.AbortStatus, c.AbortReason
		if st == "" {
			st, reason = app.StatusAborted, "aborted"
		}
		return abortCanary(t, st, reason)
	case settleKeepExpired:
		say(fmt.Sprintf("v%d's units were kept until %s: v%d becomes the deployed release", a.Release, c.KeepUntil.Local().Format(time.TimeOnly), c.Release))
		return promoteExpired(t, did)
	case settleHaltSteps:
		say(fmt.Sprintf("the tug taking v%d's steps (%v) stopped at %d%%: it keeps that share until 'tug release promote %s' or 'tug release abort %s'",
			c.Release, c.Steps, c.Weight, a.Name, a.Name))
		if err := haltSteps(t); err != nil {
			return err
		}
	}
	stable, cfg, err := t.Store().GetRelease(t.Ctx(), a.Name, a.Release)
	if err != nil {
		return err
	}
	_, err = applySplit(t, stable, cfg, false)
	return err
}

// promoteExpired promotes a blue-green release past its --keep, once: the
// record says it was tried (KeepUntil cleared) before it begins, so
// neither its failure nor a kill makes every later command run it again.
// When its rollout fails, the blue-green stays as it was (every request to
// its units, the kept units kept: promoteFailed put them back), the record
// says why, and the command that took the lock goes on: it is not the
// promote's. did, when not nil, gets the failure.
func promoteExpired(t *deploy.Txn, did *settled) error {
	if _, err := t.Update(func(x *app.App) error {
		if x.Canary != nil {
			x.Canary.KeepUntil = time.Time{}
		}
		return nil
	}); err != nil {
		return err
	}
	_, err := promote(t, time.Now())
	var failed *deploy.Error
	if err == nil || !errors.As(err, &failed) || !failed.CanaryKept {
		return err
	}
	a, uerr := t.Update(func(x *app.App) error {
		if x.Canary != nil {
			x.Canary.PromoteFailed = failed.Error()
		}
		return nil
	})
	if uerr != nil {
		return uerr
	}
	if did != nil {
		did.err = err
	}
	t.Deps().Progress.Update(fmt.Sprintf("the promote of v%d failed (%v); it keeps every request and v%d's units stay until 'tug release promote %s' or 'tug release abort %s'",
		a.Canary.Release, err, a.Release, a.Name, a.Name))
	return nil
}

// haltSteps records that nothing moves the canary through its steps any
// more: the tug that did held the lock until it stopped. Resuming them
// here would make whatever command came next (a scale, an env change)
// sit through minutes of steps it was not asked for and promote without
// anyone watching; the canary keeps its share and says so until 'release
// promote' or 'release abort'.
func haltSteps(t *deploy.Txn) error {
	_, err := t.Update(func(x *app.App) error {
		if x.Canary != nil {
			x.Canary.StepsStopped = true
		}
		return nil
	})
	return err
}

// undoPromote is an abort asked for while a stopped tug's promote had not
// yet made the canary's release the deployed one: the deployed release's
// units are put back (every request still goes to the canary's units
// meanwhile), then the canary is aborted.
//
// The record says so first (Undoing): if this tug is stopped while the
// units come back, the next command finishes the undo rather than the
// promote the user aborted.
func undoPromote(t *deploy.Txn) error {
	a, err := t.Update(func(x *app.App) error {
		if x.Canary != nil {
			x.Canary.Undoing = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.Deps().Progress.Update(fmt.Sprintf("undoing the promote of v%d that a stopped tug left: v%d's units back", a.Canary.Release, a.Release))
	if err := putBackBeforePromote(t); err != nil {
		return err
	}
	if err := t.Restore(a.Release); err != nil {
		return err
	}
	return abortCanary(t, app.StatusAborted, "aborted by hand during a promote a stopped tug left")
}
