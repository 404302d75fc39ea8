package deploy

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/route"
)

// Two releases side by side: a canary (the new release's web units beside
// the deployed release's, a share of the requests) or blue-green (the new
// release at full size, every request once it is ready, the previous
// release's units kept). The app record's Canary says which release runs
// beside the deployed one, its share and the phase it is in; every step
// records its phase before it acts, so the next command that takes the
// app's lock (settleCanary, from Txn.Read) can finish what a stopped tug
// left: a start is aborted, a promote or an abort is finished, a running
// canary gets its recorded weights again.

// CanaryOptions make a deploy run its release beside the deployed one
// (Options.Canary).
type CanaryOptions struct {
	// Strategy is app.StrategyCanary or app.StrategyBlueGreen.
	Strategy string
	// Weight is a canary's share of requests to start with (1-99).
	Weight int
	// Steps are the shares a canary moves to by itself, one every
	// StepInterval while it stays healthy; after the last, it is promoted.
	Steps        []int
	StepInterval time.Duration
	// Keep is how long blue-green keeps the previous release's units (0:
	// until the next deploy).
	Keep time.Duration
}

// CanaryResult is a canary's state in a Result (docs/output.md).
type CanaryResult struct {
	Release  int    `json:"release"`
	Stable   int    `json:"stable"`
	Strategy string `json:"strategy"`
	// Weight is the canary's share of requests, in percent.
	Weight int   `json:"weight"`
	Units  int32 `json:"units"`
	// Exact: the router splits by weight; false: by units on the Service.
	Exact bool `json:"exact"`
	// Others are the process types that keep running Stable meanwhile.
	Others []string `json:"others,omitempty"`
}

func canaryResult(a *app.App) *CanaryResult {
	c := a.Canary
	res := &CanaryResult{Release: c.Release, Stable: a.Release, Strategy: c.Strategy, Weight: c.Weight, Units: c.Units, Exact: c.Exact}
	for _, p := range a.ProcessNames() {
		if p != app.WebProcess {
			res.Others = append(res.Others, p)
		}
	}
	return res
}

// CanaryRunningError refuses a change while two releases run side by side.
type CanaryRunningError struct {
	App    string
	What   string
	Canary app.Canary
	Stable int
}

func (e *CanaryRunningError) Error() string {
	halted := ""
	if e.Canary.StepsHalted() {
		halted = fmt.Sprintf(", its steps stopped at %d%%", e.Canary.Weight)
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

// canaryGate is what a change that rolls or reshapes the app does while
// a canary runs: a blue-green release that has every request is made the
// deployed one first (the kept units go: "until the next deploy"); a
// canary refuses the change with the way out.
func canaryGate(t *Txn, what string) error {
	c := t.app.Canary
	if c == nil {
		return nil
	}
	if c.Strategy == app.StrategyBlueGreen && c.Phase == app.CanaryRunning && c.Weight == 100 {
		t.d.Progress.Update(fmt.Sprintf("v%d's kept units go first: v%d becomes the deployed release", t.app.Release, c.Release))
		_, err := promote(t, time.Now())
		return err
	}
	return &CanaryRunningError{App: t.app.Name, What: what, Canary: *c, Stable: t.app.Release}
}

// checkCanaryStart vets a canary or blue-green deploy before anything is
// stored.
func checkCanaryStart(a *app.App, next *app.Release, c *CanaryOptions) error {
	switch {
	case a.Release == 0:
		return inputerr.Errorf("app %q has no deployed release for a %s to run beside; deploy it once without --strategy or --canary", a.Name, c.Strategy)
	case next.Processes[app.WebProcess] == "" && !hasProcess(next, app.WebProcess):
		return inputerr.Errorf("release v%d of app %q has no web process: a %s splits web requests", next.Version, a.Name, c.Strategy)
	case a.Processes[app.WebProcess].Units() == 0:
		return inputerr.Errorf("app %q runs no web unit: 'tug app scale %s web=1' first", a.Name, a.Name)
	case a.Maintenance || a.Unroutable:
		return inputerr.Errorf("app %q takes no requests now (maintenance or routable off): a %s needs them", a.Name, c.Strategy)
	}
	return nil
}

func hasProcess(r *app.Release, p string) bool { _, ok := r.Processes[p]; return ok }

// startCanary is the rest of a canary or blue-green deploy once the
// release is stored and counted: record the canary (starting), send every
// request to the deployed release's own units, start the canary's units
// and wait for them, then give them their share.
func (r *rolling) startCanary() (*Result, error) {
	t, next, c := r.t, r.next, r.opts.Canary
	stable, stableCfg, err := t.store.GetRelease(t.ctx, r.a.Name, r.a.Release)
	if err != nil {
		return r.interrupted(err)
	}
	rec := &app.Canary{Release: next.Version, Strategy: c.Strategy, Phase: app.CanaryStarting, Steps: c.Steps,
		StartedAt: time.Now().UTC(), Exact: gatewayed(r.a)}
	units := r.a.Processes[app.WebProcess].Units()
	rec.Units = app.CanaryUnits(units, c.Weight)
	if c.Strategy == app.StrategyBlueGreen {
		rec.Units = units
		if c.Keep > 0 {
			rec.KeepUntil = time.Now().Add(c.Keep).UTC()
		}
	}
	if c.StepInterval > 0 {
		rec.StepInterval = c.StepInterval.String()
	}
	a, err := t.store.UpdateApp(t.ctx, r.a.Name, func(x *app.App) error { x.Canary = rec; return nil })
	if err != nil {
		return r.interrupted(err)
	}
	r.a, t.app = a, a
	if err := t.store.SetReleaseStatus(t.ctx, a.Name, next.Version, app.StatusCanary, ""); err != nil {
		return r.interrupted(err)
	}
	// every request to the deployed release's units before a canary unit
	// can be ready
	if _, err := applySplit(t, a, stable, stableCfg, true); err != nil {
		return r.canaryCutShort(err)
	}
	t.d.Progress.Update(fmt.Sprintf("starting %d web %s of v%d beside v%d", rec.Units, plural(rec.Units), next.Version, a.Release))
	got, err := applyObjects(t.ctx, t.d, Objects{Deployments: []*appsv1.Deployment{renderCanary(a, next, r.config)}}, false)
	if err != nil {
		return r.canaryCutShort(err)
	}
	ro := &rollout.Watch{Client: t.d.Client, Namespace: t.d.Namespace, App: a.Name, Release: next.Version,
		Generations: generations(got), Idle: r.opts.Timeout, Progress: t.d.Progress}
	err = ro.Wait(t.ctx)
	var failure *rollout.Failure
	switch {
	case errors.As(err, &failure):
		return r.canaryFailed(failure)
	case err != nil:
		return r.canaryCutShort(err)
	}
	recordImageID(t.ctx, t.d, t.store, next, ro.ImageID())
	weight := c.Weight
	if c.Strategy == app.StrategyBlueGreen {
		weight = 100
	}
	routing, err := setWeight(t, weight, stable, stableCfg)
	if err != nil {
		return r.canaryCutShort(err)
	}
	if len(c.Steps) > 0 {
		return r.canarySteps(stable, stableCfg)
	}
	return r.canaryRunning(routing), nil
}

// canaryRunning is the Result of a canary that runs.
func (r *rolling) canaryRunning(routing string) *Result {
	a := r.t.app
	res := result(a, r.next, app.StatusCanary, r.start)
	res.Canary, res.URLs, res.Routing = canaryResult(a), app.URLs(a), routing
	return res
}

func plural(n int32) string {
	if n == 1 {
		return "unit"
	}
	return "units"
}

// setWeight records the canary's new share, then gives it: the record
// first, so a tug stopped in between leaves a weight the next command
// applies.
func setWeight(t *Txn, weight int, stable *app.Release, cfg app.ConfigMap) (string, error) {
	a, err := t.store.UpdateApp(t.ctx, t.app.Name, func(x *app.App) error {
		if x.Canary == nil {
			return fmt.Errorf("the canary of app %q was ended by another command", x.Name)
		}
		x.Canary.Phase, x.Canary.Weight = app.CanaryRunning, weight
		if len(x.Canary.Steps) > 0 && x.Canary.Steps[0] <= weight {
			x.Canary.Steps = x.Canary.Steps[1:]
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	t.app = a
	t.d.Progress.Update(fmt.Sprintf("v%d gets %d%% of requests, v%d %d%%", a.Canary.Release, weight, a.Release, 100-weight))
	return applySplit(t, a, stable, cfg, true)
}

// applySplit applies what splits the app's requests as record a says
// (its Service, the two sides' Services, its routes), and, with confirm,
// waits for the router to take the routes.
func applySplit(t *Txn, a *app.App, stable *app.Release, cfg app.ConfigMap, confirm bool) (string, error) {
	full := Render(a, stable, cfg)
	objs := Objects{Service: full.Service, TrackServices: full.TrackServices, Routes: full.Routes, Middleware: full.Middleware}
	got, err := applyObjects(t.ctx, t.d, objs, false)
	if err != nil || !confirm {
		return "", err
	}
	return t.d.Routes().Confirm(t.ctx, t.d.Progress, nil, a, got.routes, splitProbe(a))
}

// canaryFailed ends a canary whose units cannot run: they go, the
// deployed release keeps every request, and the error is a failed
// deploy's (same diagnosis, same exit code).
func (r *rolling) canaryFailed(failure *rollout.Failure) (*Result, error) {
	t := r.t
	res := r.result(app.StatusFailed)
	res.Failure = failure
	res.ReleasePhase = r.phase
	stable := t.app.Release
	wctx, cancel := detached(t.ctx)
	defer cancel()
	err := abortCanary(t.within(wctx), app.StatusFailed, "canary aborted: "+failure.Message)
	res.DurationMS = time.Since(r.start).Milliseconds()
	if err != nil {
		return res, &Error{Result: res, RollbackErr: t.Explain(err), RollbackTo: stable}
	}
	res.RolledBackTo = stable
	return res, &Error{Result: res, CanaryAborted: true, Previous: stable}
}

// canaryCutShort ends a canary start cut short (Ctrl-C, a lost lock, an
// API failure): what can be undone now is (on a detached context, unless
// the lock is gone); the rest is the next command's (settleCanary).
func (r *rolling) canaryCutShort(err error) (*Result, error) {
	t := r.t
	err = t.Explain(err)
	if t.Lost() == nil {
		wctx, cancel := detached(t.ctx)
		defer cancel()
		if aerr := abortCanary(t.within(wctx), app.StatusInterrupted, interruptedReason(err.Error())); aerr == nil {
			return nil, err
		}
	}
	return nil, &InterruptedError{App: r.a.Name, Release: r.next.Version, Previous: r.previous, Units: unitsByRelease(t.ctx, t.d, r.a.Name), Err: err}
}

// within is t on another context (a detached one, for cleanup).
func (t *Txn) within(ctx context.Context) *Txn {
	c := *t
	c.ctx = ctx
	return &c
}

// abortCanary sends every request back to the deployed release, removes
// the canary's units, and marks its release st (aborted, failed,
// interrupted) with reason.
func abortCanary(t *Txn, st app.Status, reason string) error {
	a := t.app
	if a.Canary == nil {
		return nil
	}
	v := a.Canary.Release
	stable, cfg, err := t.store.GetRelease(t.ctx, a.Name, a.Release)
	if err != nil {
		return err
	}
	a, err = t.store.UpdateApp(t.ctx, a.Name, func(x *app.App) error {
		if x.Canary != nil {
			x.Canary.Phase, x.Canary.Weight = app.CanaryAborting, 0
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.app = a
	t.d.Progress.Update(fmt.Sprintf("every request back to v%d", a.Release))
	if _, err := applySplit(t, a, stable, cfg, true); err != nil {
		return err
	}
	t.d.Progress.Update(fmt.Sprintf("removing the units of v%d", v))
	if err := removeCanaryUnits(t); err != nil {
		return err
	}
	if err := t.store.SetReleaseStatus(t.ctx, a.Name, v, st, reason); err != nil && !app.IsNotFound(err) {
		return err
	}
	return endSplit(t, stable, cfg)
}

// endSplit makes one release, r (the record's), run alone again: the
// record says the split is ending, its objects (one Service, one backend
// per route) are applied and the canary's Services and Deployment
// removed, and only then does the record drop the canary. A tug stopped
// in between leaves a record that still names the canary (ending), which
// the next command that takes the lock ends the same way (settleCanary),
// never units the record does not name.
func endSplit(t *Txn, r *app.Release, cfg app.ConfigMap) error {
	a, err := t.store.UpdateApp(t.ctx, t.app.Name, func(x *app.App) error {
		if x.Canary != nil {
			x.Canary.Phase = app.CanaryEnding
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.app = a
	objs := Render(a, r, cfg) // an ending canary renders as one release
	got, err := applyObjects(t.ctx, t.d, objs, false)
	if err != nil {
		return err
	}
	if err := removeStale(t.ctx, t.d, a.Name, objs); err != nil {
		return err
	}
	a, err = t.store.UpdateApp(t.ctx, a.Name, func(x *app.App) error { x.Canary = nil; return nil })
	if err != nil {
		return err
	}
	t.app = a
	_, err = t.d.Routes().Confirm(t.ctx, t.d.Progress, nil, a, got.routes, route.ProbeServe)
	return err
}

// removeCanaryUnits deletes the canary's Deployment and waits (up to
// canaryGoneTimeout) until its units are gone, so no route that names
// the web Service again can reach one that is still stopping.
func removeCanaryUnits(t *Txn) error {
	name := CanaryDeploymentName(t.app.Name)
	deps := t.d.Client.AppsV1().Deployments(t.d.Namespace)
	err := deleteOwned(t.ctx, t.app.Name, func() (metav1.Object, error) {
		return deps.Get(t.ctx, name, metav1.GetOptions{})
	}, func() error {
		return deps.Delete(t.ctx, name, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(t.ctx, canaryGoneTimeout)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: kube.AppSelector(t.app.Name) + "," + kube.LabelTrack + "=" + trackCanary}
	err = kube.Until(ctx, kube.Pods(t.d.Client, t.d.Namespace, sel), func(pods map[string]*corev1.Pod) (bool, error) {
		return len(pods) == 0, nil
	})
	if err != nil && t.ctx.Err() == nil && ctx.Err() != nil {
		return nil // still stopping: they left the Services' endpoints when they got SIGTERM
	}
	return kube.TranslateError(err)
}

// canaryGoneTimeout bounds the wait for a canary's units to stop.
const canaryGoneTimeout = 90 * time.Second

// Promote makes the canary (or blue-green) release of appName the
// deployed one: every request goes to its units, the deployed release's
// units are replaced by the canary's release and, once they run it, the
// canary's own units go.
func Promote(ctx context.Context, d Deps, appName string, opts Options) (*Result, error) {
	start := time.Now()
	t, err := Begin(ctx, d, appName, nil)
	if err != nil {
		return nil, err
	}
	defer t.End()
	if t.app.Canary == nil {
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
func Abort(ctx context.Context, d Deps, appName string) (*Result, error) {
	start := time.Now()
	t, err := begin(ctx, d, appName, nil, true)
	if err != nil {
		return nil, err
	}
	defer t.End()
	return abort(t, start, "aborted by hand")
}

func abort(t *Txn, start time.Time, why string) (*Result, error) {
	if t.app.Canary == nil {
		switch s := t.settled; {
		case s.action == settleFinishPromote || s.action == settleEnd && s.release == t.app.Release:
			return nil, &PromotedError{App: t.app.Name, Release: s.release}
		case s.action != settleNone:
			// the abort a stopped tug left (or its start, never served) is done
			return deployedResult(t, start)
		}
		return nil, &NoCanaryError{App: t.app.Name, Verb: "abort"}
	}
	if err := abortCanary(t, app.StatusAborted, why); err != nil {
		return nil, t.Explain(err)
	}
	return deployedResult(t, start)
}

// deployedResult is the Result of a change that leaves the record's
// release deployed alone.
func deployedResult(t *Txn, start time.Time) (*Result, error) {
	r, _, err := t.store.GetRelease(t.ctx, t.app.Name, t.app.Release)
	if err != nil {
		return nil, t.Explain(err)
	}
	res := result(t.app, r, app.StatusDeployed, start)
	res.URLs = app.URLs(t.app)
	return res, nil
}

// promote is Promote in t, from whatever phase the canary is in.
func promote(t *Txn, start time.Time) (*Result, error) {
	a := t.app
	c := a.Canary
	next, cfg, err := t.store.GetRelease(t.ctx, a.Name, c.Release)
	if err != nil {
		return nil, err
	}
	if a.Release == c.Release {
		return finishPromote(t, next, cfg, start)
	}
	stable, stableCfg, err := t.store.GetRelease(t.ctx, a.Name, a.Release)
	if err != nil {
		return nil, err
	}
	a, err = t.store.UpdateApp(t.ctx, a.Name, func(x *app.App) error {
		if x.Canary.Phase != app.CanaryPromoting {
			// a resumed promote finds 100 in Weight: the share to give
			// back if it fails is the one recorded when it began
			x.Canary.WeightBefore = x.Canary.Weight
		}
		x.Canary.Phase, x.Canary.Weight = app.CanaryPromoting, 100
		return nil
	})
	if err != nil {
		return nil, err
	}
	t.app = a
	weight := a.Canary.WeightBefore
	t.d.Progress.Update(fmt.Sprintf("every request to v%d", c.Release))
	if _, err := applySplit(t, a, stable, stableCfg, true); err != nil {
		return nil, err
	}
	if failure, err := rollToCanary(t, next, cfg); err != nil || failure != nil {
		return promoteFailed(t, next, stable, weight, failure, err, start)
	}
	if err := markDeployed(t.ctx, t.store, t.app, next, stable.Version, 0); err != nil {
		return nil, err
	}
	a, err = t.store.GetApp(t.ctx, a.Name)
	if err != nil {
		return nil, err
	}
	t.app = a
	return finishPromote(t, next, cfg, start)
}

// rollToCanary rolls the deployed release's Deployments out to the
// canary's release next, keeping the canary's units (they take every
// request meanwhile).
func rollToCanary(t *Txn, next *app.Release, cfg app.ConfigMap) (*rollout.Failure, error) {
	a := t.app
	withProcesses(a, next)
	objs := Render(a, next, cfg)
	t.d.Progress.Update(fmt.Sprintf("rolling the units of v%d out to v%d", a.Release, next.Version))
	got, err := applyObjects(t.ctx, t.d, objs, false)
	if err != nil {
		return nil, err
	}
	if err := removeStale(t.ctx, t.d, a.Name, objs); err != nil {
		return nil, err
	}
	if _, err := t.store.UpdateApp(t.ctx, a.Name, func(x *app.App) error { x.Processes = a.Processes; return nil }); err != nil {
		return nil, err
	}
	err = (&rollout.Watch{Client: t.d.Client, Namespace: t.d.Namespace, App: a.Name, Release: next.Version,
		Generations: generations(got), Idle: idleTimeout(0, next), Progress: t.d.Progress}).Wait(t.ctx)
	var failure *rollout.Failure
	if errors.As(err, &failure) {
		return failure, nil
	}
	return nil, err
}

// promoteFailed puts the deployed release's units back after a promote
// whose rollout failed, and the canary back at its share.
func promoteFailed(t *Txn, next, stable *app.Release, weight int, failure *rollout.Failure, err error, start time.Time) (*Result, error) {
	if failure == nil {
		return nil, err
	}
	res := result(t.app, next, app.StatusCanary, start)
	res.Failure = failure
	if _, rerr := restore(t.ctx, t.d, t.store, t.app, stable.Version, 0); rerr != nil {
		return res, &Error{Result: res, RollbackErr: t.Explain(rerr), RollbackTo: stable.Version}
	}
	a, rerr := t.store.GetApp(t.ctx, t.app.Name)
	if rerr == nil {
		t.app = a
		_, cfg, gerr := t.store.GetRelease(t.ctx, a.Name, stable.Version)
		if rerr = gerr; rerr == nil {
			_, rerr = setWeight(t, weight, stable, cfg)
		}
	}
	res.RolledBackTo = stable.Version
	res.Canary = canaryResult(t.app)
	return res, &Error{Result: res, RollbackErr: rerr, RollbackTo: stable.Version, CanaryKept: true, Previous: stable.Version}
}

// finishPromote ends the split once the deployed release is the canary's.
func finishPromote(t *Txn, next *app.Release, cfg app.ConfigMap, start time.Time) (*Result, error) {
	if err := endSplit(t, next, cfg); err != nil {
		return nil, err
	}
	res := result(t.app, next, app.StatusDeployed, start)
	res.URLs = app.URLs(t.app)
	return res, nil
}

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
	case c.Phase == app.CanaryPromoting && aborting && c.Release != a.Release:
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
}

// settleCanary finishes, under the lock, what a stopped tug left of a
// canary, so the record, the weights and the units agree (settleFor
// decides how; docs/reliability.md, "kill -9 during a canary").
func settleCanary(t *Txn) error {
	a := t.app
	c := a.Canary
	what := settleFor(a, time.Now(), t.aborting)
	t.settled = settled{action: what, release: c.Release}
	switch what {
	case settleEnd:
		t.d.Progress.Update(fmt.Sprintf("ending the split between v%d and v%d that a stopped tug left", a.Release, c.Release))
		r, cfg, err := t.store.GetRelease(t.ctx, a.Name, a.Release)
		if err != nil {
			return err
		}
		return endSplit(t, r, cfg)
	case settleUndoPromote:
		return undoPromote(t)
	case settleFinishPromote:
		t.d.Progress.Update(fmt.Sprintf("finishing the promote of v%d that a stopped tug left", c.Release))
		_, err := promote(t, time.Now())
		return err
	case settleAbortStart:
		t.d.Progress.Update(fmt.Sprintf("aborting the canary v%d that a stopped tug left starting", c.Release))
		return abortCanary(t, app.StatusInterrupted, interruptedReason(fmt.Sprintf("the tug starting it as a %s stopped; v%d kept every request", c.Strategy, a.Release)))
	case settleFinishAbort:
		t.d.Progress.Update(fmt.Sprintf("finishing the abort of v%d that a stopped tug left", c.Release))
		return abortCanary(t, app.StatusAborted, "aborted")
	case settleKeepExpired:
		t.d.Progress.Update(fmt.Sprintf("v%d's units were kept until %s: v%d becomes the deployed release", a.Release, c.KeepUntil.Local().Format(time.TimeOnly), c.Release))
		_, err := promote(t, time.Now())
		return err
	case settleHaltSteps:
		t.d.Progress.Update(fmt.Sprintf("the tug taking v%d's steps (%v) stopped at %d%%: it keeps that share until 'tug release promote %s' or 'tug release abort %s'",
			c.Release, c.Steps, c.Weight, a.Name, a.Name))
		if err := haltSteps(t); err != nil {
			return err
		}
	}
	stable, cfg, err := t.store.GetRelease(t.ctx, a.Name, a.Release)
	if err != nil {
		return err
	}
	_, err = applySplit(t, t.app, stable, cfg, false)
	return err
}

// haltSteps records that nothing moves the canary through its steps any
// more: the tug that did held the lock until it stopped. Resuming them
// here would make whatever command came next (a scale, an env change)
// sit through minutes of steps it was not asked for and promote without
// anyone watching; the canary keeps its share and says so until 'release
// promote' or 'release abort'.
func haltSteps(t *Txn) error {
	a, err := t.store.UpdateApp(t.ctx, t.app.Name, func(x *app.App) error {
		if x.Canary != nil {
			x.Canary.StepsStopped = true
		}
		return nil
	})
	if err == nil {
		t.app = a
	}
	return err
}

// undoPromote is an abort asked for while a stopped tug's promote had not
// yet made the canary's release the deployed one: the deployed release's
// units are put back (every request still goes to the canary's units
// meanwhile), then the canary is aborted.
func undoPromote(t *Txn) error {
	a := t.app
	t.d.Progress.Update(fmt.Sprintf("undoing the promote of v%d that a stopped tug left: v%d's units back", a.Canary.Release, a.Release))
	if _, err := restore(t.ctx, t.d, t.store, a, a.Release, 0); err != nil {
		return err
	}
	a, err := t.store.GetApp(t.ctx, a.Name)
	if err != nil {
		return err
	}
	t.app = a
	return abortCanary(t, app.StatusAborted, "aborted by hand during a promote a stopped tug left")
}

// canarySelector narrows the web Service while a canary runs without
// the whole share: at 0% (starting, aborting) it selects the deployed
// release's units only, at 100% (promoting, blue-green) the canary's;
// between, both (without a Gateway, the split by units).
func canarySelector(a *app.App, sel map[string]string) {
	switch {
	case !a.Canary.SideBySide():
	case a.Canary.Weight == 0:
		sel[kube.LabelRelease] = fmt.Sprint(a.Release)
	case a.Canary.Weight == 100:
		sel[kube.LabelRelease] = fmt.Sprint(a.Canary.Release)
	}
}

// canarySteps moves a canary through its --canary-steps, one every
// --step-interval while its units stay healthy, then promotes it; a unit
// that fails meanwhile aborts it.
func (r *rolling) canarySteps(stable *app.Release, cfg app.ConfigMap) (*Result, error) {
	t := r.t
	interval := r.opts.Canary.StepInterval
	for {
		t.d.Progress.Update(fmt.Sprintf("v%d gets %d%% of requests; next step in %s", t.app.Canary.Release, t.app.Canary.Weight, interval))
		failure, err := watchCanary(t, interval)
		if err != nil {
			haltStepsCutShort(t)
			c := t.app.Canary
			return nil, fmt.Errorf("%w; the canary v%d keeps %d%% of requests: 'tug release promote %s' or 'tug release abort %s' ends it", t.Explain(err), c.Release, c.Weight, t.app.Name, t.app.Name)
		}
		if failure != nil {
			return r.canaryFailed(failure)
		}
		steps := t.app.Canary.Steps
		if len(steps) == 0 {
			break
		}
		if _, err := setWeight(t, steps[0], stable, cfg); err != nil {
			return nil, t.Explain(err)
		}
	}
	res, err := promote(t, r.start)
	return res, t.Explain(err)
}

// haltStepsCutShort records, when it still can, that the steps a cut
// short tug was taking stopped (the next command that takes the lock
// does otherwise).
func haltStepsCutShort(t *Txn) {
	if t.Lost() != nil {
		return
	}
	wctx, cancel := detached(t.ctx)
	defer cancel()
	_ = haltSteps(t.within(wctx))
}

// watchCanary watches the canary's units for d: the failure of one that
// cannot run (a crash, a failing probe), nil when they stayed healthy.
func watchCanary(t *Txn, d time.Duration) (*rollout.Failure, error) {
	ctx, cancel := context.WithTimeout(t.ctx, d)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: kube.AppSelector(t.app.Name) + "," + kube.LabelTrack + "=" + trackCanary}
	var failure *rollout.Failure
	err := kube.Until(ctx, kube.Pods(t.d.Client, t.d.Namespace, sel), func(pods map[string]*corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				if failure = rollout.Diagnose(p, time.Now()); failure != nil {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if failure != nil || t.ctx.Err() == nil && ctx.Err() != nil {
		return failure, nil
	}
	return nil, kube.TranslateError(err)
}
