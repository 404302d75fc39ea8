package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cronJobImage is the image of the CronJob of an app's job ("" when none).
func (h *H) cronJobImage(appName, job string) string {
	h.t.Helper()
	cj, err := h.Client.BatchV1().CronJobs(h.NS).Get(context.Background(), appName+"-job-"+job, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image
}

// podLog is the log of the newest pod of a Job.
func (h *H) jobPodLog(jobName string) string {
	h.t.Helper()
	ctx := context.Background()
	pods, err := h.Client.CoreV1().Pods(h.NS).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + jobName})
	if err != nil || len(pods.Items) == 0 {
		h.t.Fatalf("pods of job %s: %v (%d)", jobName, err, len(pods.Items))
	}
	rc, err := h.Client.CoreV1().Pods(h.NS).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

// A job on '* * * * *' runs on schedule with the release's image and
// config; 'job run' streams its output and exits with its code; a deploy
// gives the job the new image and a rollback restores the old one; a bad
// schedule or time zone exits 2 and changes nothing.
func TestJobScheduleRunDeployRollback(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1, "GREETING=hello-job")
	releases := h.releaseCount("shop")

	for _, bad := range [][]string{
		{"job", "add", "shop", "tick", "--schedule", "* * *", "--", "true"},
		{"job", "add", "shop", "tick", "--schedule", "61 * * * *", "--", "true"},
		{"job", "add", "shop", "tick", "--schedule", "@daily", "--time-zone", "Mars/Olympus_Mons", "--", "true"},
		{"job", "add", "shop", "tick", "--schedule", "CRON_TZ=UTC @daily", "--", "true"},
		{"job", "add", "shop", "tick", "--schedule", "@daily", "--concurrency", "sometimes", "--", "true"},
	} {
		if r := h.Tug(bad...); r.Code != 2 {
			t.Errorf("tug %s: want exit 2: %s", strings.Join(bad, " "), r)
		}
	}
	if n := h.releaseCount("shop"); n != releases {
		t.Fatalf("bad job input made a release: %d releases, had %d", n, releases)
	}
	if cjs, err := h.Client.BatchV1().CronJobs(h.NS).List(context.Background(), metav1.ListOptions{}); err != nil || len(cjs.Items) != 0 {
		t.Fatalf("bad job input left CronJobs: %v %v", cjs, err)
	}

	h.mustTug("job", "add", "shop", "tick", "--schedule", "* * * * *", "--timeout", "1m", "--", "sh", "-c", "echo tick-$GREETING-$TUG_RELEASE-$TUG_APP")
	h.mustTug("job", "add", "shop", "fail", "--schedule", "@yearly", "--", "sh", "-c", "echo streamed-out; echo streamed-err >&2; exit 7")
	if img := h.cronJobImage("shop", "tick"); img != sampleV1 {
		t.Fatalf("tick's CronJob runs %q, want %s", img, sampleV1)
	}
	if jobs, directive := h.completions("job", "run", "shop", ""); strings.Join(jobs, " ") != "fail tick" || directive != ":4" {
		t.Errorf("job names complete to %q %s, want fail tick and no file completion", jobs, directive)
	}
	// the scheduled run, within 110 s, with the release's config
	var done *batchv1.Job
	h.Eventually(110*time.Second, "a scheduled run of tick completes", func() (bool, error) {
		jobs, err := h.Client.BatchV1().Jobs(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/job=tick"})
		if err != nil {
			return false, err
		}
		for i := range jobs.Items {
			if jobs.Items[i].Status.Succeeded > 0 {
				done = &jobs.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	rel := done.Spec.Template.Annotations["tug.dev/release"]
	if log := h.jobPodLog(done.Name); !strings.Contains(log, "tick-hello-job-"+rel+"-shop") {
		t.Fatalf("the scheduled run's output lacks the release's config and TUG_* variables (release %s): %q", rel, log)
	}

	// job run: the output streams and the exit code is the command's
	r := h.Tug("job", "run", "shop", "fail")
	if r.Code != 7 || !strings.Contains(r.Stdout, "streamed-out") || !strings.Contains(r.Stdout, "streamed-err") {
		t.Fatalf("job run of a command exiting 7: %s", r)
	}
	var listed []struct {
		Name    string `json:"name"`
		LastRun *struct {
			Status string `json:"status"`
			Manual bool   `json:"manual"`
		} `json:"lastRun"`
		NextRun *time.Time `json:"nextRun"`
	}
	// the Job controller marks the run failed a moment after its pod ends
	h.Eventually(30*time.Second, "job list shows the failed manual run", func() (bool, error) {
		listed = nil
		if err := json.Unmarshal([]byte(h.mustTug("job", "list", "shop", "-o", "json").Stdout), &listed); err != nil {
			return false, err
		}
		if len(listed) != 2 || listed[0].Name != "fail" || listed[0].LastRun == nil || !listed[0].LastRun.Manual || listed[1].NextRun == nil {
			return false, fmt.Errorf("job list -o json: %+v", listed)
		}
		return listed[0].LastRun.Status == "failed", nil
	})
	if r := h.mustTug("job", "logs", "shop", "fail"); !strings.Contains(r.Stdout, "streamed-out") {
		t.Fatalf("job logs: %s", r)
	}

	// a deploy changes the job's image; a rollback restores it
	h.mustTug("app", "deploy", "shop", "--image", sampleV2)
	if img := h.cronJobImage("shop", "tick"); img != sampleV2 {
		t.Fatalf("after a deploy of %s tick's CronJob runs %q", sampleV2, img)
	}
	h.mustTug("release", "rollback", "shop")
	if img := h.cronJobImage("shop", "tick"); img != sampleV1 {
		t.Fatalf("after a rollback tick's CronJob runs %q, want %s", img, sampleV1)
	}

	// suspend is the app's, not a release's; remove takes the CronJob away
	h.mustTug("job", "suspend", "shop", "tick")
	if cj, err := h.Client.BatchV1().CronJobs(h.NS).Get(context.Background(), "shop-job-tick", metav1.GetOptions{}); err != nil || cj.Spec.Suspend == nil || !*cj.Spec.Suspend {
		t.Fatalf("suspended tick: %v", err)
	}
	h.mustTug("job", "remove", "shop", "fail", "--yes")
	if img := h.cronJobImage("shop", "fail"); img != "" {
		t.Fatalf("removed job fail still has a CronJob (%s)", img)
	}
	h.mustTug("app", "remove", "shop", "--yes")
	h.Eventually(60*time.Second, "app remove leaves no CronJob and no Job", func() (bool, error) {
		cjs, err := h.Client.BatchV1().CronJobs(h.NS).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		jobs, err := h.Client.BatchV1().Jobs(h.NS).List(context.Background(), metav1.ListOptions{})
		return len(cjs.Items) == 0 && len(jobs.Items) == 0, err
	})
}

// An interrupted 'job run' deletes its run. One killed outright (SIGKILL:
// no cleanup runs) leaves its run to
// the cluster, which stops it at the job's timeout: no pod of it runs past
// the deadline.
func TestJobRunKilledStopsAtItsDeadline(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1)
	h.mustTug("job", "add", "shop", "slow", "--schedule", "@yearly", "--timeout", "15s", "--", "sleep", "300")
	// Ctrl-C removes the run, pods and all
	h.interrupt(0, Interrupt{Args: []string{"job", "run", "shop", "slow"}, WaitFor: "running", Timeout: 60 * time.Second, Signal: os.Interrupt})
	h.Eventually(60*time.Second, "an interrupted job run leaves no Job and no pod", func() (bool, error) {
		jobs, err := h.Client.BatchV1().Jobs(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/job=slow"})
		if err != nil {
			return false, err
		}
		pods, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/job=slow"})
		return len(jobs.Items) == 0 && len(pods.Items) == 0, err
	})
	cmd := exec.Command(env.tug, "job", "run", "shop", "slow")
	cmd.Env = h.tugEnv(nil)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	NewStream(stderr).WaitFor(t, "running", 60*time.Second)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// 15 s of deadline from the Job's start, and the pod's grace period
	h.Eventually(90*time.Second, "the killed run is stopped at its deadline", func() (bool, error) {
		jobs, err := h.Client.BatchV1().Jobs(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "tug.dev/job=slow"})
		if err != nil || len(jobs.Items) != 1 {
			return false, err
		}
		j := jobs.Items[0]
		failed := false
		for _, c := range j.Status.Conditions {
			failed = failed || c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason == "DeadlineExceeded"
		}
		pods, err := h.Client.CoreV1().Pods(h.NS).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + j.Name})
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending {
				running++
			}
		}
		return failed && running == 0, err
	})
}

// A run that reaches its timeout while tug follows it ends as a timeout
// (exit 124, saying so), whether the Job controller deleted its pod or
// only killed the command (then its exit code is a signal's).
func TestJobRunTimeoutExits124(t *testing.T) {
	h := New(t)
	h.deployShop("shop", 1)
	h.mustTug("job", "add", "shop", "slow", "--schedule", "@yearly", "--timeout", "15s", "--", "sleep", "300")
	r := h.Tug("job", "run", "shop", "slow")
	if r.Code != 124 || !strings.Contains(r.Stderr, "15s") {
		t.Fatalf("job run past its timeout: %s; want exit 124 naming the timeout", r)
	}
}
