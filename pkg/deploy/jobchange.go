package deploy

import (
	"context"
	"fmt"
	"maps"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

// ChangeJobs adds, changes or removes an app's scheduled jobs (edit changes
// a release's Jobs) in place on the deployed release, and on any staged one
// newer than it, as ChangeRollout changes the pace: the job's CronJob is
// applied (or deleted with its runs) and no unit restarts, as Heroku
// Scheduler restarts nothing. The change is recorded in the release's
// RolloutChanges. Before the first deploy it is refused as a settings
// change is.
func ChangeJobs(ctx context.Context, d Deps, appName, message string, edit func(*app.App, *app.Release) error) (*Result, error) {
	start := time.Now()
	t, err := Begin(ctx, d, appName, nil)
	if err != nil {
		return nil, err
	}
	defer t.End()
	if err := gate(t, "changing the jobs"); err != nil {
		return nil, err
	}
	ctx, d, store, a := t.ctx, t.d, t.store, t.app
	targets, err := inPlaceTargets(ctx, store, a)
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("app %q has not been deployed yet; deploy it first with 'tug app deploy %s --image IMAGE'", a.Name, a.Name)
	}
	changed, err := tryJobEdits(a, targets, edit)
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 {
		// the records say so already: a job add a stopped tug left half
		// done (records written, CronJob not yet) is finished, so running
		// it again works; bad input never gets here
		if err := t.Lost(); err != nil {
			return nil, err
		}
		if err := syncCronJobs(ctx, d, a, targets[0]); err != nil {
			return nil, t.Explain(err)
		}
		return nil, ErrNoChange
	}
	serving := targets[0]
	cjs := renderCronJobs(a, serving)
	if err := guardCronJobs(ctx, d, cjs); err != nil {
		return nil, t.Explain(err)
	}
	if err := t.Lost(); err != nil {
		return nil, err
	}
	d.Progress.Update(fmt.Sprintf("changing the jobs of v%d in place", serving.Version))
	// the records first: a CronJob left unapplied below (a failed request,
	// a killed tug) is applied by the next rollout from them
	if serving, err = recordRollout(ctx, store, a, targets, changed, edit, app.RolloutChange{At: time.Now().UTC(), Author: d.Holder.User, Message: message}); err != nil {
		return nil, t.Explain(err)
	}
	opts := metav1.PatchOptions{FieldManager: kube.FieldManager, Force: new(true)}
	if err := applyCronJobs(ctx, d, cjs, opts); err != nil {
		return nil, fmt.Errorf("the jobs of v%d are recorded, but their CronJobs are not all applied (the next rollout applies them): %w", serving.Version, t.Explain(err))
	}
	if err := removeStaleCronJobs(ctx, d, a.Name, cjs); err != nil {
		return nil, fmt.Errorf("the jobs of v%d are recorded, but a removed job's CronJob is still there (the next rollout removes it): %w", serving.Version, t.Explain(err))
	}
	res := NewResult(a, serving, app.StatusDeployed, start)
	res.UnitsRestarted = new(false)
	return res, nil
}

// tryJobEdits edits the jobs of every target before anything is written,
// so an edit that refuses leaves all as it was; it returns the versions
// whose jobs changed.
func tryJobEdits(a *app.App, targets []*app.Release, edit func(*app.App, *app.Release) error) (map[int]bool, error) {
	changed := map[int]bool{}
	for _, r := range targets {
		before := maps.Clone(r.Jobs)
		if err := edit(a, r); err != nil {
			return nil, err
		}
		if !maps.Equal(before, r.Jobs) {
			changed[r.Version] = true
		}
	}
	return changed, nil
}

// renderCronJobs renders the CronJob of each job release r records.
func renderCronJobs(a *app.App, r *app.Release) []*batchv1.CronJob {
	cjs := make([]*batchv1.CronJob, 0, len(r.Jobs))
	for _, name := range r.JobNames() {
		cjs = append(cjs, render.CronJob(a, r, name))
	}
	return cjs
}

// syncCronJobs makes the app's CronJobs those release r records: applied
// when missing or different, removed when r has no such job.
func syncCronJobs(ctx context.Context, d Deps, a *app.App, r *app.Release) error {
	cjs := renderCronJobs(a, r)
	if err := guardCronJobs(ctx, d, cjs); err != nil {
		return err
	}
	if err := applyCronJobs(ctx, d, cjs, metav1.PatchOptions{FieldManager: kube.FieldManager, Force: new(true)}); err != nil {
		return err
	}
	return removeStaleCronJobs(ctx, d, a.Name, cjs)
}
