package job

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
)

// LogsOptions are 'tug job logs”s.
type LogsOptions struct {
	App, Name string
	// Run picks the run: "" or "1" the newest, "2" the one before, ...; or
	// a run's name, as 'tug job info' lists them.
	Run    string
	Follow bool
}

// Logs copies the log of a run of a job to out: its last pod's (a retried
// run has one per try), from the first line; with Follow until it ends.
func Logs(ctx context.Context, s *app.Store, o LogsOptions, out io.Writer) error {
	info, err := Info(ctx, s, o.App, o.Name, timeNow())
	if err != nil {
		return err
	}
	run, err := pickRun(info, o.Run)
	if err != nil {
		return err
	}
	pods, err := s.Client.CoreV1().Pods(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + run.Name})
	if err != nil {
		return kube.TranslateError(err)
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("run %s of job %q has no pod left (the cluster removes the pods of old runs); its status: %s", run.Name, o.Name, run.Status)
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		return pods.Items[i].CreationTimestamp.After(pods.Items[j].CreationTimestamp.Time)
	})
	pod := &pods.Items[0]
	rc, err := s.Client.CoreV1().Pods(s.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: pod.Spec.Containers[0].Name, Follow: o.Follow}).Stream(ctx)
	if err != nil {
		return fmt.Errorf("reading the log of run %s: %w", run.Name, kube.TranslateError(err))
	}
	defer rc.Close()
	if _, err := io.Copy(out, rc); err != nil && ctx.Err() == nil {
		return fmt.Errorf("reading the log of run %s: %w", run.Name, kube.TranslateError(err))
	}
	return nil
}

// pickRun is the run --run names: a number counts back from the newest
// (1), anything else is a run's name.
func pickRun(j *Job, which string) (*RunInfo, error) {
	if len(j.Runs) == 0 {
		return nil, fmt.Errorf("job %q of app %q has not run yet; start a run with 'tug job run %s %s'", j.Name, j.App, j.App, j.Name)
	}
	if which == "" {
		which = "1"
	}
	if n, err := strconv.Atoi(which); err == nil {
		if n < 1 || n > len(j.Runs) {
			return nil, inputerr.Errorf("--run %d: job %q has %d runs kept (1 is the newest); see 'tug job info %s %s'", n, j.Name, len(j.Runs), j.App, j.Name)
		}
		return &j.Runs[n-1], nil
	}
	for i := range j.Runs {
		if j.Runs[i].Name == which {
			return &j.Runs[i], nil
		}
	}
	return nil, inputerr.Errorf("--run %s: job %q has no such run; see 'tug job info %s %s'", which, j.Name, j.App, j.Name)
}

// timeNow is when "next run" is counted from.
func timeNow() time.Time { return time.Now() }
