package deploy

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"tug.dev/tug/pkg/app"
)

func TestWithTimeout(t *testing.T) {
	tests := []struct {
		name  string
		given time.Duration
		rel   *app.Release
		want  time.Duration
	}{
		{"default", 0, &app.Release{}, 10 * time.Minute},
		{"no release", 0, nil, 10 * time.Minute},
		{"the release's setting", 0, &app.Release{Rollout: app.Rollout{DeployTimeout: 20}}, 20 * time.Second},
		{"the flag wins", 3 * time.Minute, &app.Release{Rollout: app.Rollout{DeployTimeout: 20}}, 3 * time.Minute},
	}
	for _, tt := range tests {
		o := Options{Timeout: tt.given}
		withTimeout(&o, tt.rel)
		if o.Timeout != tt.want {
			t.Errorf("%s: timeout %s, want %s", tt.name, o.Timeout, tt.want)
		}
	}
}

// The history setting travels in the release: after a settings release
// with --history 2 only two records remain, and a rollback to a release
// from before it brings back its settings (and the default history).
func TestRollHistorySetting(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	roll := func(ch Change) {
		t.Helper()
		if _, err := Roll(ctx, deps(c), "shop", ch, Options{NoWait: true}); err != nil {
			t.Fatal(err)
		}
	}
	versions := func() []int {
		rels, err := s.ListReleases(ctx, "shop")
		if err != nil {
			t.Fatal(err)
		}
		var vs []int
		for _, r := range rels {
			vs = append(vs, r.Version)
		}
		return vs
	}
	for i := 0; i < 3; i++ {
		roll(DeployChange("shop:1", map[string]string{"web": ""}, ""))
	}
	set := app.SetRolloutOptions{App: "shop", History: "2", MaxSurge: "0", MaxUnavailable: "1"}
	roll(SettingsChange(app.KindSettings, "settings", set.Apply))
	if got := versions(); !slices.Equal(got, []int{4, 3}) {
		t.Fatalf("after --history 2: releases %v, want [4 3]", got)
	}
	ru := listDeployments(t, c)["shop-web"].Spec.Strategy.RollingUpdate
	if ru.MaxSurge.IntValue() != 0 || ru.MaxUnavailable.IntValue() != 1 {
		t.Errorf("strategy after the settings release: %+v", ru)
	}
	roll(DeployChange("shop:2", map[string]string{"web": ""}, ""))
	roll(DeployChange("shop:3", map[string]string{"web": ""}, ""))
	if got := versions(); !slices.Equal(got, []int{6, 5}) {
		t.Fatalf("after two more deploys: releases %v, want [6 5]", got)
	}
	if r, _ := getRelease(t, s, 6); r.Rollout.History != 2 || r.Rollout.MaxSurge != "0" {
		t.Errorf("a deploy dropped the settings: %+v", r.Rollout)
	}
	// rollback to v5 keeps its settings (the same); a deploy whose settings
	// go back to the defaults keeps up to 10 again
	roll(RollbackChange(ctx, s, 5))
	if r, _ := getRelease(t, s, 7); r.Rollout.History != 2 || r.RollbackOf != 5 {
		t.Errorf("rollback release: %+v", r)
	}
	roll(SettingsChange(app.KindSettings, "unset", app.UnsetRolloutOptions{App: "shop", History: true, MaxSurge: true, MaxUnavailable: true}.Apply))
	roll(DeployChange("shop:4", map[string]string{"web": ""}, ""))
	if got := versions(); !slices.Equal(got, []int{9, 8, 7, 6}) {
		t.Errorf("after history back to its default: releases %v, want [9 8 7 6] (nothing more pruned)", got)
	}
	ru = listDeployments(t, c)["shop-web"].Spec.Strategy.RollingUpdate
	if ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("strategy after unset: %+v", ru)
	}
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
