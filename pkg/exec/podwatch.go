package exec

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"tug.dev/tug/pkg/kube"
)

// errPodGone is returned by watchPod when the pod is deleted.
type errPodGone struct{ name string }

func (e *errPodGone) Error() string { return fmt.Sprintf("pod %s was deleted", e.name) }

// watchPod watches one pod until cond is done or fails: one LIST and one
// WATCH, listed again when the server ends the watch. cond also sees the
// last state of the pod every recheck (when > 0), for rules about how long
// a state has lasted.
func watchPod(ctx context.Context, client kubernetes.Interface, namespace, name string, recheck time.Duration, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	pods := client.CoreV1().Pods(namespace)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	for {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return nil, kube.TranslateError(err)
		}
		if len(list.Items) == 0 {
			return nil, &errPodGone{name: name}
		}
		p := &list.Items[0]
		if done, err := cond(p); done || err != nil {
			return p, err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		if err != nil {
			return nil, kube.TranslateError(err)
		}
		p, done, err := drain(ctx, w, name, p, recheck, cond)
		w.Stop()
		if done || err != nil {
			return p, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func drain(ctx context.Context, w watch.Interface, name string, last *corev1.Pod, recheck time.Duration, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, bool, error) {
	var tick <-chan time.Time
	if recheck > 0 {
		t := time.NewTicker(recheck)
		defer t.Stop()
		tick = t.C
	}
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return nil, true, ctx.Err()
		case <-tick:
			if done, err := cond(last); done || err != nil {
				return last, true, err
			}
			continue
		case e, ok := <-w.ResultChan():
			if !ok {
				return nil, false, nil
			}
			ev = e
		}
		switch ev.Type {
		case watch.Error:
			// most often 410 Gone: the resourceVersion is too old; list again
			if st, ok := ev.Object.(*metav1.Status); ok && st.Code != 410 {
				return nil, true, kube.TranslateError(apierrors.FromObject(ev.Object))
			}
			return nil, false, nil
		case watch.Deleted:
			return nil, true, &errPodGone{name: name}
		case watch.Added, watch.Modified:
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			last = p
			if done, err := cond(p); done || err != nil {
				return p, true, err
			}
		}
	}
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
