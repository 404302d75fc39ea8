package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WaitPods lists the pods that opts select in ns, then watches them until
// done says the current set is what it waits for (see Until). It ends with
// ctx's error at the deadline.
func WaitPods(ctx context.Context, client kubernetes.Interface, ns string, opts metav1.ListOptions, done func(pods map[string]*corev1.Pod) bool) error {
	return Until(ctx, Pods(client, ns, opts), func(pods map[string]*corev1.Pod) (bool, error) {
		return done(pods), nil
	})
}

// PodReady reports whether a pod's Ready condition is true.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ProcessContainer is the container that runs a unit's process: the one
// named after the process, else the first.
func ProcessContainer(p *corev1.Pod) string {
	proc := p.Labels[LabelProcess]
	for _, c := range p.Spec.Containers {
		if c.Name == proc {
			return c.Name
		}
	}
	if len(p.Spec.Containers) > 0 {
		return p.Spec.Containers[0].Name
	}
	return ""
}
