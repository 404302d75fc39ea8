package lifecycle

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
)

// terminatingPods makes the fake delete pods the way a real server's graceful
// deletion does: they get a deletionTimestamp and stay until the test
// removes them from the tracker.
func terminatingPods(c *fake.Clientset) {
	c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gvr := a.GetResource()
		obj, err := c.Tracker().Get(gvr, a.GetNamespace(), a.(k8stesting.DeleteAction).GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		now := metav1.Now()
		p.DeletionTimestamp = &now
		return true, nil, c.Tracker().Update(gvr, p, a.GetNamespace())
	})
}

func labelled(appName string) map[string]string { return kube.AppLabels(appName) }

func removeFixture(t *testing.T) (*fake.Clientset, *app.Store) {
	t.Helper()
	c, s := newFake(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Namespace: ns, Labels: labelled("shop")}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "blog-web", Namespace: ns, Labels: labelled("blog")}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns, Labels: labelled("shop")}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "blog", Namespace: ns, Labels: labelled("blog")}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shop-web-1", Namespace: ns, Labels: labelled("shop")}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "blog-web-1", Namespace: ns, Labels: labelled("blog")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: ns}},
	)
	seedApp(t, s, &app.App{Name: "shop", Release: 1, LastRelease: 1})
	seedApp(t, s, &app.App{Name: "blog", Release: 1, LastRelease: 1})
	seedRelease(t, s, &app.Release{App: "shop", Version: 1, Image: "shop:1"}, app.ConfigMap{"A": "1"})
	seedRelease(t, s, &app.Release{App: "blog", Version: 1, Image: "blog:1"}, app.ConfigMap{"A": "1"})
	return c, s
}

func names(t *testing.T, c *fake.Clientset) map[string]bool {
	t.Helper()
	ctx := context.Background()
	out := map[string]bool{}
	dl, _ := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	for _, o := range dl.Items {
		out["deployment/"+o.Name] = true
	}
	sl, _ := c.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	for _, o := range sl.Items {
		out["service/"+o.Name] = true
	}
	pl, _ := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	for _, o := range pl.Items {
		out["pod/"+o.Name] = true
	}
	secl, _ := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	for _, o := range secl.Items {
		out["secret/"+o.Name] = true
	}
	cml, _ := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	for _, o := range cml.Items {
		out["configmap/"+o.Name] = true
	}
	return out
}

func TestRemove(t *testing.T) {
	c, s := removeFixture(t)
	if err := Remove(context.Background(), deps(c), "shop", RemoveOptions{}); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	got := names(t, c)
	for _, gone := range []string{"deployment/shop-web", "service/shop", "pod/shop-web-1", "secret/tug-release-shop-v1", "configmap/tug-app-shop"} {
		if got[gone] {
			t.Errorf("%s left after Remove", gone)
		}
	}
	for _, kept := range []string{"deployment/blog-web", "service/blog", "pod/blog-web-1", "secret/tug-release-blog-v1", "configmap/tug-app-blog", "configmap/unrelated"} {
		if !got[kept] {
			t.Errorf("Remove deleted %s, which is not the app's", kept)
		}
	}
	if _, err := s.GetApp(context.Background(), "shop"); !app.IsNotFound(err) {
		t.Errorf("GetApp after Remove = %v", err)
	}
	assertNoLease(t, c)
}

// Remove waits, on a watch, for units that take a while to stop, and only
// then removes the release records and the app record.
func TestRemoveWaitsForUnits(t *testing.T) {
	c, s := removeFixture(t)
	terminatingPods(c)
	// Signal once Remove's pod WATCH is registered: the fake replays only
	// objects that still exist, so a deletion before the WATCH would be lost
	// (a real server replays it from the LIST's resourceVersion).
	watching := make(chan struct{}, 1)
	c.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.(k8stesting.WatchActionImpl).ListOptions)
		select {
		case watching <- struct{}{}:
		default:
		}
		return true, w, err
	})
	lines := make(chan string, 16)
	d := deps(c)
	d.Progress = chanProgress(lines)
	errc := make(chan error, 1)
	go func() { errc <- Remove(context.Background(), d, "shop", RemoveOptions{}) }()

	deadline := time.After(10 * time.Second)
	for waiting := false; !waiting; {
		select {
		case l := <-lines:
			waiting = l == "waiting for 1 unit to stop"
		case err := <-errc:
			t.Fatalf("Remove returned %v while a unit was still there", err)
		case <-deadline:
			t.Fatal("Remove never said it waits for the unit")
		}
	}
	select {
	case <-watching:
	case <-deadline:
		t.Fatal("Remove never watched its units")
	}
	if _, err := s.GetApp(context.Background(), "shop"); err != nil {
		t.Errorf("the app record went before its units: %v", err)
	}
	if err := c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, "shop-web-1"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Remove = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Remove did not return after the last unit stopped")
	}
	if _, err := s.GetApp(context.Background(), "shop"); !app.IsNotFound(err) {
		t.Errorf("GetApp after Remove = %v", err)
	}
}

func TestRemoveRefusals(t *testing.T) {
	t.Run("missing app", func(t *testing.T) {
		c, _ := newFake()
		if err := Remove(context.Background(), deps(c), "shop", RemoveOptions{}); !app.IsNotFound(err) {
			t.Fatalf("Remove = %v, want not found", err)
		}
	})
	t.Run("locked", func(t *testing.T) {
		c, _ := removeFixture(t)
		if _, err := c.CoordinationV1().Leases(ns).Create(context.Background(), lease("bob", time.Now()), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var locked *lock.HeldError
		if err := Remove(context.Background(), deps(c), "shop", RemoveOptions{}); !errors.As(err, &locked) {
			t.Fatalf("Remove = %v, want locked", err)
		}
		if !names(t, c)["deployment/shop-web"] {
			t.Error("a locked Remove deleted something")
		}
	})
}

// Remove lists and deletes one by one, every kind an app has: the developer
// Role grants list and delete, not deletecollection. Objects without the
// app's labels stay, whatever their name.
func TestRemoveEveryKindWithoutDeleteCollection(t *testing.T) {
	c, _ := removeFixture(t)
	ctx := context.Background()
	theirs := metav1.ObjectMeta{Name: "shop-ops", Namespace: ns}
	for _, o := range []runtime.Object{
		&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Namespace: ns, Labels: labelled("shop")}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns, Labels: labelled("shop")}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "shop-allow", Namespace: ns, Labels: labelled("shop")}},
		&networkingv1.Ingress{ObjectMeta: theirs},
	} {
		if err := c.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := Remove(ctx, deps(c), "shop", RemoveOptions{}); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	for _, a := range c.Actions() {
		if a.GetVerb() == "delete-collection" {
			t.Errorf("Remove used deletecollection on %s", a.GetResource().Resource)
		}
	}
	if l, _ := c.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("autoscalers left: %d", len(l.Items))
	}
	if l, _ := c.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("network policies left: %d", len(l.Items))
	}
	l, _ := c.NetworkingV1().Ingresses(ns).List(ctx, metav1.ListOptions{})
	if len(l.Items) != 1 || l.Items[0].Name != "shop-ops" {
		t.Errorf("ingresses after Remove = %+v, want only the one that is not tug's", l.Items)
	}
}

// A delete the server refuses stops Remove with what is left, the app's
// record among it (so remove can run again), and the lock released.
func TestRemoveRefusedPartWaySaysWhatIsLeft(t *testing.T) {
	c, s := removeFixture(t)
	if err := c.Tracker().Add(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns, Labels: labelled("shop")}}); err != nil {
		t.Fatal(err)
	}
	c.PrependReactor("delete", "ingresses", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "shop", errors.New("no"))
	})
	err := Remove(context.Background(), deps(c), "shop", RemoveOptions{})
	var partly *RemoveError
	if !errors.As(err, &partly) || !apierrors.IsForbidden(err) {
		t.Fatalf("Remove = %v, want a RemoveError wrapping the refusal", err)
	}
	if !slices.Equal(partly.Left, []string{"ingresses", "middlewares", "certificates", "autoscalers", "services", "deployments", "network policies", "job runs", "units", "release records", "release config", "app record"}) {
		t.Errorf("left = %q", partly.Left)
	}
	if !strings.Contains(err.Error(), "tug app remove shop") {
		t.Errorf("error %q does not say how to finish", err)
	}
	if _, err := s.GetApp(context.Background(), "shop"); err != nil {
		t.Errorf("the record went: %v", err)
	}
	assertNoLease(t, c)
}

// An object replaced between removal's LIST and its DELETE (the UID
// precondition fails: Conflict) is not removed, and removal says it is
// left rather than succeeding.
func TestRemoveOfAReplacedObjectSaysItIsLeft(t *testing.T) {
	c, s := removeFixture(t)
	c.PrependReactor("delete", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), "shop", errors.New("Precondition failed: UID in precondition does not match"))
	})
	err := Remove(context.Background(), deps(c), "shop", RemoveOptions{})
	var partly *RemoveError
	if !errors.As(err, &partly) || !slices.Contains(partly.Left, "services") {
		t.Fatalf("Remove = %v, want a RemoveError with the services left", err)
	}
	if _, err := s.GetApp(context.Background(), "shop"); err != nil {
		t.Errorf("the record went: %v", err)
	}
}

// A unit stuck terminating does not hold remove (and the lock) forever: the
// wait is bounded, the records go, and the error names the unit left
// terminating.
func TestRemoveStuckUnitIsBounded(t *testing.T) {
	c, s := removeFixture(t)
	terminatingPods(c) // and nobody ever finishes deleting it
	err := Remove(context.Background(), deps(c), "shop", RemoveOptions{StopTimeout: 100 * time.Millisecond})
	var stuck *StuckUnitsError
	if !errors.As(err, &stuck) || !slices.Equal(stuck.Units, []string{"shop-web-1"}) {
		t.Fatalf("Remove = %v, want the stuck unit shop-web-1", err)
	}
	if !strings.Contains(err.Error(), "shop-web-1") || !strings.Contains(err.Error(), "leaves it terminating") {
		t.Errorf("error %q", err)
	}
	if _, err := s.GetApp(context.Background(), "shop"); !app.IsNotFound(err) {
		t.Errorf("GetApp after Remove = %v, want removed", err)
	}
	if !names(t, c)["pod/blog-web-1"] {
		t.Error("another app's unit went")
	}
	assertNoLease(t, c)
}

// A user whose Role predates jobs may not list CronJobs or Jobs: remove
// goes on (such a user cannot have made any) instead of stopping after
// the routes went, with the app still running.
func TestRemoveWithARoleThatPredatesJobs(t *testing.T) {
	c, s := removeFixture(t)
	for _, r := range []string{"cronjobs", "jobs"} {
		c.PrependReactor("list", r, func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("no batch verbs"))
		})
	}
	if err := Remove(context.Background(), deps(c), "shop", RemoveOptions{}); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := s.GetApp(context.Background(), "shop"); !app.IsNotFound(err) {
		t.Errorf("GetApp after Remove = %v", err)
	}
}
