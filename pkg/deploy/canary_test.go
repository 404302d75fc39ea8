package deploy

import (
	"context"
	"errors"
	"testing"

	"tug.dev/tug/pkg/app"
)

// A caller whose Deps cannot settle a canary (no SideBySide) is refused
// under the lock, before anything is written, rather than left to change
// an app whose record, weights and units it does not understand.
func TestNoSideBySideRefusesAnAppWithACanary(t *testing.T) {
	c, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Release: 1, Canary: &app.Canary{Release: 2, Phase: app.CanaryRunning, Weight: 25}})
	_, err := Begin(context.Background(), deps(c), "shop", nil)
	var refused *NoSideBySideError
	if !errors.As(err, &refused) || refused.App != "shop" {
		t.Fatalf("Begin = %v; want a *NoSideBySideError", err)
	}
	if a := getApp(t, s, "shop"); a.Canary == nil || a.Canary.Weight != 25 {
		t.Errorf("the record changed: %+v", a.Canary)
	}
	assertNoLease(t, c)
}
