package kube

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// pagingClient serves n pods in pages of the requested limit, as the API
// server does; expireAt makes the page after that offset fail once with
// 410 Gone.
func pagingClient(n, expireAt int, limits *[]int64) *fake.Clientset {
	c := fake.NewClientset()
	expired := false
	c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o := a.(k8stesting.ListActionImpl).ListOptions
		*limits = append(*limits, o.Limit)
		from := 0
		if o.Continue != "" {
			from, _ = strconv.Atoi(o.Continue)
		}
		if o.Continue != "" && from == expireAt && !expired {
			expired = true
			return true, nil, apierrors.NewResourceExpired("continue token expired")
		}
		to := min(from+int(o.Limit), n)
		if o.Limit == 0 {
			to = n
		}
		list := &corev1.PodList{}
		for i := from; i < to; i++ {
			list.Items = append(list.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%05d", i), Labels: map[string]string{"a": "b"}}})
		}
		if to < n {
			list.Continue = strconv.Itoa(to)
		}
		return true, list, nil
	})
	return c
}

func TestEachPodReadsPagesOfAtMostPageSize(t *testing.T) {
	var limits []int64
	c := pagingClient(1234, -1, &limits)
	seen := map[string]bool{}
	err := EachPod(context.Background(), c, "ns", metav1.ListOptions{LabelSelector: "a=b"}, func() { t.Error("restarted without a 410") }, func(p *corev1.Pod) {
		if seen[p.Name] {
			t.Errorf("%s twice", p.Name)
		}
		seen[p.Name] = true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1234 {
		t.Errorf("saw %d pods, want 1234", len(seen))
	}
	if fmt.Sprint(limits) != "[500 500 500]" {
		t.Errorf("limits %v, want three pages of 500", limits)
	}
}

func TestEachPodStartsOverWhenTheSnapshotExpired(t *testing.T) {
	var limits []int64
	c := pagingClient(1200, 1000, &limits)
	var kept []string
	restarts := 0
	err := EachPod(context.Background(), c, "ns", metav1.ListOptions{}, func() { restarts++; kept = kept[:0] }, func(p *corev1.Pod) {
		kept = append(kept, p.Name)
	})
	if err != nil {
		t.Fatal(err)
	}
	if restarts != 1 || len(kept) != 1200 || kept[0] != "p00000" || kept[1199] != "p01199" {
		t.Errorf("restarts %d, kept %d pods (%v ... %v)", restarts, len(kept), kept[0], kept[len(kept)-1])
	}
}

func TestEachPodReturnsOtherErrors(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("no"))
	})
	err := EachPod(context.Background(), c, "ns", metav1.ListOptions{}, func() {}, func(*corev1.Pod) {})
	if !apierrors.IsForbidden(err) {
		t.Errorf("err %v, want the Forbidden", err)
	}
}
