package deploy

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube"
)

// The fake clientset has no reaction for DELETE of a collection (it answers
// nil and deletes nothing); handleDeleteCollection gives it one, by label
// selector. Resources in keep are left alone, as a real server's graceful
// deletion leaves pods for a while.
func handleDeleteCollection(c *fake.Clientset, keep ...string) {
	kinds := map[string]schema.GroupVersionKind{
		"deployments":              appsv1.SchemeGroupVersion.WithKind("Deployment"),
		"pods":                     corev1.SchemeGroupVersion.WithKind("Pod"),
		"secrets":                  corev1.SchemeGroupVersion.WithKind("Secret"),
		"configmaps":               corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		"horizontalpodautoscalers": autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"),
	}
	c.PrependReactor("delete-collection", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		dc := a.(k8stesting.DeleteCollectionActionImpl)
		gvr := dc.GetResource()
		for _, k := range keep {
			if k == gvr.Resource {
				return true, nil, nil
			}
		}
		sel, err := labels.Parse(dc.ListOptions.LabelSelector)
		if err != nil {
			return true, nil, err
		}
		kind, known := kinds[gvr.Resource]
		if !known {
			return false, nil, nil // left to the fake, which deletes nothing
		}
		list, err := c.Tracker().List(gvr, kind, dc.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		items, err := metaItems(list)
		if err != nil {
			return true, nil, err
		}
		for _, m := range items {
			if sel.Matches(labels.Set(m.GetLabels())) {
				if err := c.Tracker().Delete(gvr, dc.GetNamespace(), m.GetName()); err != nil {
					return true, nil, err
				}
			}
		}
		return true, nil, nil
	})
}

func metaItems(list runtime.Object) ([]metav1.Object, error) {
	var out []metav1.Object
	switch l := list.(type) {
	case *appsv1.DeploymentList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.PodList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.SecretList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *autoscalingv2.HorizontalPodAutoscalerList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, errors.New("unexpected list type")
	}
	return out, nil
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
	handleDeleteCollection(c)
	if err := Remove(context.Background(), deps(c), "shop"); err != nil {
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
	handleDeleteCollection(c, "pods")
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
	go func() { errc <- Remove(context.Background(), d, "shop") }()

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
	if err := c.CoreV1().Pods(ns).Delete(context.Background(), "shop-web-1", metav1.DeleteOptions{}); err != nil {
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
		if err := Remove(context.Background(), deps(c), "shop"); !app.IsNotFound(err) {
			t.Fatalf("Remove = %v, want not found", err)
		}
	})
	t.Run("locked", func(t *testing.T) {
		c, _ := removeFixture(t)
		handleDeleteCollection(c)
		if _, err := c.CoordinationV1().Leases(ns).Create(context.Background(), lease("bob", time.Now()), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var locked *LockedError
		if err := Remove(context.Background(), deps(c), "shop"); !errors.As(err, &locked) {
			t.Fatalf("Remove = %v, want locked", err)
		}
		if !names(t, c)["deployment/shop-web"] {
			t.Error("a locked Remove deleted something")
		}
	})
}
