package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// errPodGone is returned by watchPod when the pod is deleted.
type errPodGone struct{ name string }

func (e *errPodGone) Error() string { return fmt.Sprintf("pod %s was deleted", e.name) }

// watchPod watches one pod until cond is done or fails: one LIST and one
// WATCH, resumed or listed again as kube.Until does. cond also sees the last
// state of the pod every recheck (when > 0), for rules about how long a
// state has lasted.
func watchPod(ctx context.Context, client kubernetes.Interface, namespace, name string, recheck time.Duration, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	lw := kube.Pods(client, namespace, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	lw.Resync = recheck
	var last *corev1.Pod
	byCond := false // cond ended the watch: its answer, as is
	err := kube.Until(ctx, lw, func(pods map[string]*corev1.Pod) (bool, error) {
		p := pods[namespace+"/"+name]
		if p == nil {
			return true, &errPodGone{name: name}
		}
		last = p
		done, err := cond(p)
		byCond = done || err != nil
		return done, err
	})
	switch {
	case byCond:
		return last, err
	case err != nil:
		var gone *errPodGone
		if errors.As(err, &gone) {
			return nil, err
		}
		return nil, kube.TranslateError(err)
	}
	return last, nil
}

// containerStatus is the status of the named container, if it has one yet.
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}
