package deploy

import (
	"context"
	"fmt"
	"maps"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/owned"
	"tug.dev/tug/pkg/render"
)

// Jobs: one CronJob per job of the release (pkg/render renders them with
// the Deployments), applied with the release's other objects.

// cronJobs is the CronJob kind alone, for a change of the jobs in place.
func cronJobs(d Deps) owned.Table { return d.OwnedKinds().Only("CronJob") }

func cronJobObjects(cjs []*batchv1.CronJob) []owned.Object {
	out := make([]owned.Object, 0, len(cjs))
	for _, cj := range cjs {
		out = append(out, cj)
	}
	return out
}

// applyCronJobs server-side-applies the release's CronJobs.
func applyCronJobs(ctx context.Context, d Deps, cjs []*batchv1.CronJob, opts metav1.PatchOptions) error {
	return owned.Apply(ctx, d.owned(), cronJobs(d), cronJobObjects(cjs), opts, nil)
}

// guardCronJobs refuses a CronJob of the release's name that is not the
// app's (helm's, kubectl's): apply would take it over.
func guardCronJobs(ctx context.Context, d Deps, cjs []*batchv1.CronJob) error {
	return owned.Guard(ctx, d.owned(), cronJobs(d), owned.App, cronJobObjects(cjs))
}

// removeStaleCronJobs deletes the app's CronJobs of jobs the release no
// longer has (one LIST), with their Jobs and pods.
func removeStaleCronJobs(ctx context.Context, d Deps, appName string, keep []*batchv1.CronJob) error {
	return owned.Prune(ctx, d.owned(), cronJobs(d), owned.App, appName, cronJobObjects(keep))
}

// SetJobSuspended suspends or resumes an app's job under its lock: the
// record says so (a later release keeps it) and the job's CronJob is
// applied again from the deployed release. No release is made and no unit
// restarts. It is ErrNoChange when the job already was.
func SetJobSuspended(ctx context.Context, d Deps, appName, job string, suspended bool) error {
	t, err := Begin(ctx, d, appName, nil)
	if err != nil {
		return err
	}
	defer t.End()
	a := t.app
	if a.Release == 0 {
		return app.NoJobError(appName, job, nil)
	}
	rel, _, err := t.store.GetRelease(t.ctx, a.Name, a.Release)
	if err != nil {
		return err
	}
	if _, ok := rel.Jobs[job]; !ok {
		return app.NoJobError(appName, job, rel)
	}
	if !a.Copy().SetJobSuspended(job, suspended) {
		return ErrNoChange
	}
	updated, err := t.store.UpdateApp(t.ctx, a.Name, func(x *app.App) error {
		x.SetJobSuspended(job, suspended)
		return nil
	})
	if err != nil {
		return t.Explain(err)
	}
	opts := metav1.PatchOptions{FieldManager: kube.FieldManager, Force: new(true)}
	return t.Explain(applyCronJobs(t.ctx, t.d, []*batchv1.CronJob{render.CronJob(updated, rel, job)}, opts))
}

// planJobs says what a release changes of the jobs: "job report: new",
// "job report: schedule @daily -> @hourly", "job ping: removed"; nothing
// for a job that only takes the release's new image or config.
func planJobs(base, next *app.Release) []string {
	var old map[string]app.Job
	if base != nil {
		old = base.Jobs
	}
	var lines []string
	for _, name := range next.JobNames() {
		j, was := next.Jobs[name], old[name]
		switch _, existed := old[name]; {
		case !existed:
			lines = append(lines, fmt.Sprintf("job %s: new, schedule %s", name, j.Schedule))
		case j.Schedule != was.Schedule:
			lines = append(lines, fmt.Sprintf("job %s: schedule %s -> %s", name, was.Schedule, j.Schedule))
		case j != was:
			lines = append(lines, fmt.Sprintf("job %s: changed", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old)) {
		if _, ok := next.Jobs[name]; !ok {
			lines = append(lines, fmt.Sprintf("job %s: removed", name))
		}
	}
	return lines
}
