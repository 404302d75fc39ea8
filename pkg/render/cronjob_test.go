package render

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

func jobRelease() (*app.App, *app.Release) {
	a := &app.App{Name: "shop", Namespace: "dev", RegistrySecret: "pull", Processes: map[string]app.Process{"web": {Replicas: 2}}}
	a.SetJobSuspended("ping", true)
	r := &app.Release{App: "shop", Version: 7, Image: "registry.example/shop:1",
		ImageID:   "registry.example/shop@sha256:" + "ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"[:64],
		Processes: map[string]string{"web": "serve", "worker": "work"}, Pool: "blue",
		Limits: map[string]app.Limits{"web": {Memory: "128Mi"}},
		Jobs: map[string]app.Job{
			"report": {Command: "./report --all", Schedule: "0 6 * * *", TimeZone: "Europe/Paris", Concurrency: "forbid", TimeoutSeconds: 600, Retries: 2},
			"ping":   {Command: "ping", Schedule: "@hourly", Limits: app.Limits{CPU: "100m"}},
		}}
	return a, r
}

// A job's CronJob runs the release's pod template: image by digest, its
// config Secret, the TUG_* variables, limits, pool, pull secret; a job is
// never a unit (no process or release label).
func TestRenderCronJobFromTheRelease(t *testing.T) {
	a, r := jobRelease()
	objs := Release(a, r, app.ConfigMap{})
	if len(objs.CronJobs) != 2 || objs.CronJobs[0].Name != "shop-job-ping" || objs.CronJobs[1].Name != "shop-job-report" {
		t.Fatalf("cron jobs %v", objs.CronJobs)
	}
	cj := objs.CronJobs[1]
	s := cj.Spec
	if s.Schedule != "0 6 * * *" || *s.TimeZone != "Europe/Paris" || s.ConcurrencyPolicy != batchv1.ForbidConcurrent || *s.Suspend {
		t.Errorf("schedule: %+v", s)
	}
	js := s.JobTemplate.Spec
	if *js.BackoffLimit != 2 || *js.ActiveDeadlineSeconds != 600 {
		t.Errorf("job spec: retries %d deadline %v", *js.BackoffLimit, js.ActiveDeadlineSeconds)
	}
	pod := js.Template.Spec
	c := pod.Containers[0]
	if c.Image != r.RunImage() || c.Image == r.Image {
		t.Errorf("image %q, want the digest %q", c.Image, r.RunImage())
	}
	if c.EnvFrom[0].SecretRef.Name != app.ReleaseSecretName("shop", 7) {
		t.Errorf("envFrom %+v", c.EnvFrom)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env[app.EnvApp] != "shop" || env[app.EnvRelease] != "7" || env[app.EnvProcess] != "report" {
		t.Errorf("platform env %v", env)
	}
	if got := c.Resources.Limits.Memory().String(); got != "128Mi" {
		t.Errorf("a job without limits of its own takes web's: %q", got)
	}
	if c.Command[0] != "./report" || c.ReadinessProbe != nil || len(c.Ports) != 0 {
		t.Errorf("container %+v", c)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever || pod.NodeSelector[kube.LabelPool] != "blue" || pod.ImagePullSecrets[0].Name != "pull" {
		t.Errorf("pod spec %+v", pod)
	}
	labels := js.Template.Labels
	if labels[kube.LabelProcess] != "" || labels[kube.LabelRelease] != "" || labels[kube.LabelJob] != "report" || labels[kube.LabelKind] != KindJob {
		t.Errorf("pod labels %v", labels)
	}
	ping := objs.CronJobs[0]
	if !*ping.Spec.Suspend || ping.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Resources.Limits.Cpu().String() != "100m" {
		t.Errorf("ping: suspended %v, limits %+v", *ping.Spec.Suspend, ping.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Resources)
	}
}

func TestJobSelector(t *testing.T) {
	all := "app.kubernetes.io/managed-by=tug,tug.dev/kind=job,tug.dev/app=shop"
	if got := JobSelector("shop", ""); got != all {
		t.Errorf("JobSelector(shop, \"\") = %q, want %q", got, all)
	}
	if got := JobSelector("shop", "report"); got != all+",tug.dev/job=report" {
		t.Errorf("JobSelector(shop, report) = %q", got)
	}
	// the selector selects what JobLabels labels
	for _, kv := range strings.Split(JobSelector("shop", "report"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		if JobLabels("shop", "report")[k] != v {
			t.Errorf("JobLabels lack %s=%s", k, v)
		}
	}
}
