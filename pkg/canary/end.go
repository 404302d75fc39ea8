package canary

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/route"
)

// setWeight records the canary's new share, then gives it: the record
// first, so a tug stopped in between leaves a weight the next command
// applies.
func setWeight(t *deploy.Txn, weight int, stable *app.Release, cfg app.ConfigMap) (string, error) {
	a, err := t.Update(func(x *app.App) error {
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
	t.Deps().Progress.Update(fmt.Sprintf("v%d gets %d%% of requests, v%d %d%%", a.Canary.Release, weight, a.Release, 100-weight))
	return applySplit(t, stable, cfg, true)
}

// applySplit applies what splits the app's requests as t's record says
// (its Service, the two sides' Services, its routes), and, with confirm,
// waits for the router to take the routes.
func applySplit(t *deploy.Txn, stable *app.Release, cfg app.ConfigMap, confirm bool) (string, error) {
	a, d := t.App(), t.Deps()
	full := d.Rendering(a, stable, cfg)
	got, err := t.Apply(render.Objects{Service: full.Service, TrackServices: full.TrackServices, Routes: full.Routes, Middleware: full.Middleware})
	if err != nil || !confirm {
		return "", err
	}
	return d.Routes().Confirm(t.Ctx(), d.Progress, nil, a, got.Routes(), render.SplitProbe(a))
}

// abortCanary sends every request back to the deployed release, removes
// the canary's units, and marks its release st (aborted, failed,
// interrupted) with reason.
func abortCanary(t *deploy.Txn, st app.Status, reason string) error {
	a := t.App()
	if a.Canary == nil {
		return nil
	}
	v := a.Canary.Release
	stable, cfg, err := t.Store().GetRelease(t.Ctx(), a.Name, a.Release)
	if err != nil {
		return err
	}
	a, err = t.Update(func(x *app.App) error {
		if x.Canary != nil {
			x.Canary.Phase, x.Canary.Weight = app.CanaryAborting, 0
			x.Canary.AbortStatus, x.Canary.AbortReason = st, reason
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.Deps().Progress.Update(fmt.Sprintf("every request back to v%d", a.Release))
	if _, err := applySplit(t, stable, cfg, true); err != nil {
		return err
	}
	t.Deps().Progress.Update(fmt.Sprintf("removing the units of v%d", v))
	if err := removeCanaryUnits(t); err != nil {
		return err
	}
	if err := t.Store().SetReleaseStatus(t.Ctx(), a.Name, v, st, reason); err != nil && !app.IsNotFound(err) {
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
func endSplit(t *deploy.Txn, r *app.Release, cfg app.ConfigMap) error {
	a, err := t.Update(func(x *app.App) error {
		if x.Canary != nil {
			x.Canary.Phase = app.CanaryEnding
		}
		return nil
	})
	if err != nil {
		return err
	}
	objs := t.Deps().Rendering(a, r, cfg) // an ending canary renders as one release
	got, err := t.Apply(objs)
	if err != nil {
		return err
	}
	if err := t.RemoveStale(objs); err != nil {
		return err
	}
	a, err = t.Update(func(x *app.App) error { x.Canary = nil; return nil })
	if err != nil {
		return err
	}
	_, err = t.Deps().Routes().Confirm(t.Ctx(), t.Deps().Progress, nil, a, got.Routes(), route.ProbeServe)
	return err
}

// removeCanaryUnits deletes the canary's Deployment and waits (up to
// canaryGoneTimeout, or half the time t's context has left) until its
// units are gone, so no route that names the web Service again can reach
// one that is still stopping.
func removeCanaryUnits(t *deploy.Txn) error {
	appName, d := t.App().Name, t.Deps()
	name := render.CanaryDeploymentName(appName)
	deps := d.Client.AppsV1().Deployments(d.Namespace)
	err := deploy.DeleteOwned(t.Ctx(), appName, func() (metav1.Object, error) {
		return deps.Get(t.Ctx(), name, metav1.GetOptions{})
	}, func() error {
		return deps.Delete(t.Ctx(), name, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
	})
	if err != nil {
		return err
	}
	wait := canaryGoneTimeout
	if end, ok := t.Ctx().Deadline(); ok {
		// a cleanup context (deploy.Detached): the rest of the abort
		// needs time too, so the wait takes half of what is left
		wait = min(wait, time.Until(end)/2)
	}
	ctx, cancel := context.WithTimeout(t.Ctx(), wait)
	defer cancel()
	err = kube.Until(ctx, kube.Pods(d.Client, d.Namespace, canaryUnits(appName)), func(pods map[string]*corev1.Pod) (bool, error) {
		return len(pods) == 0, nil
	})
	if err != nil && t.Ctx().Err() == nil && ctx.Err() != nil {
		// still stopping: a unit that got SIGTERM (its pod is being
		// deleted) has left the Services' endpoints; one that has not
		// (a slow garbage collector) still serves, so the split must not
		// end yet
		pods, lerr := d.Client.CoreV1().Pods(d.Namespace).List(t.Ctx(), canaryUnits(appName))
		if lerr != nil {
			return kube.TranslateError(lerr)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				return fmt.Errorf("the canary's unit %s of app %s was not stopping %s after its Deployment was deleted", p.Name, appName, wait.Round(time.Second))
			}
		}
		return nil
	}
	return kube.TranslateError(err)
}

// canaryGoneTimeout bounds the wait for a canary's units to stop.
const canaryGoneTimeout = 90 * time.Second

// abort is Abort in t; did is what settling the record did first (an
// abort a stopped tug left may already be finished, or a promote).
func abort(t *deploy.Txn, start time.Time, why string, did settled) (*deploy.Result, error) {
	a := t.App()
	if a.Canary == nil {
		switch {
		case did.action == settleFinishPromote || did.action == settleEnd && did.release == a.Release:
			return nil, &PromotedError{App: a.Name, Release: did.release}
		case did.action != settleNone:
			// the abort a stopped tug left (or its start, never served) is done
			return deployedResult(t, start)
		}
		return nil, &NoCanaryError{App: a.Name, Verb: "abort"}
	}
	if err := abortCanary(t, app.StatusAborted, why); err != nil {
		return nil, t.Explain(err)
	}
	return deployedResult(t, start)
}

// deployedResult is the Result of a change that leaves the record's
// release deployed alone.
func deployedResult(t *deploy.Txn, start time.Time) (*deploy.Result, error) {
	a := t.App()
	r, _, err := t.Store().GetRelease(t.Ctx(), a.Name, a.Release)
	if err != nil {
		return nil, t.Explain(err)
	}
	res := deploy.NewResult(a, r, app.StatusDeployed, start)
	res.URLs = app.URLs(a)
	return res, nil
}

// promote is Promote in t, from whatever phase the canary is in. No unit
// gets more than its share of requests on the way: the canary's units
// first grow to the web process's full size (through a Gateway the split
// stays as it was; without one, the split by units on the shared Service,
// the canary's share grows with its units), then every request goes to
// them, and only then are the deployed release's units replaced (before,
// every request went to a canary of one unit among four while the others
// were replaced).
func promote(t *deploy.Txn, start time.Time) (*deploy.Result, error) {
	a := t.App()
	c := a.Canary
	next, cfg, err := t.Store().GetRelease(t.Ctx(), a.Name, c.Release)
	if err != nil {
		return nil, err
	}
	if a.Release == c.Release {
		// the record names the canary's release: a stopped tug may have
		// written it and not yet its status
		if err := t.MarkDeployed(next, 0); err != nil {
			return nil, err
		}
		return finishPromote(t, next, cfg, start)
	}
	stable, stableCfg, err := t.Store().GetRelease(t.Ctx(), a.Name, a.Release)
	if err != nil {
		return nil, err
	}
	full, err := fullSize(t)
	if err != nil {
		return nil, err
	}
	if _, err := t.Update(func(x *app.App) error {
		if x.Canary.Phase != app.CanaryPromoting {
			// a resumed promote finds 100 in Weight and the grown units:
			// what to give back if it fails is what it began with
			x.Canary.WeightBefore, x.Canary.UnitsBefore = x.Canary.Weight, x.Canary.Units
			x.Canary.ProcessesBefore = maps.Clone(x.Processes)
		}
		x.Canary.Phase, x.Canary.Units = app.CanaryPromoting, max(x.Canary.Units, full)
		return nil
	}); err != nil {
		return nil, err
	}
	if failure, err := growCanary(t, next, cfg); err != nil || failure != nil {
		return promoteFailed(t, next, stable, failure, err, start)
	}
	if a, err = t.Update(func(x *app.App) error { x.Canary.Weight = 100; return nil }); err != nil {
		return nil, err
	}
	t.Deps().Progress.Update(fmt.Sprintf("every request to v%d's %d web %s", c.Release, a.Canary.Units, plural(a.Canary.Units)))
	if _, err := applySplit(t, stable, stableCfg, true); err != nil {
		return nil, err
	}
	if failure, err := rollToCanary(t, next, cfg); err != nil || failure != nil {
		return promoteFailed(t, next, stable, failure, err, start)
	}
	if err := t.MarkDeployed(next, stable.Version); err != nil {
		return nil, err
	}
	return finishPromote(t, next, cfg, start)
}

// fullSize is how many web units the canary's release runs once
// promoted: what the deploy asked for, else what the web process runs;
// where either autoscales, no fewer than the web Deployment runs now (its
// autoscaler may have moved it past the recorded count).
func fullSize(t *deploy.Txn) (int32, error) {
	a := t.App()
	return webSize(t.Ctx(), t.Deps(), a, a.Canary)
}

// webSize is fullSize for app a and canary c (being started or running).
func webSize(ctx context.Context, d deploy.Deps, a *app.App, c *app.Canary) (int32, error) {
	n := max(c.WebUnits(a.Processes), 1)
	asked, ok := c.Processes[app.WebProcess]
	if a.Processes[app.WebProcess].Autoscale == nil && (!ok || asked.Autoscale == nil) {
		return n, nil
	}
	web, err := d.Client.AppsV1().Deployments(d.Namespace).Get(ctx, render.DeploymentName(a.Name, app.WebProcess), metav1.GetOptions{})
	if err != nil {
		return 0, kube.TranslateError(err)
	}
	return max(ptr.Deref(web.Spec.Replicas, 1), n), nil
}

// growCanary gives the canary's Deployment the units the record says and
// waits until they are ready, the split as it was meanwhile.
func growCanary(t *deploy.Txn, next *app.Release, cfg app.ConfigMap) (*rollout.Failure, error) {
	a, d := t.App(), t.Deps()
	d.Progress.Update(fmt.Sprintf("growing v%d to %d web %s before it gets every request", next.Version, a.Canary.Units, plural(a.Canary.Units)))
	got, err := t.Apply(render.Objects{Deployments: []*appsv1.Deployment{render.Canary(a, next, cfg)}})
	if err != nil {
		return nil, err
	}
	return waitFor(t, next, got)
}

// waitFor watches the rollout of what got applied to release next: the
// failure of a unit that cannot run, or why the wait stopped.
func waitFor(t *deploy.Txn, next *app.Release, got *deploy.Applied) (*rollout.Failure, error) {
	d := t.Deps()
	err := (&rollout.Watch{Client: d.Client, Namespace: d.Namespace, App: t.App().Name, Release: next.Version,
		Generations: got.Generations(), Idle: deploy.IdleTimeout(next), Progress: d.Progress}).Wait(t.Ctx())
	var failure *rollout.Failure
	if errors.As(err, &failure) {
		return failure, nil
	}
	return nil, err
}

// rollToCanary rolls the deployed release's Deployments out to the
// canary's release next, with the formation the deploy asked for,
// keeping the canary's units (they take every request meanwhile).
func rollToCanary(t *deploy.Txn, next *app.Release, cfg app.ConfigMap) (*rollout.Failure, error) {
	a, d := t.App(), t.Deps()
	if a.Canary.Processes != nil {
		a.Processes = maps.Clone(a.Canary.Processes)
	}
	deploy.WithProcesses(a, next)
	objs := d.Rendering(a, next, cfg)
	d.Progress.Update(fmt.Sprintf("rolling the units of v%d out to v%d", a.Release, next.Version))
	got, err := t.Apply(objs)
	if err != nil {
		return nil, err
	}
	if err := t.RemoveStale(objs); err != nil {
		return nil, err
	}
	procs := a.Processes
	if _, err := t.Update(func(x *app.App) error { x.Processes = procs; return nil }); err != nil {
		return nil, err
	}
	return waitFor(t, next, got)
}

// putBackBeforePromote writes into the record the formation and canary
// units the promote began with (a dropped process's units and autoscaler
// included), for a Restore to render.
func putBackBeforePromote(t *deploy.Txn) error {
	_, err := t.Update(func(x *app.App) error {
		if c := x.Canary; c != nil && c.ProcessesBefore != nil {
			x.Processes = maps.Clone(c.ProcessesBefore)
			c.Units = max(c.UnitsBefore, 1)
		}
		return nil
	})
	return err
}

// promoteFailed puts the deployed release's units back after a promote
// whose rollout failed, as they were, and the canary back at its units
// and share.
func promoteFailed(t *deploy.Txn, next, stable *app.Release, failure *rollout.Failure, err error, start time.Time) (*deploy.Result, error) {
	if failure == nil {
		return nil, err
	}
	res := deploy.NewResult(t.App(), next, app.StatusCanary, start)
	res.Failure = failure
	weight := t.App().Canary.WeightBefore
	rerr := putBackBeforePromote(t)
	if rerr == nil {
		rerr = t.Restore(stable.Version)
	}
	if rerr != nil {
		return res, &deploy.Error{Result: res, RollbackErr: t.Explain(rerr), RollbackTo: stable.Version}
	}
	_, cfg, rerr := t.Store().GetRelease(t.Ctx(), t.App().Name, stable.Version)
	if rerr == nil {
		_, rerr = setWeight(t, weight, stable, cfg)
	}
	if rerr == nil {
		// the canary's units shrink back to their share
		next, ncfg, gerr := t.Store().GetRelease(t.Ctx(), t.App().Name, next.Version)
		if rerr = gerr; rerr == nil {
			_, rerr = t.Apply(render.Objects{Deployments: []*appsv1.Deployment{render.Canary(t.App(), next, ncfg)}})
		}
	}
	res.RolledBackTo = stable.Version
	res.Canary = resultOf(t.App())
	return res, &deploy.Error{Result: res, RollbackErr: rerr, RollbackTo: stable.Version, CanaryKept: true, Previous: stable.Version}
}

// finishPromote ends the split once the deployed release is the canary's.
func finishPromote(t *deploy.Txn, next *app.Release, cfg app.ConfigMap, start time.Time) (*deploy.Result, error) {
	if err := endSplit(t, next, cfg); err != nil {
		return nil, err
	}
	res := deploy.NewResult(t.App(), next, app.StatusDeployed, start)
	res.URLs = app.URLs(t.App())
	return res, nil
}
