package job

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/rollout"
	"tug.dev/tug/pkg/session"
)

// testIO is a terminal made of buffers: no TTY, no colour.
type testIO struct{ out, errOut bytes.Buffer }

func (t *testIO) Stdin() io.Reader      { return strings.NewReader("") }
func (t *testIO) Stdout() io.Writer     { return &t.out }
func (t *testIO) Stderr() io.Writer     { return &t.errOut }
func (t *testIO) IsStdinTTY() bool      { return false }
func (t *testIO) CanPrompt() bool       { return false }
func (t *testIO) ColorEnabled() bool    { return false }
func (t *testIO) ErrColorEnabled() bool { return false }
func (t *testIO) TermType() string      { return "" }

// failures keeps the progress lines that said a step failed.
type failures struct {
	mu    sync.Mutex
	lines []string
}

func (*failures) Update(string) {}
func (*failures) Done(string)   {}
func (f *failures) Fail(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, msg)
}

func (f *failures) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lines...)
}

func runDeps(c *fake.Clientset) (session.Deps, *testIO, *failures) {
	ios, p := &testIO{}, &failures{}
	return session.Deps{Client: c, Namespace: ns, IO: ios, Progress: p, User: func() string { return "alice" }}, ios, p
}

// kubelet plays the Job controller and the kubelet for each run created:
// the run's pod, its container in state st; job, when set, edits the Job
// as the controller would have by the time the pod ends. It returns the
// runs created, in order.
func kubelet(t *testing.T, c *fake.Clientset, st corev1.ContainerState, job func(*batchv1.Job)) func() []*batchv1.Job {
	t.Helper()
	var mu sync.Mutex
	var created []*batchv1.Job
	c.PrependReactor("create", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		j := a.(k8stesting.CreateAction).GetObject().(*batchv1.Job).DeepCopy()
		mu.Lock()
		created = append(created, j.DeepCopy())
		mu.Unlock()
		labels := maps.Clone(j.Spec.Template.Labels)
		labels[batchv1.JobNameLabel] = j.Name
		ctr := j.Spec.Template.Spec.Containers[0]
		phase := corev1.PodRunning
		if t := st.Terminated; t != nil {
			phase = corev1.PodSucceeded
			if t.ExitCode != 0 {
				phase = corev1.PodFailed
			}
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-x1", Namespace: j.Namespace, Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: ctr.Name, Image: ctr.Image}}, RestartPolicy: corev1.RestartPolicyNever},
			Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: ctr.Name, Image: ctr.Image, State: st}}},
		}
		if err := c.Tracker().Add(pod); err != nil {
			return true, nil, err
		}
		if job == nil {
			return false, nil, nil // the fake stores the Job
		}
		job(j)
		return true, j, c.Tracker().Create(batchv1.SchemeGroupVersion.WithResource("jobs"), j, j.Namespace)
	})
	return func() []*batchv1.Job {
		mu.Lock()
		defer mu.Unlock()
		return append([]*batchv1.Job(nil), created...)
	}
}

func exited(code int32) corev1.ContainerState {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
}

// jobsLeft are the names of the Jobs in the namespace.
func jobsLeft(t *testing.T, c *fake.Clientset) []string {
	t.Helper()
	l, err := c.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range l.Items {
		names = append(names, j.Name)
	}
	return names
}

var reportJob = map[string]app.Job{"report": {Command: "./report", Schedule: "@daily", Retries: 3, TimeoutSeconds: 60}}

// A run that exits 0: its log on stdout, the run named, tried once, and
// kept for 'tug job logs'.
func TestRunFollowsTheRunToItsEnd(t *testing.T) {
	c, _ := shopWithJobs(t, reportJob)
	created := kubelet(t, c, exited(0), nil)
	d, ios, p := runDeps(c)
	res, err := Run(context.Background(), d, RunOptions{App: "shop", Name: "report"})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	runs := created()
	if len(runs) != 1 || res.Run != runs[0].Name || !strings.HasPrefix(res.Run, "shop-job-report-run-") {
		t.Fatalf("result %+v, runs created %d", res, len(runs))
	}
	j := runs[0]
	if *j.Spec.BackoffLimit != 0 || j.Annotations[annotationRunBy] != "alice" || j.Annotations[annotationManual] != "manual" {
		t.Errorf("the run: backoff %d, annotations %v; want tried once, by alice, manual", *j.Spec.BackoffLimit, j.Annotations)
	}
	if ios.out.String() != "fake logs" {
		t.Errorf("stdout %q, want the run's log", ios.out.String())
	}
	if left := jobsLeft(t, c); len(left) != 1 || left[0] != res.Run {
		t.Errorf("Jobs left %v; want the finished run kept", left)
	}
	if f := p.all(); len(f) > 0 {
		t.Errorf("progress failures %q", f)
	}
}

// A run that fails passes its exit code through (tug exits with it), and
// is kept as it ended.
func TestRunPassesTheExitCodeThrough(t *testing.T) {
	c, _ := shopWithJobs(t, reportJob)
	kubelet(t, c, exited(3), nil)
	d, _, _ := runDeps(c)
	res, err := Run(context.Background(), d, RunOptions{App: "shop", Name: "report"})
	var exit *session.ExitError
	if !errors.As(err, &exit) || exit.Code != 3 {
		t.Fatalf("Run = %v; want a *session.ExitError with code 3", err)
	}
	if res == nil || len(jobsLeft(t, c)) != 1 || jobsLeft(t, c)[0] != res.Run {
		t.Errorf("result %+v, Jobs left %v; want the failed run named and kept", res, jobsLeft(t, c))
	}
}

// A run the Job controller stopped at the job's timeout ends as a timeout
// (exit 124), not as the signal its pod died of.
func TestRunStoppedAtTheTimeoutIsATimeout(t *testing.T) {
	c, _ := shopWithJobs(t, reportJob)
	kubelet(t, c, exited(137), func(j *batchv1.Job) {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonDeadlineExceeded}}
	})
	d, _, p := runDeps(c)
	_, err := Run(context.Background(), d, RunOptions{App: "shop", Name: "report"})
	var timeout *TimeoutError
	if !errors.As(err, &timeout) || timeout.Timeout != "1m" || timeout.ExitCode() != session.CodeTimeout {
		t.Fatalf("Run = %v; want a *TimeoutError of 1m, exit code 124", err)
	}
	if want := "did not finish within the job's timeout 1m"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
	if len(jobsLeft(t, c)) != 1 || len(p.all()) > 0 {
		t.Errorf("Jobs left %v, failures %q; want the timed-out run kept, nothing deleted", jobsLeft(t, c), p.all())
	}
}

// A run whose pod cannot start fails with the diagnosis (its own exit
// code) and is deleted: nothing would ever run it.
func TestRunWhosePodCannotStartIsDeleted(t *testing.T) {
	c, _ := shopWithJobs(t, reportJob)
	kubelet(t, c, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}, nil)
	d, _, p := runDeps(c)
	_, err := Run(context.Background(), d, RunOptions{App: "shop", Name: "report"})
	var f *rollout.Failure
	if !errors.As(err, &f) || f.Class != rollout.ClassImagePull || f.ExitCode() != 10 {
		t.Fatalf("Run = %v; want the image-pull failure (exit 10)", err)
	}
	if left := jobsLeft(t, c); len(left) != 0 {
		t.Errorf("Jobs left %v; want the run deleted", left)
	}
	if fl := p.all(); len(fl) == 0 || !strings.HasPrefix(fl[len(fl)-1], "deleting run shop-job-report-run-") {
		t.Errorf("progress failures %q; want the deletion said last", fl)
	}
}

// Ctrl-C while the run's Job is created: the Job is made all the same (a
// lost answer must not leave one cleanup misses), then deleted.
func TestRunInterruptedDeletesTheRun(t *testing.T) {
	c, _ := shopWithJobs(t, reportJob)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		cancel()
		return false, nil, nil
	})
	d, _, p := runDeps(c)
	_, err := Run(ctx, d, RunOptions{App: "shop", Name: "report"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v; want context.Canceled", err)
	}
	if left := jobsLeft(t, c); len(left) != 0 {
		t.Errorf("Jobs left %v; want the interrupted run deleted", left)
	}
	if fl := p.all(); len(fl) != 1 || !strings.HasPrefix(fl[0], "deleting run ") {
		t.Errorf("progress failures %q", fl)
	}
}

// A run that cannot be deleted is named, with the command that deletes it.
func TestRunThatCannotBeDeletedSaysHow(t *testing.T) {
	c, _ := shopWithJobs(t, reportJob)
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("no"))
	})
	c.PrependReactor("delete", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(batchv1.Resource("jobs"), "", errors.New("no"))
	})
	d, ios, _ := runDeps(c)
	_, err := Run(context.Background(), d, RunOptions{App: "shop", Name: "report"})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("Run = %v; want the forbidden pod list", err)
	}
	left := jobsLeft(t, c)
	if len(left) != 1 {
		t.Fatalf("Jobs left %v", left)
	}
	want := "error: could not delete run " + left[0] + ": "
	if msg := ios.errOut.String(); !strings.HasPrefix(msg, want) || !strings.Contains(msg, "delete it with 'kubectl delete job "+left[0]+" -n dev'") {
		t.Errorf("stderr %q; want it to start %q and say how to delete it", msg, want)
	}
}

// Nothing is created for a job that cannot run: the usage errors exit 2,
// a CronJob gone or not tug's is a failure that says why.
func TestRunRefusals(t *testing.T) {
	c, _ := shopWithJobs(t, reportJob)
	ctx := context.Background()
	d, _, _ := runDeps(c)
	if _, err := Run(ctx, d, RunOptions{App: "shop", Name: "nope"}); !inputerr.Is(err) {
		t.Errorf("an unknown job: %v; want an input error", err)
	}
	if _, err := Run(ctx, d, RunOptions{App: "blog", Name: "report"}); !app.IsNotFound(err) {
		t.Errorf("a missing app: %v; want not found", err)
	}
	cjs := c.BatchV1().CronJobs(ns)
	cj, err := cjs.Get(ctx, "shop-job-report", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cjs.Delete(ctx, cj.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, d, RunOptions{App: "shop", Name: "report"}); err == nil || inputerr.Is(err) ||
		err.Error() != `job "report" of app "shop" has no CronJob shop-job-report in namespace "dev"; a deploy of the app applies it again` {
		t.Errorf("CronJob gone: %v", err)
	}
	foreign := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: cj.Name, Namespace: ns, Labels: map[string]string{"app": "shop"}}, Spec: cj.Spec}
	if _, err := cjs.Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var notOwned *kube.NotOwnedError
	if _, err := Run(ctx, d, RunOptions{App: "shop", Name: "report"}); !errors.As(err, &notOwned) || notOwned.Name != cj.Name {
		t.Errorf("CronJob not tug's: %v; want a *kube.NotOwnedError", err)
	}
	if left := jobsLeft(t, c); len(left) != 0 {
		t.Errorf("a refused run created %v", left)
	}
}

// A Job the API server refuses is said as such, and nothing is deleted.
func TestRunWhoseJobIsRefused(t *testing.T) {
	c, _ := shopWithJobs(t, reportJob)
	c.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(batchv1.Resource("jobs"), "", errors.New("quota exceeded"))
	})
	d, _, p := runDeps(c)
	_, err := Run(context.Background(), d, RunOptions{App: "shop", Name: "report"})
	if !apierrors.IsForbidden(err) || !strings.HasPrefix(err.Error(), "creating run shop-job-report-run-") {
		t.Fatalf("Run = %v; want 'creating run ...' and the forbidden error", err)
	}
	for _, a := range c.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "jobs" {
			t.Errorf("a run never created was deleted: %v", a)
		}
	}
	if len(p.all()) > 0 {
		t.Errorf("progress failures %q", p.all())
	}
}

func TestManualJobWithoutAnnotationsOrDeadline(t *testing.T) {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "shop-job-x", Namespace: ns}}
	j := manualJob(cj, "bob")
	if j.Annotations[annotationRunBy] != "bob" || deref(j.Spec.ActiveDeadlineSeconds) != 0 {
		t.Errorf("run %+v", j.ObjectMeta)
	}
	if cj.Spec.JobTemplate.Annotations != nil {
		t.Error("manualJob wrote into the CronJob's template")
	}
}

func TestPastDeadlineWithoutADeadline(t *testing.T) {
	start := metav1.NewTime(time.Now().Add(-time.Hour))
	if pastDeadline(&batchv1.Job{Status: batchv1.JobStatus{StartTime: &start}}) {
		t.Error("a Job without a deadline ran past it")
	}
}
