package canary

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/rollout"
)

// starting is a canary or blue-green deploy whose release is stored and
// counted (deploy.Started).
type starting struct {
	t *deploy.Txn
	s *deploy.Started
}

// run is the rest of a canary or blue-green deploy: record the canary
// (starting), send every request to the deployed release's own units,
// start the canary's units and wait for them, then give them their share.
func (r *starting) run() (*deploy.Result, error) {
	t, next, c := r.t, r.s.Next, r.s.Opts.Canary
	a := t.App()
	stable, stableCfg, err := t.Store().GetRelease(t.Ctx(), a.Name, a.Release)
	if err != nil {
		return r.s.Interrupted(err)
	}
	rec := &app.Canary{Release: next.Version, Strategy: c.Strategy, Phase: app.CanaryStarting, Steps: c.Steps,
		StartedAt: time.Now().UTC(), Exact: render.Gatewayed(a)}
	rec.Processes = r.s.Processes
	units := a.Processes[app.WebProcess].Units()
	rec.Units = app.CanaryUnits(units, c.Weight)
	if c.Strategy == app.StrategyBlueGreen {
		// blue-green starts at the size the app runs once promoted
		if rec.Units, err = webSize(t.Ctx(), t.Deps(), a, rec); err != nil {
			return r.s.Interrupted(err)
		}
		if c.Keep > 0 {
			rec.KeepUntil = time.Now().Add(c.Keep).UTC()
		}
	}
	if c.StepInterval > 0 {
		rec.StepInterval = c.StepInterval.String()
	}
	a, err = t.Update(func(x *app.App) error { x.Canary = rec; return nil })
	if err != nil {
		return r.s.Interrupted(err)
	}
	if err := t.Store().SetReleaseStatus(t.Ctx(), a.Name, next.Version, app.StatusCanary, ""); err != nil {
		return r.s.Interrupted(err)
	}
	// every request to the deployed release's units before a canary unit
	// can be ready
	if _, err := applySplit(t, stable, stableCfg, true); err != nil {
		return r.cutShort(err)
	}
	failure, err := r.startUnits(rec.Units)
	switch {
	case failure != nil:
		return r.failed(failure)
	case err != nil:
		return r.cutShort(err)
	}
	weight := c.Weight
	if c.Strategy == app.StrategyBlueGreen {
		weight = 100
	}
	routing, err := setWeight(t, weight, stable, stableCfg)
	if err != nil {
		return r.cutShort(err)
	}
	if len(c.Steps) > 0 {
		return r.steps(stable, stableCfg)
	}
	return r.running(routing), nil
}

// startUnits starts the canary's units and waits until they are ready:
// the failure of one that cannot run, or why the wait stopped.
func (r *starting) startUnits(units int32) (*rollout.Failure, error) {
	t, next := r.t, r.s.Next
	a, d := t.App(), t.Deps()
	d.Progress.Update(fmt.Sprintf("starting %d web %s of v%d beside v%d", units, plural(units), next.Version, a.Release))
	got, err := t.Apply(render.Objects{Deployments: []*appsv1.Deployment{render.Canary(a, next, r.s.Config)}})
	if err != nil {
		return nil, err
	}
	ro := &rollout.Watch{Client: d.Client, Namespace: d.Namespace, App: a.Name, Release: next.Version,
		Generations: got.Generations(), Idle: r.s.Opts.Timeout, Progress: d.Progress}
	err = ro.Wait(t.Ctx())
	var failure *rollout.Failure
	if errors.As(err, &failure) {
		return failure, nil
	}
	if err == nil {
		t.RecordImageID(next, ro.ImageID(t.Ctx()))
	}
	return nil, err
}

// running is the Result of a canary that runs.
func (r *starting) running(routing string) *deploy.Result {
	a := r.t.App()
	res := deploy.NewResult(a, r.s.Next, app.StatusCanary, r.s.Begun)
	res.Canary, res.URLs, res.Routing = resultOf(a), app.URLs(a), routing
	return res
}

func plural(n int32) string {
	if n == 1 {
		return "unit"
	}
	return "units"
}

// failed ends a canary whose units cannot run: they go, the deployed
// release keeps every request, and the error is a failed deploy's (same
// diagnosis, same exit code).
func (r *starting) failed(failure *rollout.Failure) (*deploy.Result, error) {
	t := r.t
	res := r.s.Failed()
	res.Failure = failure
	stable := t.App().Release
	wctx, cancel := deploy.Detached(t.Ctx())
	defer cancel()
	err := abortCanary(t.Within(wctx), app.StatusFailed, "canary aborted: "+failure.Message)
	res.DurationMS = time.Since(r.s.Begun).Milliseconds()
	if err != nil {
		return res, &deploy.Error{Result: res, RollbackErr: t.Explain(err), RollbackTo: stable}
	}
	res.RolledBackTo = stable
	return res, &deploy.Error{Result: res, CanaryAborted: true, Previous: stable}
}

// cutShort ends a canary start cut short (Ctrl-C, a lost lock, an API
// failure): what can be undone now is (on a detached context, unless the
// lock is gone); the rest is the next command's (settleCanary).
func (r *starting) cutShort(err error) (*deploy.Result, error) {
	t := r.t
	err = t.Explain(err)
	if t.Lost() == nil {
		wctx, cancel := deploy.Detached(t.Ctx())
		defer cancel()
		if aerr := abortCanary(t.Within(wctx), app.StatusInterrupted, deploy.InterruptedReason(err.Error())); aerr == nil {
			return nil, err
		}
	}
	return nil, r.s.CutShort(err)
}

// steps moves a canary through its --canary-steps, one every
// --step-interval while its units stay healthy, then promotes it; a unit
// that fails meanwhile aborts it.
func (r *starting) steps(stable *app.Release, cfg app.ConfigMap) (*deploy.Result, error) {
	t := r.t
	interval := r.s.Opts.Canary.StepInterval
	for {
		c := t.App().Canary
		t.Deps().Progress.Update(fmt.Sprintf("v%d gets %d%% of requests; next step in %s", c.Release, c.Weight, interval))
		failure, err := watchCanary(t, interval)
		if err != nil {
			haltStepsCutShort(t)
			return nil, fmt.Errorf("%w; the canary v%d keeps %d%% of requests: 'tug release promote %s' or 'tug release abort %s' ends it", t.Explain(err), c.Release, c.Weight, t.App().Name, t.App().Name)
		}
		if failure != nil {
			return r.failed(failure)
		}
		steps := t.App().Canary.Steps
		if len(steps) == 0 {
			break
		}
		if _, err := setWeight(t, steps[0], stable, cfg); err != nil {
			return nil, t.Explain(err)
		}
	}
	res, err := promote(t, r.s.Begun)
	return res, t.Explain(err)
}

// haltStepsCutShort records, when it still can, that the steps a cut
// short tug was taking stopped (the next command that takes the lock
// does otherwise).
func haltStepsCutShort(t *deploy.Txn) {
	if t.Lost() != nil {
		return
	}
	wctx, cancel := deploy.Detached(t.Ctx())
	defer cancel()
	_ = haltSteps(t.Within(wctx))
}

// watchCanary watches the canary's units for d: the failure of one that
// cannot run (a crash, a failing probe), nil when they stayed healthy.
func watchCanary(t *deploy.Txn, d time.Duration) (*rollout.Failure, error) {
	ctx, cancel := context.WithTimeout(t.Ctx(), d)
	defer cancel()
	deps := t.Deps()
	var failure *rollout.Failure
	err := kube.Until(ctx, kube.Pods(deps.Client, deps.Namespace, canaryUnits(t.App().Name)), func(pods map[string]*corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				if failure = rollout.Diagnose(p, time.Now()); failure != nil {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if failure != nil || t.Ctx().Err() == nil && ctx.Err() != nil {
		return failure, nil
	}
	return nil, kube.TranslateError(err)
}

// canaryUnits selects the pods of appName's canary.
func canaryUnits(appName string) metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: kube.AppSelector(appName) + "," + kube.LabelTrack + "=" + render.TrackCanary}
}
