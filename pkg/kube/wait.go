package kube

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// WaitPods lists the pods that opts select in ns, then watches them until
// done says the current set is what it waits for. It ends with ctx's error
// at the deadline. A watch the server closes early (they time out) is
// resumed with a fresh list, so no change is missed.
func WaitPods(ctx context.Context, client kubernetes.Interface, ns string, opts metav1.ListOptions, done func(pods map[string]*corev1.Pod) bool) error {
	pods := map[string]*corev1.Pod{}
	for {
		list, err := client.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return err
		}
		clear(pods)
		for i := range list.Items {
			p := &list.Items[i]
			pods[p.Namespace+"/"+p.Name] = p
		}
		if done(pods) {
			return nil
		}
		wopts := opts
		wopts.ResourceVersion = list.ResourceVersion
		wopts.AllowWatchBookmarks = true
		w, err := client.CoreV1().Pods(ns).Watch(ctx, wopts)
		if retryableWatchError(err) {
			select { // the API server asked for a moment: give it one
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
			continue // list again, as informers do
		}
		if err != nil {
			return err
		}
		finished, err := consume(ctx, w, pods, done)
		w.Stop()
		if finished || err != nil {
			return err
		}
	}
}

func consume(ctx context.Context, w watch.Interface, pods map[string]*corev1.Pod, done func(map[string]*corev1.Pod) bool) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil // closed by the server: list again
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				if ev.Type == watch.Error {
					return false, nil // e.g. resource version too old: list again
				}
				continue
			}
			key := p.Namespace + "/" + p.Name
			switch ev.Type {
			case watch.Deleted:
				delete(pods, key)
			case watch.Added, watch.Modified:
				pods[key] = p
			default:
				continue
			}
			if done(pods) {
				return true, nil
			}
		}
	}
}

// retryableWatchError is a watch the server could not start yet: its
// watch cache is behind the list's resource version ("too large resource
// version"), the version is gone, or it is busy. Listing again fixes it.
func retryableWatchError(err error) bool {
	return err != nil && (apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsGone(err) ||
		apierrors.IsResourceExpired(err) || apierrors.IsTooManyRequests(err))
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
