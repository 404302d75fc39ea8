package e2e

// Harness: waiting on pods (WaitPods, AllReady) and plain Deployments for
// the cluster's own tests.

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
)

// WaitPods watches the pods matching selector in the test's namespace until
// cond holds for the current set, failing the test at the deadline.
func (h *H) WaitPods(selector string, timeout time.Duration, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pods := map[string]corev1.Pod{}
	list := func() []corev1.Pod {
		out := make([]corev1.Pod, 0, len(pods))
		for _, p := range pods {
			out = append(out, p)
		}
		return out
	}
	for {
		l, err := h.Client.CoreV1().Pods(h.NS).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			h.t.Fatalf("%s: listing pods: %v", what, err)
		}
		clear(pods)
		for _, p := range l.Items {
			pods[p.Name] = p
		}
		if cond(list()) {
			return list()
		}
		w, err := h.Client.CoreV1().Pods(h.NS).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: l.ResourceVersion})
		if err != nil {
			h.t.Fatalf("%s: watching pods: %v", what, err)
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(pods, p.Name)
			} else {
				pods[p.Name] = *p
			}
			if cond(list()) {
				w.Stop()
				return list()
			}
		}
		if ctx.Err() != nil {
			h.dumpNamespace()
			h.t.Fatalf("%s: not within %s", what, timeout)
		}
		// the watch closed early: list again and resume
	}
}

// AllReady is a WaitPods condition: exactly n pods, all Ready.
func AllReady(n int) func([]corev1.Pod) bool {
	return func(pods []corev1.Pod) bool {
		if len(pods) != n {
			return false
		}
		for _, p := range pods {
			if !PodReady(p) || p.DeletionTimestamp != nil {
				return false
			}
		}
		return true
	}
}

func PodReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// SampleDeployment is a Deployment of the local sample image.
func SampleDeployment(name, tag string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{
						Name:            "sample",
						Image:           "localhost/tug/sample:" + tag,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Env:             []corev1.EnvVar{{Name: "HEARTBEAT", Value: "200ms"}},
						Ports:           []corev1.ContainerPort{{ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstrPort(8080)}},
							PeriodSeconds: 1,
						},
					}},
				},
			},
		},
	}
}

func (h *H) CreateDeployment(d *appsv1.Deployment) {
	h.t.Helper()
	if _, err := h.Client.AppsV1().Deployments(h.NS).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		h.t.Fatalf("creating deployment %s: %v", d.Name, err)
	}
}

func selectorOf(d *appsv1.Deployment) string {
	return fmt.Sprintf("app=%s", d.Labels["app"])
}

func intstrPort(p int) intstr.IntOrString { return intstr.FromInt32(int32(p)) }
