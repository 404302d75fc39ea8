package render

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// Jobs: one CronJob per job of the release, rendered with its Deployments
// (Release), so every release (a deploy, a config change, a rollback)
// gives the jobs its image and config.
const (
	// KindJob is the tug.dev/kind of a job's CronJob, its Jobs and pods.
	// They carry no tug.dev/process or tug.dev/release label: they are not
	// units, and a rollout never counts them. kube.LabelJob names the job.
	KindJob = "job"
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
	l[kube.LabelJob] = job
	return l
}

// JobSelector selects the objects of an app's job ("" job: of every job).
func JobSelector(appName, job string) string {
	s := kube.KindSelector(KindJob, appName)
	if job != "" {
		s += "," + kube.LabelJob + "=" + job
	}
	return s
}

// cronJobs is the release's jobs as CronJobs, by name.
func cronJobs(a *app.App, r *app.Release) []*batchv1.CronJob {
	var out []*batchv1.CronJob
	for _, name := range r.JobNames() {
		out = append(out, CronJob(a, r, name))
	}
	return out
}

// CronJob is job name of release r as a CronJob: the release's image
// (by digest once known), config (envFrom its Secret), platform variables,
// pool, volumes and pull secret, the job's limits or those of the process a
// run copies (web, else the first).
func CronJob(a *app.App, r *app.Release, name string) *batchv1.CronJob {
	j := r.Jobs[name]
	c := container(a, r, name, j.Command, 0)
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
	bindServices(&spec, r.Services)
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
	if names := r.ProcessNames(); len(names) > 0 {
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
