package job

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/deploy/deploytest"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
)

const ns = deploytest.Namespace

func deployDeps(c *fake.Clientset) deploy.Deps {
	return deploy.Deps{Client: c, Namespace: ns, Holder: lock.Holder{User: "alice", PID: 42, Host: "laptop"}}
}

// shopWithJobs is app shop deployed once (v1: web) with jobs; the fake
// applies their CronJobs, nothing runs them. (One release: each Roll on
// the fake costs a tenth of a second; TestAddReplacesAJobOfTheSameNameWithoutARestart
// adds a job as 'tug job add' does.)
func shopWithJobs(t *testing.T, jobs map[string]app.Job) (*fake.Clientset, *app.Store) {
	t.Helper()
	c, s := deploytest.NewFake()
	deploytest.SeedApp(t, s, &app.App{Name: "shop"})
	first := deploy.DeployChange("shop:1", map[string]string{"web": "./serve"}, "")
	withJobs := func(a *app.App, base *app.Release, cfg app.ConfigMap) (*app.Release, app.ConfigMap, error) {
		r, cfg, err := first(a, base, cfg)
		if err != nil {
			return nil, nil, err
		}
		for name, j := range jobs {
			r.SetJob(name, j)
		}
		return r, cfg, nil
	}
	if _, err := deploy.Roll(context.Background(), deployDeps(c), "shop", withJobs, deploy.Options{NoWait: true}); err != nil {
		t.Fatalf("deploy: %v", err)
	}
	return c, s
}

// labelJob is the label that names a job on its CronJob and runs: part
// of what tug keeps in the cluster, so written out here.
const labelJob = "tug.dev/job"

// run is a run of shop's job jobName started at start, with cond (if
// any) true: a Job labelled as the job's CronJob labels its runs.
func run(t *testing.T, c *fake.Clientset, jobName, name string, start time.Time, manual bool, cond batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	cj, err := c.BatchV1().CronJobs(ns).Get(context.Background(), "shop-job-"+jobName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: cj.Spec.JobTemplate.Labels, CreationTimestamp: metav1.NewTime(start.Add(-time.Second))}}
	st := metav1.NewTime(start)
	j.Status.StartTime = &st
	if manual {
		j.Annotations = map[string]string{annotationManual: "manual"}
	}
	if cond != "" {
		end := metav1.NewTime(start.Add(time.Minute))
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, Reason: "R", LastTransitionTime: end}}
		j.Status.CompletionTime = &end
	}
	return j
}

func addObjects(t *testing.T, c *fake.Clientset, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListDescribesTheDeployedJobsWithLastAndNextRun(t *testing.T) {
	c, s := shopWithJobs(t, map[string]app.Job{
		"report": {Command: "./report", Schedule: "0 3 * * *", TimeoutSeconds: 90, Retries: 2, Concurrency: app.ConcurrencyForbid},
		"ping":   {Command: "./ping", Schedule: "*/5 * * * *", TimeZone: "Europe/Paris"},
	})
	t0 := time.Date(2026, 3, 1, 10, 2, 0, 0, time.UTC)
	addObjects(t, c,
		run(t, c, "report", "report-old", t0.Add(-48*time.Hour), false, batchv1.JobComplete),
		run(t, c, "report", "report-new", t0.Add(-24*time.Hour), true, batchv1.JobFailed),
	)
	jobs, err := List(context.Background(), s, "shop", t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].Name != "ping" || jobs[1].Name != "report" {
		t.Fatalf("jobs %+v; want ping, report (by name)", jobs)
	}
	ping, report := jobs[0], jobs[1]
	if ping.Concurrency != app.ConcurrencyAllow || ping.LastRun != nil || ping.Release != 1 || ping.TimeZone != "Europe/Paris" {
		t.Errorf("ping %+v; want concurrency allow (the default), no run, release v1", ping)
	}
	if ping.NextRun == nil || !ping.NextRun.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("ping next run %v, want %v", ping.NextRun, t0.Add(3*time.Minute))
	}
	if report.Command != "./report" || report.Timeout != "1m30s" || report.Retries != 2 || report.Concurrency != app.ConcurrencyForbid {
		t.Errorf("report %+v", report)
	}
	if want := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC); report.NextRun == nil || !report.NextRun.Equal(want) {
		t.Errorf("report next run %v, want %v", report.NextRun, want)
	}
	if lr := report.LastRun; lr == nil || lr.Name != "report-new" || !lr.Manual || lr.Status != StatusFailed || lr.EndedAt == nil {
		t.Errorf("report last run %+v; want report-new, manual, failed, ended", lr)
	}
	if report.Runs != nil {
		t.Errorf("List filled runs: %+v", report.Runs)
	}
}

func TestListOfAnAppNeverDeployedIsEmpty(t *testing.T) {
	_, s := deploytest.NewFake()
	deploytest.SeedApp(t, s, &app.App{Name: "shop"})
	jobs, err := List(context.Background(), s, "shop", time.Now())
	if err != nil || jobs == nil || len(jobs) != 0 {
		t.Errorf("List = %v, %v; want an empty list (JSON []), no error", jobs, err)
	}
	if _, err := List(context.Background(), s, "blog", time.Now()); !app.IsNotFound(err) {
		t.Errorf("List of a missing app = %v; want not found", err)
	}
}

func TestListFailsWhenTheRunsCannotBeListed(t *testing.T) {
	c, s := shopWithJobs(t, map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}})
	c.PrependReactor("list", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(batchv1.Resource("jobs"), "", errors.New("no"))
	})
	if _, err := List(context.Background(), s, "shop", time.Now()); !apierrors.IsForbidden(err) {
		t.Errorf("List = %v; want the forbidden list", err)
	}
	if _, err := Info(context.Background(), s, "shop", "report", time.Now()); !apierrors.IsForbidden(err) {
		t.Errorf("Info = %v; want the forbidden list", err)
	}
}

func TestInfoListsTheJobsRunsNewestFirst(t *testing.T) {
	c, s := shopWithJobs(t, map[string]app.Job{
		"report": {Command: "./report", Schedule: "@hourly"},
		"ping":   {Command: "./ping", Schedule: "@hourly"},
	})
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	addObjects(t, c,
		run(t, c, "report", "report-b", t0.Add(-2*time.Hour), false, batchv1.JobComplete),
		run(t, c, "report", "report-c", t0.Add(-time.Hour), false, ""),
		run(t, c, "report", "report-a", t0.Add(-3*time.Hour), false, batchv1.JobComplete),
		run(t, c, "ping", "ping-a", t0.Add(-time.Minute), false, ""), // another job's
	)
	j, err := Info(context.Background(), s, "shop", "report", t0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range j.Runs {
		names = append(names, r.Name+" "+r.Status)
	}
	if want := []string{"report-c running", "report-b succeeded", "report-a succeeded"}; !slices.Equal(names, want) {
		t.Errorf("runs %q, want %q", names, want)
	}
	if j.LastRun == nil || j.LastRun.Name != "report-c" {
		t.Errorf("last run %+v, want report-c", j.LastRun)
	}
}

// A job the deployed release lacks is a usage error (exit 2) that names
// the jobs there are.
func TestInfoOfAnUnknownJobIsAnInputError(t *testing.T) {
	_, s := shopWithJobs(t, map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}})
	_, err := Info(context.Background(), s, "shop", "nope", time.Now())
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "it has jobs report") {
		t.Errorf("Info = %v; want an input error naming job report", err)
	}
	_, s = shopWithJobs(t, nil)
	if _, err := Info(context.Background(), s, "shop", "report", time.Now()); !inputerr.Is(err) || !strings.Contains(err.Error(), "no jobs") {
		t.Errorf("Info of an app without jobs = %v; want an input error saying it has none", err)
	}
}

// Suspending writes the record and the CronJob: the schedule stops, List
// shows no next run, and suspending again changes nothing.
func TestSetSuspendedStopsTheSchedule(t *testing.T) {
	c, s := shopWithJobs(t, map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}, "ping": {Command: "./ping", Schedule: "@hourly"}})
	ctx := context.Background()
	if err := SetSuspended(ctx, deployDeps(c), "shop", "report", true); err != nil {
		t.Fatalf("suspend: %v", err)
	}
	jobs, err := List(ctx, s, "shop", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if jobs[1].Name != "report" || !jobs[1].Suspended || jobs[1].NextRun != nil {
		t.Errorf("report %+v; want suspended, no next run", jobs[1])
	}
	if jobs[0].Suspended || jobs[0].NextRun == nil {
		t.Errorf("ping %+v; want it scheduled still", jobs[0])
	}
	sched, err := ListScheduled(ctx, c, ns, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Scheduled{{"ping", "@hourly", false}, {"report", "@daily", true}}; !slices.Equal(sched, want) {
		t.Errorf("CronJobs %+v, want %+v", sched, want)
	}
	if err := SetSuspended(ctx, deployDeps(c), "shop", "report", true); !errors.Is(err, deploy.ErrNoChange) {
		t.Errorf("suspending again = %v; want deploy.ErrNoChange", err)
	}
	if err := SetSuspended(ctx, deployDeps(c), "shop", "nope", true); !inputerr.Is(err) {
		t.Errorf("suspending an unknown job = %v; want an input error", err)
	}
	if err := SetSuspended(ctx, deployDeps(c), "shop", "report", false); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if sched, _ := ListScheduled(ctx, c, ns, "shop"); len(sched) != 2 || sched[1].Suspended {
		t.Errorf("after resume: %+v", sched)
	}
}

// ListScheduled reads the CronJobs alone: one without a job's label is
// left out, and another app's are not listed.
func TestListScheduledSkipsCronJobsThatNameNoJob(t *testing.T) {
	c, _ := shopWithJobs(t, map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}})
	unnamed := kube.AppLabels("shop")
	unnamed[kube.LabelKind] = "job"
	blog := kube.AppLabels("blog")
	blog[kube.LabelKind] = "job"
	blog[labelJob] = "report"
	addObjects(t, c,
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "shop-job-x", Namespace: ns, Labels: unnamed}, Spec: batchv1.CronJobSpec{Schedule: "@hourly"}},
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "blog-job-report", Namespace: ns, Labels: blog}, Spec: batchv1.CronJobSpec{Schedule: "@hourly"}},
	)
	got, err := ListScheduled(context.Background(), c, ns, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Scheduled{{"report", "@daily", false}}; !slices.Equal(got, want) {
		t.Errorf("ListScheduled = %+v, want %+v", got, want)
	}
	c.PrependReactor("list", "cronjobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(batchv1.Resource("cronjobs"), "", errors.New("no"))
	})
	if _, err := ListScheduled(context.Background(), c, ns, "shop"); !apierrors.IsForbidden(err) {
		t.Errorf("ListScheduled = %v; want the forbidden list", err)
	}
}

// 'tug job remove' drops the job from the deployed release in place: its
// CronJob goes, no release is made, no unit restarts; a job the release
// lacks is a usage error.
func TestRemoveDropsTheJobAndItsCronJob(t *testing.T) {
	c, s := shopWithJobs(t, map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}, "ping": {Command: "./ping", Schedule: "@hourly"}})
	ctx := context.Background()
	web := deploymentOf(t, c, "shop-web")
	res, err := Remove(ctx, deployDeps(c), "shop", "report")
	if err != nil {
		t.Fatalf("remove: %v", err)
	}
	if res.Release != 1 || res.UnitsRestarted == nil || *res.UnitsRestarted {
		t.Errorf("result %+v; want v1, units not restarted", res)
	}
	r, _ := deploytest.GetRelease(t, s, 1)
	if !slices.Equal(r.JobNames(), []string{"ping"}) || len(r.RolloutChanges) != 1 || r.RolloutChanges[0].Message != "job report removed" {
		t.Errorf("release v1: jobs %v, changes %+v", r.JobNames(), r.RolloutChanges)
	}
	if sched, _ := ListScheduled(ctx, c, ns, "shop"); len(sched) != 1 || sched[0].Name != "ping" {
		t.Errorf("CronJobs %+v; want ping's alone", sched)
	}
	if got := deploymentOf(t, c, "shop-web"); got.Generation != web.Generation || got.ResourceVersion != web.ResourceVersion {
		t.Errorf("removing a job changed web's Deployment (its units would restart)")
	}
	if _, err := Remove(ctx, deployDeps(c), "shop", "report"); !inputerr.Is(err) {
		t.Errorf("removing it again = %v; want an input error", err)
	}
	if got := deploytest.GetApp(t, s, "shop").LastRelease; got != 1 {
		t.Errorf("a job change stored release v%d", got)
	}
}

// A job added again replaces the one of that name: one CronJob, the new
// schedule, on the deployed release; the app's units are not touched (they
// all restarted, like a config change, when a job change was a release).
func TestAddReplacesAJobOfTheSameNameWithoutARestart(t *testing.T) {
	c, s := shopWithJobs(t, map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}})
	ctx := context.Background()
	web := deploymentOf(t, c, "shop-web")
	if _, err := Add(ctx, deployDeps(c), "shop", "report", app.Job{Command: "./report --all", Schedule: "@hourly"}); err != nil {
		t.Fatal(err)
	}
	j, err := Info(ctx, s, "shop", "report", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if j.Command != "./report --all" || j.Schedule != "@hourly" || j.Release != 1 {
		t.Errorf("job %+v; want the new command and schedule, on v1", j)
	}
	if sched, _ := ListScheduled(ctx, c, ns, "shop"); len(sched) != 1 || sched[0].Schedule != "@hourly" {
		t.Errorf("CronJobs %+v", sched)
	}
	if got := deploymentOf(t, c, "shop-web"); got.Generation != web.Generation || got.ResourceVersion != web.ResourceVersion {
		t.Errorf("adding a job changed web's Deployment (its units would restart)")
	}
	if _, err := Add(ctx, deployDeps(c), "shop", "report", app.Job{Command: "./report --all", Schedule: "@hourly"}); !errors.Is(err, deploy.ErrNoChange) {
		t.Errorf("the same job again = %v; want no change", err)
	}
}

func deploymentOf(t *testing.T, c *fake.Clientset, name string) *appsv1.Deployment {
	t.Helper()
	d, err := c.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// logPod is a pod of run runName whose container is named container (the
// fake's log request says which container it read, not which pod).
func logPod(name, runName, container string, created time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{batchv1.JobNameLabel: runName}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: container}}},
	}
}

// logRequests are the containers whose log the fake was asked for, and
// whether it was followed.
func logRequests(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if a.GetVerb() == "get" && a.GetSubresource() == "log" {
			o := a.(k8stesting.GenericAction).GetValue().(*corev1.PodLogOptions)
			s := o.Container
			if o.Follow {
				s += " (follow)"
			}
			out = append(out, s)
		}
	}
	return out
}

// Logs reads the last try of the run --run picks: the newest pod of the
// newest run by default, of an older one by number or by name.
func TestLogsReadsTheNewestPodOfThePickedRun(t *testing.T) {
	c, s := shopWithJobs(t, map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}})
	t0 := time.Now().Add(-time.Hour)
	addObjects(t, c,
		run(t, c, "report", "report-1", t0, false, batchv1.JobFailed),
		run(t, c, "report", "report-2", t0.Add(time.Minute), false, ""),
		logPod("report-1-try1", "report-1", "first-try", t0),
		logPod("report-1-try2", "report-1", "second-try", t0.Add(10*time.Second)),
		logPod("report-2-a", "report-2", "newest-run", t0.Add(time.Minute)),
	)
	ctx := context.Background()
	for _, tt := range []struct {
		run    string
		follow bool
		want   string
	}{
		{"", true, "newest-run (follow)"},
		{"2", false, "second-try"},
		{"report-1", false, "second-try"},
	} {
		c.ClearActions()
		var out strings.Builder
		if err := Logs(ctx, s, LogsOptions{App: "shop", Name: "report", Run: tt.run, Follow: tt.follow}, &out); err != nil {
			t.Fatalf("--run %q: %v", tt.run, err)
		}
		if out.String() != "fake logs" {
			t.Errorf("--run %q wrote %q; want the fake's log", tt.run, out.String())
		}
		if got := logRequests(c); !slices.Equal(got, []string{tt.want}) {
			t.Errorf("--run %q read %q, want %q", tt.run, got, tt.want)
		}
	}
}

func TestLogsFailures(t *testing.T) {
	c, s := shopWithJobs(t, map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}, "ping": {Command: "./ping", Schedule: "@hourly"}})
	addObjects(t, c, run(t, c, "report", "report-1", time.Now().Add(-time.Hour), false, batchv1.JobComplete))
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		o     LogsOptions
		input bool // a usage error (exit 2)
		want  string
	}{
		{"unknown job", LogsOptions{App: "shop", Name: "nope"}, true, `has no job "nope"`},
		{"never ran", LogsOptions{App: "shop", Name: "ping"}, false, "has not run yet; start a run with 'tug job run shop ping'"},
		{"no such run", LogsOptions{App: "shop", Name: "report", Run: "3"}, true, "has 1 runs kept"},
		{"pods gone", LogsOptions{App: "shop", Name: "report"}, false, "run report-1 of job \"report\" has no pod left (the cluster removes the pods of old runs); its status: succeeded"},
	} {
		var out strings.Builder
		err := Logs(ctx, s, tt.o, &out)
		if err == nil || !strings.Contains(err.Error(), tt.want) || inputerr.Is(err) != tt.input {
			t.Errorf("%s: Logs = %v; want an error with %q (input error: %v)", tt.name, err, tt.want, tt.input)
		}
		if out.Len() > 0 {
			t.Errorf("%s: wrote %q", tt.name, out.String())
		}
	}
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("no"))
	})
	if err := Logs(ctx, s, LogsOptions{App: "shop", Name: "report"}, &strings.Builder{}); !apierrors.IsForbidden(err) {
		t.Errorf("Logs with pods unlistable = %v; want the forbidden list", err)
	}
}

// A job change cut short after its records were written (a killed tug:
// the CronJob not yet applied, or not yet deleted) is finished by running
// it again, or by any other job command: the CronJobs follow the records.
func TestAJobChangeCutShortIsFinishedByTheNext(t *testing.T) {
	c, _ := shopWithJobs(t, map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}})
	ctx := context.Background()
	failing := true
	c.PrependReactor("patch", "cronjobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if failing && strings.Contains(a.(k8stesting.PatchAction).GetName(), "ping") {
			return true, nil, errors.New("the API server went away")
		}
		return false, nil, nil
	})
	if _, err := Add(ctx, deployDeps(c), "shop", "ping", app.Job{Command: "./ping", Schedule: "@hourly"}); err == nil {
		t.Fatal("add with CronJobs unapplied should fail")
	}
	failing = false
	if _, err := Add(ctx, deployDeps(c), "shop", "ping", app.Job{Command: "./ping", Schedule: "@hourly"}); err != nil && !errors.Is(err, deploy.ErrNoChange) {
		t.Fatalf("the same add again: %v", err)
	}
	if sched, _ := ListScheduled(ctx, c, ns, "shop"); len(sched) != 2 {
		t.Errorf("CronJobs %+v; want report's and ping's", sched)
	}
}

// Bad input changes nothing, not even CronJobs the records no longer name
// (what a killed 'job remove' left): the edit is refused first.
func TestABadJobChangeTouchesNoCronJob(t *testing.T) {
	c, _ := shopWithJobs(t, map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}})
	ctx := context.Background()
	failing := true
	c.PrependReactor("delete", "cronjobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing {
			return true, nil, errors.New("the API server went away")
		}
		return false, nil, nil
	})
	if _, err := Remove(ctx, deployDeps(c), "shop", "report"); err == nil {
		t.Fatal("remove with the CronJob undeletable should fail")
	}
	failing = false
	if _, err := Remove(ctx, deployDeps(c), "shop", "typo"); !inputerr.Is(err) {
		t.Fatalf("remove of a job that does not exist = %v; want an input error", err)
	}
	if sched, _ := ListScheduled(ctx, c, ns, "shop"); len(sched) != 1 {
		t.Errorf("a refused job remove changed the CronJobs: %+v", sched)
	}
}
