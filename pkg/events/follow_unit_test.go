package events

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/kube"
)

const waitFor = 10 * time.Second

// event is an Event of the object named obj, last seen at.
func event(name, obj, reason string, at time.Time, count int32) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dev"}, Type: corev1.EventTypeNormal,
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: obj}, Reason: reason, Message: reason + " " + obj,
		LastTimestamp: metav1.NewTime(at), Count: count}
}

// crashedPod is a unit of shop whose container last exited with code.
func crashedPod(name string, code int32, at time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "dev", Labels: kube.AppLabels("shop")},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "web", RestartCount: 1,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", FinishedAt: metav1.NewTime(at)}}}}},
	}
}

// following runs Follow on c until the test ends, once its watches of
// Events and pods are open (objects made after it returns are seen by
// the watches, never lost between a list and a watch). It returns the
// emitted events and Follow's result.
func following(t *testing.T, c *fake.Clientset, o Options, shown []Event) (<-chan Event, <-chan error, context.CancelFunc) {
	t.Helper()
	watching := make(chan string, 4)
	c.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		// the fake holds its lock until the tracker's watch is open: a
		// create after this signal reaches the watch
		select {
		case watching <- a.GetResource().Resource:
		default: // a watch opened again later: nobody waits for it
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	emitted := make(chan Event, 100)
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, c, "dev", o, shown, func(e Event) { emitted <- e })
	}()
	open := map[string]bool{}
	deadline := time.After(waitFor)
	for !open["events"] || !open["pods"] {
		select {
		case r := <-watching:
			open[r] = true
		case err := <-done:
			t.Fatalf("Follow ended before watching: %v", err)
		case <-deadline:
			t.Fatalf("Follow did not watch events and pods within %s (open: %v)", waitFor, open)
		}
	}
	return emitted, done, cancel
}

// until collects emitted events up to and including the first whose
// reason is last.
func until(t *testing.T, emitted <-chan Event, last string) []string {
	t.Helper()
	var got []string
	deadline := time.After(waitFor)
	for {
		select {
		case e := <-emitted:
			got = append(got, e.Object+" "+e.Reason)
			if e.Reason == last {
				return got
			}
		case <-deadline:
			t.Fatalf("no %s event within %s; got %q", last, waitFor, got)
		}
	}
}

func create(t *testing.T, c *fake.Clientset, objs ...runtime.Object) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Event:
			_, err = c.CoreV1().Events("dev").Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Pod:
			_, err = c.CoreV1().Pods("dev").Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Follow emits what happens from now on, once each: what was shown
// already is not emitted again, another app's events are not emitted, an
// Event Kubernetes repeats (new count and time) is, and so is a unit's
// new exit. It returns nil when its context ends.
func TestFollowEmitsEachNewEventOnce(t *testing.T) {
	t0 := time.Now().Add(-time.Minute)
	seen := event("e1", "shop-web-1-a", "Pulled", t0, 1)
	c := fake.NewClientset(seen, event("e2", "blog-web-1-a", "Old", t0, 1))
	o := Options{App: "shop", Processes: []string{"web"}}
	shown, err := List(context.Background(), c, "dev", o, nil)
	if err != nil || len(shown) != 1 {
		t.Fatalf("List = %v, %v", shown, err)
	}
	emitted, done, cancel := following(t, c, o, shown)

	create(t, c, event("e3", "blog-web-1-a", "NotShops", t0, 1), event("e4", "shop-web", "ScalingReplicaSet", t0.Add(time.Second), 1))
	if got, want := until(t, emitted, "ScalingReplicaSet"), []string{"Pod/shop-web ScalingReplicaSet"}; !slices.Equal(got, want) {
		t.Errorf("emitted %q, want %q (not the event shown before, nor blog's)", got, want)
	}

	again := seen.DeepCopy()
	again.Count, again.LastTimestamp = 2, metav1.NewTime(t0.Add(2*time.Second))
	if _, err := c.CoreV1().Events("dev").Update(context.Background(), again, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := until(t, emitted, "Pulled"); !slices.Equal(got, []string{"Pod/shop-web-1-a Pulled"}) {
		t.Errorf("the repeated event: emitted %q", got)
	}

	create(t, c, crashedPod("shop-web-1-b", 3, t0.Add(3*time.Second)))
	if got := until(t, emitted, "Crashed"); !slices.Equal(got, []string{"Pod/shop-web-1-b Crashed"}) {
		t.Errorf("the unit's exit: emitted %q", got)
	}
	// the same Event seen again unchanged (a relabel, say) is not new
	create(t, c, event("e5", "shop-web", "Sentinel", t0.Add(4*time.Second), 1))
	if _, err := c.CoreV1().Events("dev").Update(context.Background(), again, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(t, c, event("e6", "shop-web", "Sentinel2", t0.Add(5*time.Second), 1))
	if got := until(t, emitted, "Sentinel2"); !slices.Equal(got, []string{"Pod/shop-web Sentinel", "Pod/shop-web Sentinel2"}) {
		t.Errorf("an unchanged event was emitted again: %q", got)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Follow = %v after its context ended; want nil", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Follow did not return after its context ended")
	}
}

// With --since, an event older than the window is not emitted, even
// when it reaches the watch now.
func TestFollowKeepsToSince(t *testing.T) {
	c := fake.NewClientset()
	emitted, _, _ := following(t, c, Options{App: "shop", Processes: []string{"web"}, Since: time.Hour}, nil)
	now := time.Now()
	create(t, c, event("old", "shop-web", "TooOld", now.Add(-2*time.Hour), 1), event("new", "shop-web", "Recent", now, 1))
	if got := until(t, emitted, "Recent"); !slices.Equal(got, []string{"Pod/shop-web Recent"}) {
		t.Errorf("emitted %q; want the recent event alone", got)
	}
}

// A watch the server refuses ends Follow with the error, translated.
func TestFollowReturnsWhatTheServerRefuses(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("no"))
	})
	done := make(chan error, 1)
	go func() {
		done <- Follow(context.Background(), c, "dev", Options{App: "shop"}, nil, func(Event) {})
	}()
	select {
	case err := <-done:
		var translated *kube.Error
		if !apierrors.IsForbidden(err) || !errors.As(err, &translated) {
			t.Errorf("Follow = %v; want the forbidden list, translated", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Follow did not return the refused list")
	}
}
