package move

import (
	"errors"
	"fmt"

	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/lifecycle"
	"tug.dev/tug/pkg/rollout"
)

// Error is a move that failed before the target took over: the app
// still serves in the source.
type Error struct {
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

func (e *Error) Error() string {
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

func (e *Error) Unwrap() error { return e.Err }

// UnfinishedError: the target serves, but the source copy could not be
// removed or the target's mark dropped; running the move again finishes it.
type UnfinishedError struct {
	App, From, To string
	Err           error
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("app %q serves in cluster %q now, but the move from cluster %q is unfinished: %v; run 'tug app pool set' again to finish it", e.App, e.To, e.From, e.Err)
}

func (e *UnfinishedError) Unwrap() error { return e.Err }

// Kind, Diagnosis: a move's errors are deploy.ChangeErrors. They have no
// exit code of their own: the code is that of what stopped the move.
func (e *Error) Kind() deploy.Kind                     { return deploy.KindMove }
func (e *Error) Diagnosis() *rollout.Failure           { return diagnosisOf(e.Err) }
func (e *UnfinishedError) Kind() deploy.Kind           { return deploy.KindUnfinishedMove }
func (e *UnfinishedError) Diagnosis() *rollout.Failure { return diagnosisOf(e.Err) }

// diagnosisOf is the diagnosis of the failed change that err is or
// wraps, if any.
func diagnosisOf(err error) *rollout.Failure {
	var failed deploy.ChangeError
	if errors.As(err, &failed) {
		return failed.Diagnosis()
	}
	return nil
}

// finishedMove is how a move whose target serves ended, given the error
// from finishing it: "moved", or "unfinished" with an
// *UnfinishedError (running the move again finishes it). Units of the
// old copy stuck terminating are not an unfinished move: its records are
// gone, and a rerun would only roll a pointless release; the move is
// done, with that error to report.
func finishedMove(appName string, o Options, err error) (string, error) {
	var stuck *lifecycle.StuckUnitsError
	switch {
	case err == nil:
		return "moved", nil
	case errors.As(err, &stuck):
		return "moved", fmt.Errorf("app %q moved to cluster %q, but in cluster %q %w", appName, o.To, o.From, err)
	}
	return "unfinished", &UnfinishedError{App: appName, From: o.From, To: o.To, Err: err}
}
