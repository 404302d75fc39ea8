package nodecontainer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/kube"
)

func agentDS(updated, ready int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nc-agent", Namespace: "ops", Generation: 2,
			Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, LabelName: "agent"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelName: "agent"}}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 2,
			UpdatedNumberScheduled: updated, NumberAvailable: ready, NumberReady: ready, NumberUnavailable: 2 - ready},
	}
}

// The wait outlives a watch that fails to start, and returns the node
// containers as they ended up.
func TestWaitRolledOutAfterAWatchFailsToStart(t *testing.T) {
	client := fake.NewClientset(agentDS(1, 1))
	watching := make(chan struct{}, 4)
	first := true
	client.PrependWatchReactor("daemonsets", func(k8stesting.Action) (bool, watch.Interface, error) {
		if first {
			first = false
			return true, nil, apierrors.NewServiceUnavailable("busy")
		}
		watching <- struct{}{}
		return false, nil, nil
	})
	c := &Client{Kube: client, Namespace: "ops", Cluster: "prod"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		cts []Container
		err error
	}
	res := make(chan result, 1)
	go func() {
		cts, err := c.WaitRolledOut(ctx, []Container{{DaemonSet: "nc-agent"}}, nil)
		res <- result{cts, err}
	}()
	<-watching
	if _, err := client.AppsV1().DaemonSets("ops").UpdateStatus(ctx, agentDS(2, 2), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil || len(r.cts) != 1 || r.cts[0].Ready != 2 {
		t.Fatalf("WaitRolledOut = %+v, %v; want nc-agent with 2 ready", r.cts, r.err)
	}
}

func TestWaitRolledOutSaysWhyAtTheDeadline(t *testing.T) {
	c := &Client{Kube: fake.NewClientset(agentDS(1, 1)), Namespace: "ops", Cluster: "prod"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.WaitRolledOut(ctx, []Container{{DaemonSet: "nc-agent"}}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "node container agent (daemonset nc-agent) did not roll out: 1 of 2 nodes up to date, 1 ready") {
		t.Fatalf("WaitRolledOut = %v", err)
	}
}
