package session

import (
	"math"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// KindRun is the tug.dev/kind of one-off run pods. They carry the app's
// labels but no tug.dev/process, so they are never counted as units, and
// no tug.dev/release, so a rollout never mistakes one for its own.
const KindRun = "run"

// kindRunEnv is the tug.dev/kind of the Secret holding a run's --env.
const kindRunEnv = "run-env"

// Annotations on run pods.
const (
	AnnotationRunRelease = "tug.dev/release"
	AnnotationRunProcess = "tug.dev/run-process"
	AnnotationRunBy      = "tug.dev/run-by"
)

// RunPodName is a new, unused-looking name for a run pod of app: chosen
// here rather than by the API server, so the pod can be deleted even when
// the answer to its creation never arrives.
func RunPodName(appName string) string { return appName + "-run-" + utilrand.String(5) }

// runEnvSecretName is the Secret of a run's --env values.
func runEnvSecretName(pod string) string { return pod + "-env" }

// runPodSpec is what makes one run pod, besides the release's pod template.
type runPodSpec struct {
	Name    string
	Process string
	Release int
	Command []string
	Stdin   bool
	TTY     bool
	Timeout time.Duration
	EnvKeys []string // keys of the run's own --env, in its Secret
	User    string
}

// buildRunPod makes a one-off pod from the pod template a release's
// Deployment for the process has (pkg/render renders it), so the run gets
// the same image, environment (the release's Secret), limits, pool,
// volumes and pull secrets as the process's units. What makes a unit a
// long-running member of a Service goes: probes, ports, lifecycle hooks.
func buildRunPod(a *app.App, dep *appsv1.Deployment, s runPodSpec) *corev1.Pod {
	tmpl := dep.Spec.Template.DeepCopy()
	labels := kube.AppLabels(a.Name)
	labels[kube.LabelKind] = KindRun
	annotations := map[string]string{}
	for k, v := range tmpl.Annotations {
		annotations[k] = v
	}
	annotations[AnnotationRunRelease] = strconv.Itoa(s.Release)
	annotations[AnnotationRunProcess] = s.Process
	if s.User != "" {
		annotations[AnnotationRunBy] = s.User
	}
	spec := tmpl.Spec
	spec.RestartPolicy = corev1.RestartPolicyNever
	if s.Timeout > 0 {
		// The cluster stops the run at the deadline even if tug is gone.
		secs := int64(math.Ceil(s.Timeout.Seconds()))
		spec.ActiveDeadlineSeconds = &secs
	}
	c := &spec.Containers[0]
	c.Command, c.Args = s.Command, nil
	c.ReadinessProbe, c.LivenessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	c.Ports = nil
	c.Stdin, c.StdinOnce, c.TTY = s.Stdin || s.TTY, s.Stdin || s.TTY, s.TTY
	if len(s.EnvKeys) > 0 {
		// The run's own values come last, so they win over the release's
		// (and over explicit env such as PORT, which would otherwise win).
		override := map[string]bool{}
		for _, k := range s.EnvKeys {
			override[k] = true
		}
		env := c.Env[:0:0]
		for _, e := range c.Env {
			if !override[e.Name] {
				env = append(env, e)
			}
		}
		c.Env = env
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: runEnvSecretName(s.Name)},
		}})
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: a.Namespace, Labels: labels, Annotations: annotations},
		Spec:       spec,
	}
}

// runEnvSecret holds a run's --env values, so they stay out of the pod's
// spec as an app's config does.
func runEnvSecret(a *app.App, pod string, env app.ConfigMap) *corev1.Secret {
	labels := kube.AppLabels(a.Name)
	labels[kube.LabelKind] = kindRunEnv
	data := make(map[string][]byte, len(env))
	for k, v := range env {
		data[k] = []byte(v)
	}
	immutable := true
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: runEnvSecretName(pod), Namespace: a.Namespace, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
		Immutable:  &immutable,
	}
}
