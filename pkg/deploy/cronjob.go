package deploy

import (
	"context"
	"fmt"
	"maps"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

// Jobs: one CronJob per job of the release (pkg/render renders them with
// the Deployments), applied with the release's other objects.

// applyCronJobs server-side-applies the release's CronJobs.
func applyCronJobs(ctx context.Context, d Deps, cjs []*batchv1.CronJob, opts metav1.PatchOptions) error {
	for _, cj := range cjs {
		err := write{"cron job", cj.Name, cj, func(n string, b []byte, o metav1.PatchOptions) error {
			_, err := d.Client.BatchV1().CronJobs(d.Namespace).Patch(ctx, n, types.ApplyPatchType, b, o)
			return err
		}}.apply(opts)
		if err != nil {
			return err
		}
	}
	return nil
}

// guardCronJobs refuses a CronJob of the release's name that is not the
// app's (helm's, kubectl's): apply would take it over.
func guardCronJobs(ctx context.Context, d Deps, cjs []*batchv1.CronJob) error {
	for _, cj := range cjs {
		obj, err := d.Client.BatchV1().CronJobs(d.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
		if _, err := kube.CheckOwned("CronJob", d.Namespace, cj.Name, cj.Labels[kube.LabelApp], obj, err); err != nil {
			return err
		}
	}
	return nil
}

// removeStaleCronJobs deletes the app's CronJobs of jobs the release no
// longer has (one LIST), with their Jobs and pods.
func removeStaleCronJobs(ctx context.Context, d Deps, appName string, keep []*batchv1.CronJob) error {
	list, err := d.Client.BatchV1().CronJobs(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: render.JobSelector(appName, "")})
	if apierrors.IsForbidden(err) && len(keep) == 0 {
		// a Role from before jobs: an app without jobs deploys as before
		return nil
	}
	if err != nil {
		return kube.TranslateError(err)
	}
	names := map[string]bool{}
	for _, cj := range keep {
		names[cj.Name] = true
	}
	for _, cj := range list.Items {
		if names[cj.Name] || !kube.Owned(cj.Labels, appName) {
			continue
		}
		err := d.Client.BatchV1().CronJobs(d.Namespace).Delete(ctx, cj.Name, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
		if err != nil && !apierrors.IsNotFound(err) {
			return kube.TranslateError(err)
		}
	}
	return nil
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
