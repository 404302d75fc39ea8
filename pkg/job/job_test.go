package job

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

// A run now copies the CronJob's template, is tried once whatever the
// job's retries, is owned by the CronJob and goes away a day after it ends.
func TestManualJobFromTheTemplate(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: "dev"}
	r := &app.Release{Version: 3, Image: "shop:1", Processes: map[string]string{"web": ""},
		Jobs: map[string]app.Job{"report": {Command: "./report", Schedule: "@daily", Retries: 4, TimeoutSeconds: 60}}}
	cj := render.CronJob(a, r, "report")
	cj.UID = "uid-1"
	j := manualJob(cj, "alice")
	if !strings.HasPrefix(j.Name, "shop-job-report-run-") || len(j.Name) > 63 {
		t.Errorf("name %q", j.Name)
	}
	if *j.Spec.BackoffLimit != 0 || *j.Spec.ActiveDeadlineSeconds != 60 || *j.Spec.TTLSecondsAfterFinished != manualRunTTL {
		t.Errorf("spec: %+v", j.Spec)
	}
	if o := j.OwnerReferences; len(o) != 1 || o[0].UID != "uid-1" || o[0].Kind != "CronJob" {
		t.Errorf("owner %+v", o)
	}
	// not its controller: the CronJob controller's history limit deletes
	// the finished Jobs it controls (a run vanished within minutes)
	if c := metav1.GetControllerOf(j); c != nil {
		t.Errorf("the CronJob controls the run: %+v", c)
	}
	if j.Annotations[annotationManual] != "manual" || j.Annotations[annotationRunBy] != "alice" || j.Labels[kube.LabelJob] != "report" {
		t.Errorf("meta %+v", j.ObjectMeta)
	}
	if cj.Spec.JobTemplate.Annotations[annotationManual] != "" {
		t.Error("manualJob changed the CronJob's template")
	}
}

func TestListRunsNewestFirstWithStatus(t *testing.T) {
	now := time.Now()
	job := func(name string, age time.Duration, cond batchv1.JobConditionType, reason string) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dev", Labels: render.JobLabels("shop", "report"),
			CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(now)}}
		}
		return j
	}
	c := fake.NewClientset(job("old", time.Hour, batchv1.JobComplete, ""), job("mid", 10*time.Minute, batchv1.JobFailed, "DeadlineExceeded"), job("new", time.Minute, "", ""))
	runs, err := listRuns(context.Background(), c, "dev", "shop", "report")
	if err != nil {
		t.Fatal(err)
	}
	got := runs["report"]
	if len(got) != 3 || got[0].Name != "new" || got[0].Status != StatusRunning || got[1].Status != StatusFailed || got[1].Reason != "DeadlineExceeded" || got[2].Status != StatusSucceeded || got[2].EndedAt == nil {
		t.Fatalf("runs %+v", got)
	}
	j := &Job{App: "shop", Name: "report", Runs: got}
	for which, want := range map[string]string{"": "new", "1": "new", "3": "old", "mid": "mid"} {
		if r, err := pickRun(j, which); err != nil || r.Name != want {
			t.Errorf("--run %q: %v %v, want %s", which, r, err, want)
		}
	}
	for _, bad := range []string{"0", "4", "nope"} {
		if _, err := pickRun(j, bad); err == nil || !inputerr.Is(err) {
			t.Errorf("--run %q: %v, want an input error", bad, err)
		}
	}
}
