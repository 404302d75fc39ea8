package deploy

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tug.dev/tug/pkg/app"
)

// Suspending a job records it and applies its CronJob again (through the
// table's CronJob kind) with no release; suspending it again changes
// nothing, and a job the release lacks is refused.
func TestSetJobSuspendedAppliesTheCronJob(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Release: 1, LastRelease: 1})
	seedRelease(t, s, &app.Release{App: "shop", Version: 1, Image: "shop:1", Processes: map[string]string{"web": "./w"},
		Jobs: map[string]app.Job{"report": {Command: "./report", Schedule: "@daily"}}}, app.ConfigMap{})
	ctx := context.Background()
	if err := SetJobSuspended(ctx, deps(c), "shop", "report", true); err != nil {
		t.Fatal(err)
	}
	cj, err := c.BatchV1().CronJobs(ns).Get(ctx, "shop-job-report", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cj.Spec.Suspend == nil || !*cj.Spec.Suspend {
		t.Errorf("suspend = %v, want true", cj.Spec.Suspend)
	}
	if err := SetJobSuspended(ctx, deps(c), "shop", "report", true); !errors.Is(err, ErrNoChange) {
		t.Errorf("again: %v, want ErrNoChange", err)
	}
	if err := SetJobSuspended(ctx, deps(c), "shop", "nightly", true); err == nil {
		t.Error("a job the release lacks: no error")
	}
	if getApp(t, s, "shop").Release != 1 {
		t.Error("a release was made")
	}
	assertNoLease(t, c)
}
