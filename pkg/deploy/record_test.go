package deploy

import (
	"context"
	"testing"

	"tug.dev/tug/pkg/app"
)

// A build that failed shows in the history as a failed release with its
// reason; what runs, and the release the next change starts from, stay.
func TestRecordFailedKeepsTheCurrentRelease(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployChange("shop:1", map[string]string{"web": ""}, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}

	rel, err := RecordFailed(ctx, deps(c), "shop", "new header", "build failed: build step exited with code 3")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != 2 || rel.Status != app.StatusFailed || rel.Image != "" || rel.FailReason != "build failed: build step exited with code 3" || rel.Message != "new header" {
		t.Errorf("release = %+v", rel)
	}
	a, err := s.GetApp(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if a.Release != 1 || a.LastRelease != 2 {
		t.Errorf("app release %d, last %d; want 1 and 2", a.Release, a.LastRelease)
	}
	after := listDeployments(t, c)["shop-web"]
	if img := after.Spec.Template.Spec.Containers[0].Image; img != "shop:1" || after.Spec.Template.Labels["tug.dev/release"] != "1" {
		t.Errorf("recording a failed build changed the running Deployment: image %s, labels %v", img, after.Spec.Template.Labels)
	}
	base, _, err := BaseRelease(ctx, s, a)
	if err != nil || base == nil || base.Version != 1 {
		t.Errorf("base release after a failed build = %+v, %v; want v1", base, err)
	}
	assertNoLease(t, c)
}
