package node

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"tug.dev/tug/pkg/lock"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

func marksOn(t *testing.T, fc *fakeCluster, node string) []surgeMark {
	t.Helper()
	n := nodeExists(t, fc, node)
	if n == nil {
		t.Fatalf("node %s is gone", node)
	}
	return surgeMarks(n)
}

func scaleOf(t *testing.T, fc *fakeCluster, ns, name string) int32 {
	t.Helper()
	sc, err := fc.AppsV1().Deployments(ns).GetScale(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sc.Spec.Replicas
}

// The node records a surge before the count goes up (a removal killed
// after the write still leaves the record), names the lock it holds, and
// the record goes once the count is back.
func TestSurgeIsMarkedOnTheNodeUntilPutBack(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true), readyNode("other", true),
		unitPod("apps", "shop", "web", "shop-web-1", "n1", true), deployment("apps", "shop-web", 1))
	var atSurge []surgeMark
	fc.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if sc, ok := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale); ok && sc.Spec.Replicas == 2 {
			n, _ := fc.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", "n1")
			atSurge = surgeMarks(n.(*corev1.Node))
		}
		return false, nil, nil
	})
	res, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{Holder: lock.Holder{User: "test"}, KeepNode: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(atSurge) != 1 || atSurge[0].App != "shop" || atSurge[0].Process != "web" || atSurge[0].From != 1 || atSurge[0].To != 2 ||
		!strings.HasPrefix(atSurge[0].Lock, "test moving units off node n1 #") {
		t.Fatalf("the node's marks when the count went up: %+v", atSurge)
	}
	if m := marksOn(t, fc, "n1"); len(m) != 0 {
		t.Errorf("marks left after the count was put back: %+v", m)
	}
	if len(res.Surges) != 1 || !res.Surges[0].Restored || res.Surges[0].Earlier {
		t.Errorf("surges: %+v", res.Surges)
	}
}

// A count the drain could not put back keeps its mark, without the lock
// (the run released it), and the next removal of the node puts it back.
func TestFailedPutBackIsFinishedByTheNextRemoval(t *testing.T) {
	fc := newFakeCluster(t, readyNode("n1", true), readyNode("other", true),
		unitPod("apps", "shop", "web", "shop-web-1", "n1", true), deployment("apps", "shop-web", 1))
	failing := true
	fc.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if sc, ok := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale); ok && sc.Spec.Replicas == 1 && failing {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is away"))
		}
		return false, nil, nil
	})
	res, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{Holder: lock.Holder{User: "test"}, KeepNode: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Surges) != 1 || res.Surges[0].Restored || scaleOf(t, fc, "apps", "shop-web") != 2 {
		t.Fatalf("the put back should have failed: %+v", res.Surges)
	}
	marks := marksOn(t, fc, "n1")
	if len(marks) != 1 || marks[0].Lock != "" || marks[0].From != 1 || marks[0].To != 2 {
		t.Fatalf("marks after a failed put back: %+v", marks)
	}

	failing = false
	res, err = Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{Holder: lock.Holder{User: "test"}, KeepNode: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := scaleOf(t, fc, "apps", "shop-web"); got != 1 {
		t.Errorf("the next removal left %d units, want 1", got)
	}
	if len(res.Surges) != 1 || !res.Surges[0].Restored || !res.Surges[0].Earlier {
		t.Errorf("surges of the next removal: %+v", res.Surges)
	}
	if m := marksOn(t, fc, "n1"); len(m) != 0 {
		t.Errorf("marks left: %+v", m)
	}
	b, _ := json.Marshal(res.Surges[0])
	if !strings.Contains(string(b), `"earlier":true`) {
		t.Errorf("-o json of the surge: %s", b)
	}
}

// A mark whose lock someone took since (the lease is gone, or names
// another tug) leaves the count alone: it is theirs now.
func TestEarlierSurgeLeftAloneAfterAnotherLockTaker(t *testing.T) {
	n := readyNode("n1", true)
	b, _ := json.Marshal([]surgeMark{{Namespace: "apps", App: "shop", Process: "web", From: 1, To: 2, Lock: "a killed tug #abc"}})
	n.Annotations = map[string]string{AnnotationSurges: string(b)}
	fc := newFakeCluster(t, n, readyNode("other", true), deployment("apps", "shop-web", 2))
	res, err := Remove(context.Background(), fc.found(t, "n1"), RemoveOptions{Holder: lock.Holder{User: "test"}, KeepNode: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := scaleOf(t, fc, "apps", "shop-web"); got != 2 {
		t.Errorf("the count is %d; another lock taker's 2 must stay", got)
	}
	if len(res.Surges) != 0 || len(fc.log()) != 0 {
		t.Errorf("surges %+v, events %v: want nothing done", res.Surges, fc.log())
	}
	if m := marksOn(t, fc, "n1"); len(m) != 0 {
		t.Errorf("marks left: %+v", m)
	}
}
