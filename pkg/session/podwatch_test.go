package session

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestWatchPod(t *testing.T) {
	runPod := func(phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "run-1", Namespace: ns}, Status: corev1.PodStatus{Phase: phase}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	running := func(p *corev1.Pod) (bool, error) { return p.Status.Phase == corev1.PodRunning, nil }

	t.Run("cond done after a watch that failed to start", func(t *testing.T) {
		c := fake.NewClientset(runPod(corev1.PodPending))
		watching := make(chan struct{}, 4)
		first := true
		c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
			if first {
				first = false
				return true, nil, apierrors.NewTooManyRequests("slow down", 0)
			}
			watching <- struct{}{}
			return false, nil, nil
		})
		got := make(chan *corev1.Pod, 1)
		errc := make(chan error, 1)
		go func() {
			p, err := watchPod(ctx, c, ns, "run-1", 0, running)
			got <- p
			errc <- err
		}()
		<-watching
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, runPod(corev1.PodRunning), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if p, err := <-got, <-errc; err != nil || p == nil || p.Status.Phase != corev1.PodRunning {
			t.Fatalf("watchPod = %v, %v; want the running pod", p, err)
		}
	})
	t.Run("cond's error comes back with the pod", func(t *testing.T) {
		c := fake.NewClientset(runPod(corev1.PodFailed))
		boom := errors.New("boom")
		p, err := watchPod(ctx, c, ns, "run-1", 0, func(*corev1.Pod) (bool, error) { return false, boom })
		if err != boom || p == nil {
			t.Fatalf("watchPod = %v, %v; want the pod and the condition's error", p, err)
		}
	})
	t.Run("deleted pod", func(t *testing.T) {
		c := fake.NewClientset(runPod(corev1.PodPending))
		watching := make(chan struct{}, 4)
		c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
			watching <- struct{}{}
			return false, nil, nil
		})
		errc := make(chan error, 1)
		go func() {
			_, err := watchPod(ctx, c, ns, "run-1", 0, running)
			errc <- err
		}()
		<-watching
		if err := c.CoreV1().Pods(ns).Delete(ctx, "run-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		var gone *errPodGone
		if err := <-errc; !errors.As(err, &gone) {
			t.Fatalf("watchPod = %v, want the pod gone", err)
		}
	})
	t.Run("no such pod", func(t *testing.T) {
		var gone *errPodGone
		if _, err := watchPod(ctx, fake.NewClientset(), ns, "run-1", 0, running); !errors.As(err, &gone) {
			t.Fatalf("watchPod = %v, want the pod gone", err)
		}
	})
}
