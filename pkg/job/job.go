// Package job runs an app's scheduled jobs: CronJobs that pkg/render
// renders from each release (so a deploy changes a job's image and config
// and a rollback restores them), their runs (Jobs) and a run started now.
package job

import (
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

// Job is one job as 'tug job list' and 'job info' show it; its JSON shape is
// documented in docs/output.md.
type Job struct {
	App         string `json:"app"`
	Name        string `json:"name"`
	Command     string `json:"command"`
	Schedule    string `json:"schedule"`
	TimeZone    string `json:"timeZone,omitempty"`
	Concurrency string `json:"concurrency"`
	Timeout     string `json:"timeout,omitempty"`
	Retries     int32  `json:"retries"`
	Suspended   bool   `json:"suspended"`
	// Release is the release whose image and config the job runs.
	Release int `json:"release"`
	// LastRun is the newest run (nil: none yet).
	LastRun *RunInfo `json:"lastRun,omitempty"`
	// NextRun is when the schedule fires next (nil while suspended).
	NextRun *time.Time `json:"nextRun,omitempty"`
	// Runs, newest first, are filled by Info only.
	Runs []RunInfo `json:"runs,omitempty"`
}

// RunInfo is one run of a job: a Kubernetes Job.
type RunInfo struct {
	Name string `json:"name"`
	// Manual says 'tug job run' started it, not the schedule.
	Manual    bool       `json:"manual"`
	Status    string     `json:"status"` // running, succeeded, failed
	Reason    string     `json:"reason,omitempty"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
}

// Run statuses.
const (
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// annotationManual marks a run started by 'tug job run' (as kubectl create
// job --from marks its own).
const annotationManual = "cronjob.kubernetes.io/instantiate"

// deployed is the app's record and its deployed release.
func deployed(ctx context.Context, s *app.Store, appName string) (*app.App, *app.Release, error) {
	a, err := s.GetApp(ctx, appName)
	if err != nil {
		return nil, nil, err
	}
	if a.Release == 0 {
		return a, nil, nil
	}
	rel, _, err := s.GetRelease(ctx, a.Name, a.Release)
	return a, rel, err
}

// List describes the jobs of the app's deployed release, by name, with
// their last and next runs: one read of the record and release, one LIST of
// the app's Jobs.
func List(ctx context.Context, s *app.Store, appName string, now time.Time) ([]Job, error) {
	a, rel, err := deployed(ctx, s, appName)
	if err != nil || rel == nil {
		return []Job{}, err
	}
	runs, err := listRuns(ctx, s.Client, s.Namespace, appName, "")
	if err != nil {
		return nil, err
	}
	out := []Job{}
	for _, name := range rel.JobNames() {
		j := describe(a, rel, name, now)
		if r := runs[name]; len(r) > 0 {
			j.LastRun = &r[0]
		}
		out = append(out, j)
	}
	return out, nil
}

// Info describes one job with its runs, newest first.
func Info(ctx context.Context, s *app.Store, appName, name string, now time.Time) (*Job, error) {
	a, rel, err := deployed(ctx, s, appName)
	if err != nil {
		return nil, err
	}
	if rel == nil || rel.Jobs[name].Schedule == "" {
		return nil, app.NoJobError(appName, name, rel)
	}
	runs, err := listRuns(ctx, s.Client, s.Namespace, appName, name)
	if err != nil {
		return nil, err
	}
	j := describe(a, rel, name, now)
	j.Runs = runs[name]
	if len(j.Runs) > 0 {
		j.LastRun = &j.Runs[0]
	}
	return &j, nil
}

func describe(a *app.App, rel *app.Release, name string, now time.Time) Job {
	spec := rel.Jobs[name]
	j := Job{App: a.Name, Name: name, Command: spec.Command, Schedule: spec.Schedule, TimeZone: spec.TimeZone,
		Concurrency: spec.Concurrency, Timeout: app.FormatJobTimeout(spec.TimeoutSeconds), Retries: spec.Retries,
		Suspended: a.JobSuspended(name), Release: rel.Version}
	if j.Concurrency == "" {
		j.Concurrency = app.ConcurrencyAllow
	}
	if next := spec.NextRun(now); !j.Suspended && !next.IsZero() {
		j.NextRun = &next
	}
	return j
}

// listRuns lists the app's runs (of one job, or of all), by job, newest
// first.
func listRuns(ctx context.Context, client kubernetes.Interface, ns, appName, job string) (map[string][]RunInfo, error) {
	list, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: render.JobSelector(appName, job)})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	out := map[string][]RunInfo{}
	for i := range list.Items {
		j := &list.Items[i]
		name := j.Labels[kube.LabelJob]
		out[name] = append(out[name], runOf(j))
	}
	for _, runs := range out {
		sort.Slice(runs, func(i, k int) bool {
			if !runs[i].StartedAt.Equal(runs[k].StartedAt) {
				return runs[i].StartedAt.After(runs[k].StartedAt)
			}
			return runs[i].Name > runs[k].Name
		})
	}
	return out, nil
}

// Scheduled is a job as its CronJob says it, without the app's record or
// release: what shell completion offers.
type Scheduled struct {
	Name      string
	Schedule  string
	Suspended bool
}

// ListScheduled lists the app's jobs from their CronJobs, by name: one
// LIST, no read of the record or release (List reads both). A job's name is
// its tug.dev/job label, the CronJob's name without the app's "APP-job-"
// (render.CronJobName).
func ListScheduled(ctx context.Context, client kubernetes.Interface, ns, appName string) ([]Scheduled, error) {
	list, err := client.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{LabelSelector: render.JobSelector(appName, "")})
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	out := []Scheduled{}
	for _, cj := range list.Items {
		name := cj.Labels[kube.LabelJob]
		if name == "" || !kube.Owned(cj.Labels, appName) {
			continue
		}
		out = append(out, Scheduled{Name: name, Schedule: cj.Spec.Schedule, Suspended: cj.Spec.Suspend != nil && *cj.Spec.Suspend})
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out, nil
}

// runOf is a Job as a run: failed or succeeded once its condition says so.
func runOf(j *batchv1.Job) RunInfo {
	r := RunInfo{Name: j.Name, Manual: j.Annotations[annotationManual] == "manual", Status: StatusRunning, StartedAt: j.CreationTimestamp.UTC()}
	if j.Status.StartTime != nil {
		r.StartedAt = j.Status.StartTime.UTC()
	}
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			r.Status = StatusSucceeded
		case batchv1.JobFailed:
			r.Status, r.Reason = StatusFailed, c.Reason
		default:
			continue
		}
		end := c.LastTransitionTime.UTC()
		if j.Status.CompletionTime != nil {
			end = j.Status.CompletionTime.UTC()
		}
		r.EndedAt = &end
	}
	return r
}

// SetSuspended suspends or resumes a job: its schedule stops (running runs
// go on) or starts again. See deploy.SetJobSuspended.
func SetSuspended(ctx context.Context, d deploy.Deps, appName, name string, suspended bool) error {
	return deploy.SetJobSuspended(ctx, d, appName, name, suspended)
}

// Add is 'tug job add': job name set on the deployed release (and any
// staged one) in place, its CronJob applied; no release is made and no
// unit restarts (deploy.ChangeJobs).
func Add(ctx context.Context, d deploy.Deps, appName, name string, j app.Job) (*deploy.Result, error) {
	return deploy.ChangeJobs(ctx, d, appName, "job "+name+" set", func(_ *app.App, r *app.Release) error {
		r.SetJob(name, j)
		return nil
	})
}

// Remove is 'tug job remove': the deployed release without job name, in
// place; its CronJob goes, with its runs.
func Remove(ctx context.Context, d deploy.Deps, appName, name string) (*deploy.Result, error) {
	return deploy.ChangeJobs(ctx, d, appName, "job "+name+" removed", func(a *app.App, r *app.Release) error {
		return r.RemoveJob(a.Name, name)
	})
}

// cronJob reads job name's CronJob, which must be the app's.
func cronJob(ctx context.Context, client kubernetes.Interface, ns, appName, name string) (*batchv1.CronJob, error) {
	cjName := render.CronJobName(appName, name)
	cj, err := client.BatchV1().CronJobs(ns).Get(ctx, cjName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("job %q of app %q has no CronJob %s in namespace %q; a deploy of the app applies it again", name, appName, cjName, ns)
	}
	if _, err := kube.CheckOwned("CronJob", ns, cjName, appName, cj, err); err != nil {
		return nil, err
	}
	return cj, nil
}
