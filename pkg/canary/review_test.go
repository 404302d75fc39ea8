package canary

import (
	"context"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
)

// Failed builds while a canary runs never prune the canary's release (its
// record and the config its units read through envFrom), nor the release
// it would go back to (issue 34, item 1). Before, with the default
// history of 10, nine failed source deploys deleted v2's Secret and the
// promote failed with "release v2 not found".
func TestFailedBuildsDuringACanaryKeepItsRelease(t *testing.T) {
	s, d, _, _ := deployedShop(t)
	if _, err := startV2(d, deploy.CanaryOptions{Strategy: app.StrategyCanary, Weight: 25}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 12 {
		if _, err := deploy.RecordFailed(ctx, d, "shop", "new header", "build failed: exit 3"); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int{1, 2} {
		if _, _, err := s.GetRelease(ctx, "shop", v); err != nil {
			t.Fatalf("v%d after failed builds during the canary: %v", v, err)
		}
	}
	rels, err := s.ListReleases(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 10 {
		t.Errorf("%d releases kept, want the history's 10", len(rels))
	}
	if res, err := Promote(ctx, d, "shop"); err != nil || res.Release != 2 {
		t.Fatalf("promote after failed builds = %v, %v; want v2 deployed", res, err)
	}
}

// The pruning rule itself: a canary's release and every release a unit
// runs are kept whatever the history limit.
func TestReleasesToPruneKeepsWhatUnitsRun(t *testing.T) {
	rels := []*app.Release{
		{Version: 6, Status: app.StatusFailed}, {Version: 5, Status: app.StatusFailed},
		{Version: 4, Status: app.StatusFailed}, {Version: 3, Status: app.StatusFailed, Image: "x"},
		{Version: 2, Status: app.StatusCanary, Image: "x"}, {Version: 1, Status: app.StatusDeployed, Image: "x"},
	}
	got := app.ReleasesToPrune(rels, 4, 1, 3)
	want := []int{5, 4}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ReleasesToPrune = %v, want %v (v1 runs, v2 is the canary, v3's units run, v6 the newest)", got, want)
	}
}
