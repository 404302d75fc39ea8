package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/session"
)

// RunOptions are 'tug job run”s.
type RunOptions struct {
	App  string
	Name string
}

// RunResult names the run (a Job) that ran.
type RunResult struct {
	Run string `json:"run"`
}

const (
	// manualRunTTL is how long a finished run of 'tug job run' is kept,
	// for 'tug job logs' (the CronJob's history limit may drop it sooner).
	manualRunTTL = int32(24 * 3600)
	// createTimeout bounds the creation of the run's Job.
	createTimeout = 30 * time.Second
	// cleanupTimeout bounds the deletion of an interrupted run's Job.
	cleanupTimeout = 30 * time.Second
	// annotationRunBy names who started a run.
	annotationRunBy = "tug.dev/run-by"
)

// TimeoutError is a run stopped at its job's timeout (the Job's
// activeDeadlineSeconds); its exit code is timeout(1)'s.
type TimeoutError struct {
	Run     string
	Timeout string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("run %s stopped: it did not finish within the job's timeout %s", e.Run, e.Timeout)
}

// ExitCode is 124, as a timed-out 'tug run'.
func (e *TimeoutError) ExitCode() int { return session.CodeTimeout }

// Run starts a run of job o.Name now, from its CronJob's template (what the
// schedule runs: the deployed release's image and config), once: a failed
// run is not retried, so its exit code is the command's. It follows the
// run's pod as 'tug run' does (session.FollowPod: progress while it
// starts, its log on stdout) and returns its exit code as an
// *session.ExitError. A finished run is kept for 'tug job logs'; one cut
// short (Ctrl-C, SIGTERM, SIGHUP, a lost connection) is deleted, pods
// included. A tug killed outright leaves the run to the cluster, which
// stops it at the job's timeout.
func Run(ctx context.Context, d session.Deps, o RunOptions) (*RunResult, error) {
	ctx, cancel := session.WithHangup(ctx)
	defer cancel()
	s := &app.Store{Client: d.Client, Namespace: d.Namespace}
	a, rel, err := deployed(ctx, s, o.App)
	if err != nil {
		return nil, err
	}
	if rel == nil || rel.Jobs[o.Name].Schedule == "" {
		return nil, app.NoJobError(a.Name, o.Name, rel)
	}
	cj, err := cronJob(ctx, d.Client, d.Namespace, a.Name, o.Name)
	if err != nil {
		return nil, err
	}
	user := "unknown"
	if d.User != nil {
		user = d.User()
	}
	job := manualJob(cj, user)
	r := &manualRun{d: d, job: job}
	defer r.cleanup(ctx)
	if err := r.create(ctx); err != nil {
		return nil, err
	}
	code, err := r.follow(ctx, fmt.Sprintf("job %s, release v%d", o.Name, rel.Version))
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, err
	case code != 0:
		return &RunResult{Run: job.Name}, &session.ExitError{Code: code}
	}
	return &RunResult{Run: job.Name}, nil
}

// manualJob is a run of cj now: its job template, tried once, owned by cj
// but not controlled by it (so removing the job removes it, and the
// CronJob's history limit does not), marked as started by hand.
func manualJob(cj *batchv1.CronJob, user string) *batchv1.Job {
	tmpl := cj.Spec.JobTemplate.DeepCopy()
	annotations := maps.Clone(tmpl.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[annotationManual] = "manual"
	annotations[annotationRunBy] = user
	spec := tmpl.Spec
	spec.BackoffLimit = new(int32(0))
	spec.TTLSecondsAfterFinished = new(manualRunTTL)
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			// chosen here, not by the server, so the run can be deleted even
			// when the answer to its creation is lost
			Name: cj.Name + "-run-" + utilrand.String(5), Namespace: cj.Namespace,
			Labels: maps.Clone(tmpl.Labels), Annotations: annotations,
			// Owned, so removing the job removes its runs, but not as its
			// controller: the CronJob controller's history limit deletes the
			// finished Jobs it controls, and took a run with them within
			// minutes on a frequent schedule; the TTL keeps it a day.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID}},
		},
		Spec: spec,
	}
}

// manualRun is one 'tug job run' under way.
type manualRun struct {
	d                 session.Deps
	job               *batchv1.Job
	created, finished bool
}

// create makes the run's Job; like 'tug run”s pod, not cancelled by
// Ctrl-C, so an answer lost half-way cannot leave a Job cleanup misses.
func (r *manualRun) create(parent context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), createTimeout)
	defer cancel()
	r.created = true
	if _, err := r.d.Client.BatchV1().Jobs(r.job.Namespace).Create(ctx, r.job, metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil {
		r.created = false
		return fmt.Errorf("creating run %s: %w", r.job.Name, kube.TranslateError(err))
	}
	return parent.Err()
}

// follow waits for the run's pod and follows it to its exit code.
func (r *manualRun) follow(ctx context.Context, what string) (int, error) {
	pod, err := r.pod(ctx)
	if err != nil {
		return 0, err
	}
	c := r.job.Spec.Template.Spec.Containers[0]
	code, err := session.FollowPod(ctx, r.d, pod, c.Name, append(append([]string{}, c.Command...), c.Args...), what)
	if (err != nil || code != 0) && ctx.Err() == nil {
		// a pod stopped at the Job's deadline is killed (its exit code a
		// signal's, 137 or 143) or deleted by the Job controller: the Job
		// says why, and the run ends as a timeout either way
		if j, gerr := r.d.Client.BatchV1().Jobs(r.job.Namespace).Get(ctx, r.job.Name, metav1.GetOptions{}); gerr == nil && pastDeadline(j) {
			r.finished = true
			return 0, &TimeoutError{Run: r.job.Name, Timeout: app.FormatJobTimeout(deref(r.job.Spec.ActiveDeadlineSeconds))}
		}
		if err != nil {
			return 0, err
		}
	}
	r.finished = err == nil
	return code, err
}

// pastDeadline says whether the Job was stopped at its deadline: the
// controller marks it FailureTarget, then Failed once its pod is gone,
// with reason DeadlineExceeded; a pod it killed may exit before either,
// so a Job older than its deadline (on the server's clock of its start
// and ours, a second of slack) counts too.
func pastDeadline(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobFailureTarget) && c.Status == corev1.ConditionTrue && c.Reason == batchv1.JobReasonDeadlineExceeded {
			return true
		}
	}
	d := deref(j.Spec.ActiveDeadlineSeconds)
	return d > 0 && j.Status.StartTime != nil && time.Since(j.Status.StartTime.Time) >= time.Duration(d)*time.Second-time.Second
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// pod waits for the Job's pod to be made.
func (r *manualRun) pod(ctx context.Context) (string, error) {
	sel := metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + r.job.Name}
	wctx, cancel := context.WithTimeout(ctx, createTimeout)
	defer cancel()
	var name string
	err := kube.Until(wctx, kube.Pods(r.d.Client, r.job.Namespace, sel), func(pods map[string]*corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.Labels[kube.LabelApp] != "" && (name == "" || p.Name < name) {
				name = p.Name
			}
		}
		return name != "", nil
	})
	switch {
	case err == nil:
		return name, nil
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return "", fmt.Errorf("run %s made no pod within %s; see 'kubectl describe job %s -n %s'", r.job.Name, createTimeout, r.job.Name, r.job.Namespace)
	}
	return "", kube.TranslateError(err)
}

// cleanup deletes a run that did not finish (Ctrl-C, a failure to follow
// it), with its pods, on a context of its own.
func (r *manualRun) cleanup(parent context.Context) {
	if !r.created || r.finished {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), cleanupTimeout)
	defer cancel()
	if p := r.d.Progress; p != nil {
		p.Fail(fmt.Sprintf("deleting run %s", r.job.Name))
	}
	err := r.d.Client.BatchV1().Jobs(r.job.Namespace).Delete(ctx, r.job.Name, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(r.d.IO.Stderr(), "error: could not delete run %s: %v; delete it with 'kubectl delete job %s -n %s'\n", r.job.Name, kube.TranslateError(err), r.job.Name, r.job.Namespace)
	}
}
