package deploy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// Jobs: one CronJob per job of the release, rendered with its Deployments
// (Render), so every release (a deploy, a config change, a rollback) gives
// the jobs its image and config.
const (
	// KindJob is the tug.dev/kind of a job's CronJob, its Jobs and pods.
	// They carry no tug.dev/process or tug.dev/release label: they are not
	// units, and a rollout never counts them.
	KindJob = "job"
	// LabelJob names the job on its CronJob, Jobs and pods.
	LabelJob = "tug.dev/job"
	// AnnotationJobRelease is the release a job's pod template comes from.
	AnnotationJobRelease = "tug.dev/release"
	// jobHistory is how many finished runs of each outcome are kept.
	jobHistory = int32(3)
)

// CronJobName is the CronJob of an app's job.
func CronJobName(appName, job string) string { return appName + "-job-" + job }

// JobLabels are the labels of a job's CronJob, Jobs and pods.
func JobLabels(appName, job string) map[string]string {
	l := kube.AppLabels(appName)
	l[kube.LabelKind] = KindJob
	l[LabelJob] = job
	return l
}

// JobSelector selects the objects of an app's job ("" job: of every job).
func JobSelector(appName, job string) string {
	s := kube.KindSelector(KindJob, appName)
	if job != "" {
		s += "," + LabelJob + "=" + job
	}
	return s
}

// renderCronJobs is the release's jobs as CronJobs, by name.
func renderCronJobs(a *app.App, r *app.Release) []*batchv1.CronJob {
	var out []*batchv1.CronJob
	for _, name := range r.JobNames() {
		out = append(out, RenderCronJob(a, r, name))
	}
	return out
}

// RenderCronJob is job name of release r as a CronJob: the release's image
// (by digest once known), config (envFrom its Secret), platform variables,
// pool, volumes and pull secret, the job's limits or those of the process a
// run copies (web, else the first).
func RenderCronJob(a *app.App, r *app.Release, name string) *batchv1.CronJob {
	j := r.Jobs[name]
	c := renderContainer(a, r, name, j.Command, 0)
	c.Resources = resources(jobLimits(r, j))
	spec := corev1.PodSpec{
		Containers:         []corev1.Container{c},
		RestartPolicy:      corev1.RestartPolicyNever,
		EnableServiceLinks: new(bool),
	}
	if g := r.Rollout.GracePeriod; g > 0 {
		spec.TerminationGracePeriodSeconds = new(g)
	}
	if a.RegistrySecret != "" {
		spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: a.RegistrySecret}}
	}
	mountVolumes(&spec, r.Volumes, "")
	if sel := nodeSelector(r); len(sel) > 0 {
		spec.NodeSelector = sel
	}
	labels := JobLabels(a.Name, name)
	release := map[string]string{AnnotationJobRelease: strconv.Itoa(r.Version)}
	jobSpec := batchv1.JobSpec{
		BackoffLimit: new(j.Retries),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: release},
			Spec:       spec,
		},
	}
	if j.TimeoutSeconds > 0 {
		jobSpec.ActiveDeadlineSeconds = new(j.TimeoutSeconds)
	}
	cj := &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: CronJobName(a.Name, name), Namespace: a.Namespace, Labels: labels, Annotations: release},
		Spec: batchv1.CronJobSpec{
			Schedule:                   j.Schedule,
			ConcurrencyPolicy:          concurrencyPolicy(j.Concurrency),
			Suspend:                    new(a.JobSuspended(name)),
			SuccessfulJobsHistoryLimit: new(jobHistory),
			FailedJobsHistoryLimit:     new(jobHistory),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: release},
				Spec:       jobSpec,
			},
		},
	}
	if j.TimeZone != "" {
		cj.Spec.TimeZone = new(j.TimeZone)
	}
	return cj
}

// jobLimits are a job's own limits, else those of the process a one-off
// run copies (web, else the first).
func jobLimits(r *app.Release, j app.Job) app.Limits {
	if !j.Limits.IsZero() {
		return j.Limits
	}
	if names := sortedProcesses(r.Processes); len(names) > 0 {
		return r.Limits[names[0]]
	}
	return app.Limits{}
}

func concurrencyPolicy(c string) batchv1.ConcurrencyPolicy {
	switch c {
	case app.ConcurrencyForbid:
		return batchv1.ForbidConcurrent
	case app.ConcurrencyReplace:
		return batchv1.ReplaceConcurrent
	}
	return batchv1.AllowConcurrent
}

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
	list, err := d.Client.BatchV1().CronJobs(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: JobSelector(appName, "")})
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
	return t.Explain(applyCronJobs(t.ctx, t.d, []*batchv1.CronJob{RenderCronJob(updated, rel, job)}, opts))
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
