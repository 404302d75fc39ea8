package events

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
)

// An Event's time is the newest it carries: a series' last observation,
// else its last timestamp, its event time (events.k8s.io/v1 writers), its
// first timestamp, and its creation as the last resort.
func TestFromEventTimeAndCount(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 12, 1, 10, m, 0, 0, time.UTC) }
	base := corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at(0))},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "shop-web-1"}, Type: "Warning", Reason: "BackOff", Message: "line one\nline two"}
	for _, tt := range []struct {
		name  string
		edit  func(e *corev1.Event)
		want  time.Time
		count int32
	}{
		{"creation only", func(*corev1.Event) {}, at(0), 0},
		{"first timestamp", func(e *corev1.Event) { e.FirstTimestamp = metav1.NewTime(at(1)) }, at(1), 0},
		{"event time", func(e *corev1.Event) {
			e.FirstTimestamp, e.EventTime = metav1.NewTime(at(1)), metav1.NewMicroTime(at(2))
		}, at(2), 0},
		{"last timestamp, counted", func(e *corev1.Event) {
			e.EventTime, e.LastTimestamp, e.Count = metav1.NewMicroTime(at(2)), metav1.NewTime(at(3)), 5
		}, at(3), 5},
		{"a series", func(e *corev1.Event) {
			e.LastTimestamp, e.Count = metav1.NewTime(at(3)), 5
			e.Series = &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(at(4))}
		}, at(4), 7},
		{"a series not yet observed", func(e *corev1.Event) {
			e.LastTimestamp = metav1.NewTime(at(3))
			e.Series = &corev1.EventSeries{Count: 1}
		}, at(3), 0},
		{"seen once", func(e *corev1.Event) { e.Count = 1 }, at(0), 0},
	} {
		e := base
		tt.edit(&e)
		got := FromEvent(&e)
		if !got.Time.Equal(tt.want) || got.Count != tt.count {
			t.Errorf("%s: time %v count %d, want %v %d", tt.name, got.Time, got.Count, tt.want, tt.count)
		}
		if got.Source != SourceKubernetes || got.Object != "Pod/shop-web-1" || got.Type != "Warning" || got.Message != "line one line two" {
			t.Errorf("%s: %+v; want one line of the pod's warning", tt.name, got)
		}
	}
}

func TestFromRelease(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		r         app.Release
		typ, want string
	}{
		{app.Release{Version: 3, Kind: "deploy", Author: "ann", Status: app.StatusDeployed, Message: "fix\x1b[2J"},
			"Normal", "v3 deploy by ann: deployed (fix^[[2J)"},
		{app.Release{Version: 4, Kind: "rollback", RollbackOf: 2, Status: app.StatusFailed, FailReason: "web crashed"},
			"Warning", "v4 rollback to v2: failed: web crashed"},
		{app.Release{Version: 5, Kind: "rollback", Status: app.StatusPending}, "Normal", "v5 rollback: pending"},
	} {
		tt.r.CreatedAt = at
		e := FromRelease(&tt.r)
		if e.Message != tt.want || e.Type != tt.typ || e.Object != fmt.Sprintf("Release/v%d", tt.r.Version) || e.Source != SourceTug || !e.Time.Equal(at) {
			t.Errorf("v%d: %+v; want %s %q", tt.r.Version, e, tt.typ, tt.want)
		}
	}
}

// A container that exited 0 is no event; one killed for memory is, even
// with exit code 0 from a runtime that reports none; a reason other than
// Error is said; a unit never restarted says no restarts; no finish time
// falls back to the start.
func TestFromPodExits(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	pod := func(states ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shop-web-1"}, Status: corev1.PodStatus{ContainerStatuses: states}}
	}
	term := func(code int32, reason string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: metav1.NewTime(at)}
	}
	evs := FromPod(pod(
		corev1.ContainerStatus{Name: "ok", State: corev1.ContainerState{Terminated: term(0, "Completed")}},
		corev1.ContainerStatus{Name: "oom", State: corev1.ContainerState{Terminated: term(0, "OOMKilled")}},
		corev1.ContainerStatus{Name: "sig", State: corev1.ContainerState{Terminated: term(143, "Signal")}},
	))
	want := []string{
		"OOMKilled: unit shop-web-1 passed its memory limit and was killed (exit code 0)",
		"Crashed: unit shop-web-1 exited with code 143 (Signal)",
	}
	if len(evs) != len(want) {
		t.Fatalf("events %+v, want %d", evs, len(want))
	}
	for i, e := range evs {
		if got := e.Reason + ": " + e.Message; got != want[i] || !e.Time.Equal(at) || e.Type != corev1.EventTypeWarning {
			t.Errorf("event %d: %q at %v, want %q at the start time", i, got, e.Time, want[i])
		}
	}
	evicted := pod()
	evicted.CreationTimestamp = metav1.NewTime(at)
	evicted.Status.Reason, evicted.Status.Message = "Evicted", "low on memory"
	if evs := FromPod(evicted); len(evs) != 1 || !evs[0].Time.Equal(at) {
		t.Errorf("an eviction without a disruption condition: %+v; want it at the pod's creation", evs)
	}
}

// Equal times sort by object, then reason; no events is an empty list,
// not null in JSON.
func TestSortedBreaksTies(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	got := Sorted([]Event{
		{Time: at, Object: "Pod/b", Reason: "A"},
		{Time: at, Object: "Pod/a", Reason: "Z"},
		{Time: at, Object: "Pod/a", Reason: "B"},
		{Time: at.Add(-time.Second), Object: "Pod/z", Reason: "A"},
	})
	var order []string
	for _, e := range got {
		order = append(order, e.Object+" "+e.Reason)
	}
	want := []string{"Pod/z A", "Pod/a B", "Pod/a Z", "Pod/b A"}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %q, want %q", order, want)
		}
	}
	if s := Sorted(nil); s == nil || len(s) != 0 {
		t.Errorf("Sorted(nil) = %#v, want an empty slice", s)
	}
}

func TestListReturnsWhatTheServerRefuses(t *testing.T) {
	for _, resource := range []string{"events", "pods"} {
		c := fake.NewClientset()
		c.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(corev1.Resource(resource), "", errors.New("no"))
		})
		if _, err := List(context.Background(), c, "dev", Options{App: "shop"}, nil); !apierrors.IsForbidden(err) {
			t.Errorf("%s unlistable: List = %v; want the forbidden list", resource, err)
		}
	}
}
