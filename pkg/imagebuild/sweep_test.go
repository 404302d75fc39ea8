package imagebuild

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/kube"
)

// A build deletes the app's build pods that ended leftoverGrace ago (a
// killed tug's), and none that may still be in use: running, just
// ended, another app's.
func TestBuildSweepsTheAppsLeftoverPods(t *testing.T) {
	c := runningClient()
	now := time.Now()
	long, recent := metav1.NewTime(now.Add(-time.Minute)), metav1.NewTime(now.Add(-time.Second))
	deadline := int64(10)
	pod := func(name, app string, phase corev1.PodPhase, created metav1.Time, ended *metav1.Time) *corev1.Pod {
		labels := kube.AppLabels(app)
		labels[kube.LabelKind] = KindBuild
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps", Labels: labels, CreationTimestamp: created},
			Spec: corev1.PodSpec{ActiveDeadlineSeconds: &deadline}, Status: corev1.PodStatus{Phase: phase}}
		if ended != nil {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "build", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: *ended}}}}
		}
		return p
	}
	for _, p := range []*corev1.Pod{
		pod("done-long-ago", "shop", corev1.PodSucceeded, long, &long),
		pod("failed-long-ago", "shop", corev1.PodFailed, long, &long),
		pod("past-its-deadline", "shop", corev1.PodFailed, long, nil),
		pod("just-done", "shop", corev1.PodSucceeded, long, &recent),
		pod("within-its-deadline", "shop", corev1.PodFailed, recent, nil),
		pod("running", "shop", corev1.PodRunning, long, nil),
		pod("another-app", "cart", corev1.PodSucceeded, long, &long),
	} {
		if err := c.Tracker().Add(p); err != nil { // not through the create reactor, which starts the pod
			t.Fatal(err)
		}
	}
	agent := &fakeAgent{output: resultPrefix + `{"ok":true,"image":"reg:5000/shop@sha256:abc"}` + "\n"}
	if _, err := Build(context.Background(), Deps{Client: c, Executor: agent, Out: io.Discard, Progress: noProgress{}}, opts()); err != nil {
		t.Fatal(err)
	}
	l, err := c.CoreV1().Pods("apps").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range l.Items {
		left = append(left, p.Name)
	}
	slices.Sort(left)
	if want := []string{"another-app", "just-done", "running", "within-its-deadline"}; !slices.Equal(left, want) {
		t.Errorf("pods left %v, want %v", left, want)
	}
}
