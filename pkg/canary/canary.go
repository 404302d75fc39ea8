// Package canary runs two releases of an app side by side: a canary (the
// new release's web units beside the deployed release's, a share of the
// requests) or blue-green (the new release at full size, every request
// once it is ready, the previous release's units kept), and ends them by
// a promote or an abort.
//
// Every step runs in a deploy.Txn (the app's lock held) and records its
// phase in the app record before it acts, so the next command that takes
// the lock (Txn.Read calls Runner.Settle) can finish or undo what a
// stopped tug left: a start is aborted, a promote or an abort finished (an
// abort undoes a promote that had not yet made the canary's release the
// deployed one), an ending split ended, a running canary gets its recorded
// weights again (docs/reliability.md, "kill -9 during a canary").
// Rendering a record that names a canary is pkg/render's (render.Release,
// render.Canary).
package canary

import (
	"context"
	"fmt"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
)

// Runner is the deploy.SideBySide that cmd puts in deploy.Deps: every
// change that takes an app's lock then settles, gates, starts and aborts
// canaries through it.
type Runner struct {
	// aborting: the change is an abort, so a promote a stopped tug left
	// is undone rather than finished (settleFor); settled, when set, gets
	// what Settle did.
	aborting bool
	settled  *settled
}

var _ deploy.SideBySide = Runner{}

// Settle finishes what a stopped tug left of t's canary (settleCanary).
func (r Runner) Settle(t *deploy.Txn) error { return settleCanary(t, r.aborting, r.settled) }

// Gate is what a change that rolls or reshapes the app does while a
// canary runs: a blue-green release that has every request is made the
// deployed one first (the kept units go: "until the next deploy"); a
// canary refuses the change with the way out.
func (Runner) Gate(t *deploy.Txn, what string) error {
	a := t.App()
	c := a.Canary
	if c == nil {
		return nil
	}
	// (unless that promote failed once already: the user decides then)
	if c.Strategy == app.StrategyBlueGreen && c.Phase == app.CanaryRunning && c.Weight == 100 && c.PromoteFailed == "" {
		t.Deps().Progress.Update(fmt.Sprintf("v%d's kept units go first: v%d becomes the deployed release", a.Release, c.Release))
		_, err := promote(t, time.Now())
		return err
	}
	return &RunningError{App: a.Name, What: what, Canary: *c, Stable: a.Release}
}

// Start runs a canary or blue-green deploy (startCanary).
func (Runner) Start(t *deploy.Txn, s *deploy.Started) (*deploy.Result, error) {
	return (&starting{t: t, s: s}).run()
}

// Abort ends the canary for a rollback to the deployed release.
func (Runner) Abort(t *deploy.Txn, start time.Time, why string) (*deploy.Result, error) {
	return abort(t, start, why, settled{})
}

// Promote makes the canary (or blue-green) release of appName the
// deployed one: every request goes to its units, the deployed release's
// units are replaced by the canary's release and, once they run it, the
// canary's own units go.
//
// A promote a stopped tug left is finished when the lock is taken; this
// promote then succeeds with it (a script that runs promote again after
// a kill gets what it asked for, not "nothing to promote").
func Promote(ctx context.Context, d deploy.Deps, appName string) (*deploy.Result, error) {
	start := time.Now()
	var did settled
	d.SideBySide = Runner{settled: &did}
	t, err := deploy.Begin(ctx, d, appName, nil)
	if err != nil {
		return nil, err
	}
	defer t.End()
	if did.action == settleKeepExpired && did.err != nil {
		// taking the lock just tried this promote, and it failed
		return nil, did.err
	}
	if a := t.App(); a.Canary == nil {
		if did.action == settleFinishPromote || did.action == settleKeepExpired || did.action == settleEnd && did.release == a.Release {
			return deployedResult(t, start)
		}
		return nil, &NoCanaryError{App: appName, Verb: "promote"}
	}
	res, err := promote(t, start)
	return res, t.Explain(err)
}

// Abort ends the canary (or blue-green) release of appName: every request
// goes back to the deployed release, and the canary's units go.
//
// A promote a stopped tug left is undone, not finished, unless it had
// already made the canary's release the deployed one (*PromotedError); an
// abort it left is finished.
func Abort(ctx context.Context, d deploy.Deps, appName string) (*deploy.Result, error) {
	start := time.Now()
	var did settled
	d.SideBySide = Runner{aborting: true, settled: &did}
	t, err := deploy.Begin(ctx, d, appName, nil)
	if err != nil {
		return nil, err
	}
	defer t.End()
	return abort(t, start, "aborted by hand", did)
}

// resultOf is the canary of a as a deploy.Result shows it.
func resultOf(a *app.App) *deploy.CanaryResult {
	c := a.Canary
	res := &deploy.CanaryResult{Release: c.Release, Stable: a.Release, Strategy: c.Strategy, Weight: c.Weight, Units: c.Units, Exact: c.Exact}
	for _, p := range a.ProcessNames() {
		if p != app.WebProcess {
			res.Others = append(res.Others, p)
		}
	}
	return res
}

// RunningError refuses a change while two releases run side by side.
type RunningError struct {
	App    string
	What   string
	Canary app.Canary
	Stable int
}

func (e *RunningError) Error() string {
	halted := ""
	switch {
	case e.Canary.StepsHalted():
		halted = fmt.Sprintf(", its steps stopped at %d%%", e.Canary.Weight)
	case e.Canary.PromoteFailed != "":
		halted = ", its promote failed"
	}
	return fmt.Sprintf("%s refused: v%d of app %q runs as a %s beside v%d (%d%% of requests%s); first 'tug release promote %s' (v%d gets every request) or 'tug release abort %s' (v%d keeps them)",
		e.What, e.Canary.Release, e.App, e.Canary.Strategy, e.Stable, e.Canary.Weight, halted, e.App, e.Canary.Release, e.App, e.Stable)
}

// NoCanaryError is a promote or abort of an app that runs one release.
type NoCanaryError struct{ App, Verb string }

func (e *NoCanaryError) Error() string {
	return fmt.Sprintf("nothing to %s: app %q runs no canary or blue-green release ('tug app deploy %s --canary 10%%' starts one)", e.Verb, e.App, e.App)
}

// PromotedError is an abort that came too late: the promote a stopped tug
// left had already made the canary's release the deployed one, so taking
// the lock finished it.
type PromotedError struct {
	App     string
	Release int
}

func (e *PromotedError) Error() string {
	return fmt.Sprintf("nothing to abort: a stopped tug had already made v%d the deployed release of app %q, so its promote was finished; 'tug release rollback %s' goes back to the release before it",
		e.Release, e.App, e.App)
}
