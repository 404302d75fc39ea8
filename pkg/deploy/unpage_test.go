package deploy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy/deploytest"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/render"
	"tug.dev/tug/pkg/rollout"
)

// inMaintenance seeds shop in maintenance with webUnits web units whose
// Deployment reports web as its status, and the page answering.
func inMaintenance(t *testing.T, webUnits int32, web appsv1.DeploymentStatus) (*fake.Clientset, *app.Store) {
	t.Helper()
	c, s := newFake()
	ctx := context.Background()
	a := &app.App{Name: "shop", Namespace: ns, Release: 1, LastRelease: 1, Maintenance: true, Processes: map[string]app.Process{"web": {Replicas: webUnits}}}
	r := &app.Release{App: "shop", Version: 1, Image: "shop:1", Processes: map[string]string{"web": ""}, Status: app.StatusDeployed}
	seedApp(t, s, a)
	seedRelease(t, s, r, nil)
	objs := render.Release(a, r, nil)
	if _, err := c.CoreV1().Services(ns).Create(ctx, objs.Service, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for d, st := range map[*appsv1.Deployment]appsv1.DeploymentStatus{objs.Deployments[0]: web, objs.Maintenance: done(1, 0)} {
		d.Status = st
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return c, s
}

func maintenanceOff(a *app.App) error { a.Maintenance = false; return nil }

// onThePage says whether shop's Service still sends its traffic to the
// maintenance page.
func onThePage(t *testing.T, c *fake.Clientset) bool {
	t.Helper()
	svc, err := c.CoreV1().Services(ns).Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.Selector[kube.LabelKind] == render.KindMaintenance
}

func pageExists(t *testing.T, c *fake.Clientset) bool {
	t.Helper()
	_, err := c.AppsV1().Deployments(ns).Get(context.Background(), render.MaintenanceName("shop"), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// Maintenance off hands the traffic back only once the web units are
// ready: until then the Service stays on the page and the record says
// maintenance; then the Service switches and the page goes.
func TestMaintenanceOffWaitsForTheUnits(t *testing.T) {
	c, s := inMaintenance(t, 2, appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	progress := make(deploytest.ChanProgress, 16)
	d := deps(c)
	d.Progress = progress
	errc := make(chan error, 1)
	go func() {
		_, err := Configure(ctx, d, "shop", maintenanceOff, Options{Timeout: 10 * time.Second})
		errc <- err
	}()
	for waiting := false; !waiting; {
		select {
		case msg := <-progress:
			waiting = strings.Contains(msg, "waiting for the web units to be ready before leaving maintenance")
		case err := <-errc:
			t.Fatalf("maintenance off returned %v before the units were ready", err)
		case <-ctx.Done():
			t.Fatal("maintenance off never said it waits for the units")
		}
	}
	if !onThePage(t, c) || !getApp(t, s, "shop").Maintenance || !pageExists(t, c) {
		t.Fatal("while the units are not ready, the Service must stay on the page and the app in maintenance")
	}
	web, err := c.AppsV1().Deployments(ns).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web.Status = done(2, 0)
	if _, err := c.AppsV1().Deployments(ns).UpdateStatus(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("maintenance off = %v", err)
	}
	if onThePage(t, c) || getApp(t, s, "shop").Maintenance || pageExists(t, c) {
		t.Error("once the units are ready: the Service on the units, the app out of maintenance, the page gone")
	}
	assertNoLease(t, c)
}

// Units that cannot serve keep the app in maintenance: none at all, or
// units that fail (the rollout's diagnosis says why).
func TestMaintenanceOffRefusedWithoutServingUnits(t *testing.T) {
	t.Run("no web units", func(t *testing.T) {
		c, s := inMaintenance(t, 0, done(0, 0))
		_, err := Configure(context.Background(), deps(c), "shop", maintenanceOff, Options{Timeout: 5 * time.Second})
		var none *NoUnitsError
		if !errors.As(err, &none) || !strings.Contains(err.Error(), "stays in maintenance; start them first with 'tug app scale shop web=1'") {
			t.Fatalf("maintenance off = %v, want a NoUnitsError", err)
		}
		if !onThePage(t, c) || !getApp(t, s, "shop").Maintenance || !pageExists(t, c) {
			t.Error("the app must stay in maintenance, on the page")
		}
		assertNoLease(t, c)
	})
	t.Run("crashing units", func(t *testing.T) {
		c, s := inMaintenance(t, 1, appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1})
		if _, err := c.CoreV1().Pods(ns).Create(context.Background(), crashPod("1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := Configure(context.Background(), deps(c), "shop", maintenanceOff, Options{Timeout: 5 * time.Second})
		var f *rollout.Failure
		if !errors.As(err, &f) || f.Class != rollout.ClassCrash || !strings.HasPrefix(err.Error(), "the app stays in maintenance: ") {
			t.Fatalf("maintenance off = %v, want the crash, saying the app stays in maintenance", err)
		}
		if !onThePage(t, c) || !getApp(t, s, "shop").Maintenance || !pageExists(t, c) {
			t.Error("the app must stay in maintenance, on the page")
		}
		assertNoLease(t, c)
	})
}
