package session

import (
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
)

func renderWeb(t *testing.T) (*app.App, *corev1.Pod, func(runPodSpec) *corev1.Pod) {
	t.Helper()
	a := &app.App{Name: "shop", Namespace: ns, Pool: "gpu", Processes: map[string]app.Process{"web": {Replicas: 2}}, Release: 3}
	r := &app.Release{App: "shop", Version: 3, Image: "img:v3", Pool: "gpu", Processes: map[string]string{"web": "serve --port 8080"}}
	dep := processDeployment(render.Release(a, r, app.ConfigMap{"SECRET": "s3cr3t"}), "web")
	if dep == nil {
		t.Fatal("no web Deployment rendered")
	}
	tmpl := &corev1.Pod{Spec: dep.Spec.Template.Spec}
	return a, tmpl, func(s runPodSpec) *corev1.Pod { return buildRunPod(a, dep, s) }
}

func TestBuildRunPodFromTheReleaseTemplate(t *testing.T) {
	_, tmpl, build := renderWeb(t)
	p := build(runPodSpec{Name: "shop-run-x1y2z", Process: "web", Release: 3, Command: []string{"rake", "db:migrate"}, User: "alice", Timeout: 1500 * time.Millisecond})
	c, tc := p.Spec.Containers[0], tmpl.Spec.Containers[0]

	// a one-off: labelled as a run, never as a unit or a release's pod
	if p.Labels[kube.LabelKind] != "run" || p.Labels[kube.LabelApp] != "shop" || p.Labels[kube.LabelManagedBy] != "tug" {
		t.Fatalf("labels %v", p.Labels)
	}
	if _, ok := p.Labels[kube.LabelProcess]; ok {
		t.Fatal("a run pod must not carry tug.dev/process: it would count as a unit")
	}
	if _, ok := p.Labels[kube.LabelRelease]; ok {
		t.Fatal("a run pod must not carry tug.dev/release: a rollout would judge it")
	}
	if p.Annotations[AnnotationRunRelease] != "3" || p.Annotations[AnnotationRunProcess] != "web" || p.Annotations[AnnotationRunBy] != "alice" {
		t.Fatalf("annotations %v", p.Annotations)
	}
	// the unit's image, env (the release Secret), pool; the user's command
	if c.Image != tc.Image || len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != tc.EnvFrom[0].SecretRef.Name || p.Spec.NodeSelector[kube.LabelPool] != "gpu" {
		t.Fatalf("the run must get the unit's image, env and pool: %+v", p.Spec)
	}
	if strings.Join(c.Command, " ") != "rake db:migrate" || c.Args != nil {
		t.Fatalf("command %q args %q", c.Command, c.Args)
	}
	// nothing of a long-running member of a Service
	if c.ReadinessProbe != nil || c.LivenessProbe != nil || c.Ports != nil || c.Lifecycle != nil {
		t.Fatalf("probes, ports and hooks must go: %+v", c)
	}
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever || p.Spec.ActiveDeadlineSeconds == nil || *p.Spec.ActiveDeadlineSeconds != 2 {
		t.Fatalf("restart policy %s, deadline %v", p.Spec.RestartPolicy, p.Spec.ActiveDeadlineSeconds)
	}
	if c.Stdin || c.TTY {
		t.Fatal("no stdin or TTY unless asked")
	}
	// the template itself is untouched
	if tmpl.Spec.Containers[0].ReadinessProbe == nil {
		t.Fatal("buildRunPod changed the Deployment's template")
	}
	if strings.Contains(p.String(), "s3cr3t") {
		t.Fatal("a config value reached the pod spec")
	}
}

func TestBuildRunPodInteractiveAndEnv(t *testing.T) {
	_, _, build := renderWeb(t)
	p := build(runPodSpec{Name: "shop-run-x1y2z", Process: "web", Command: []string{"sh"}, TTY: true, Stdin: true, EnvKeys: []string{"PORT", "EXTRA"}})
	c := p.Spec.Containers[0]
	if !c.Stdin || !c.StdinOnce || !c.TTY {
		t.Fatalf("-it: stdin %v once %v tty %v", c.Stdin, c.StdinOnce, c.TTY)
	}
	if len(c.EnvFrom) != 2 || c.EnvFrom[1].SecretRef.Name != "shop-run-x1y2z-env" {
		t.Fatalf("the run's --env Secret must come last: %+v", c.EnvFrom)
	}
	for _, e := range c.Env {
		if e.Name == "PORT" {
			t.Fatal("an explicit env var overridden by --env must go, or it would win over the Secret")
		}
	}
	if p.Spec.ActiveDeadlineSeconds != nil {
		t.Fatal("no deadline without --timeout")
	}
}

func TestRunPodName(t *testing.T) {
	name := RunPodName(strings.Repeat("a", app.MaxAppNameLen))
	if !regexp.MustCompile(`^a+-run-[a-z0-9]{5}$`).MatchString(name) || len(validation.IsDNS1123Label(name)) > 0 || len(validation.IsDNS1123Subdomain(runEnvSecretName(name))) > 0 {
		t.Fatalf("run pod name %q", name)
	}
	if a, b := RunPodName("shop"), RunPodName("shop"); a == b {
		t.Fatal("two runs got the same name")
	}
}

func TestRunEnvSecret(t *testing.T) {
	a := &app.App{Name: "shop", Namespace: ns}
	s := runEnvSecret(a, "shop-run-x", app.ConfigMap{"A": "1"})
	if s.Name != "shop-run-x-env" || string(s.Data["A"]) != "1" || s.Labels[kube.LabelKind] != "run-env" || s.Immutable == nil || !*s.Immutable {
		t.Fatalf("secret %+v", s)
	}
}
