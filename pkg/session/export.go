package session

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// WatchPod watches one pod until cond is done or fails (see watchPod), for
// other packages that run a pod of their own (pkg/imagebuild).
func WatchPod(ctx context.Context, client kubernetes.Interface, namespace, name string, recheck time.Duration, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	return watchPod(ctx, client, namespace, name, recheck, cond)
}

// IsPodGone is an error of WatchPod saying the pod was deleted.
func IsPodGone(err error) bool {
	_, ok := err.(*errPodGone)
	return ok
}

// WithHangup is a context that SIGHUP (and SIGTERM) cancel too, as run's.
func WithHangup(ctx context.Context) (context.Context, context.CancelFunc) { return withHangup(ctx) }
