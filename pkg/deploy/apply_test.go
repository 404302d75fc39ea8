package deploy

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
)

// The maintenance page's wait outlives a watch that fails to start and
// returns once a unit is available.
func TestWaitAvailable(t *testing.T) {
	c := fakeClient(dep("maint", 1, 1, appsv1.DeploymentStatus{}), dep("web", 1, 1, done(1, 1)))
	var watches atomic.Int32
	started := make(chan struct{}, 4)
	c.PrependWatchReactor("deployments", func(k8stesting.Action) (bool, watch.Interface, error) {
		if watches.Add(1) == 1 {
			return true, nil, apierrors.NewServiceUnavailable("busy")
		}
		started <- struct{}{}
		return false, nil, nil
	})
	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { errc <- waitAvailable(ctx, c, ns, "shop-maint", "maint:1") }()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("waitAvailable = %v before the unit was available (another Deployment's units do not count)", err)
	case <-ctx.Done():
		t.Fatal("no watch after the 503")
	}
	if _, err := c.AppsV1().Deployments(ns).Update(ctx, dep("maint", 1, 1, done(1, 1)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("waitAvailable = %v", err)
	}
}
