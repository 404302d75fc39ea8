package app

import (
	"slices"
	"strings"
	"testing"

	"tug.dev/tug/pkg/inputerr"
)

func TestParsePace(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "0", want: "0"},
		{in: "3", want: "3"},
		{in: "025%", want: "25%"},
		{in: "0%", want: "0%"},
		{in: "100%", want: "100%"},
		{in: "10000", want: "10000"},
		{in: "101%", err: "a percentage must be from 0% to 100%"},
		{in: "10001", err: "a number of units must be from 0 to 10000"},
		{in: "99999999999", err: "a number of units must be from 0 to 10000"},
		{in: "-1", err: "must not be negative"},
		{in: "-5%", err: "must not be negative"},
		{in: "+1", err: "want a number of units"},
		{in: "%", err: "want a percentage such as 25%"},
		{in: "1.5", err: "want a number of units"},
		{in: "25 %", err: "want a percentage"},
		{in: "abc", err: "want a number of units"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePace("--max-surge", tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !inputerr.Is(err) {
					t.Fatalf("ParsePace(%q) = %q, %v; want usage error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParsePace(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestSetRolloutOptions(t *testing.T) {
	tests := []struct {
		name string
		o    SetRolloutOptions
		base Rollout
		want Rollout
		err  string // from Validate, or from Apply when applyErr
		// applyErr: Validate passes, Apply (against base) refuses
		applyErr bool
	}{
		{name: "all", o: SetRolloutOptions{MaxSurge: "50%", MaxUnavailable: "0", GracePeriod: "60s", History: "20", DeployTimeout: "15m"},
			want: Rollout{MaxSurge: "50%", MaxUnavailable: "0", GracePeriod: 60, History: 20, DeployTimeout: 900}},
		{name: "merges", o: SetRolloutOptions{GracePeriod: "5s"}, base: Rollout{MaxSurge: "0", MaxUnavailable: "1", History: 3},
			want: Rollout{MaxSurge: "0", MaxUnavailable: "1", History: 3, GracePeriod: 5}},
		{name: "surge 0 with unavailable 1", o: SetRolloutOptions{MaxSurge: "0", MaxUnavailable: "1"}, want: Rollout{MaxSurge: "0", MaxUnavailable: "1"}},
		{name: "bounds", o: SetRolloutOptions{GracePeriod: "1h", History: "200", DeployTimeout: "10s"}, want: Rollout{GracePeriod: 3600, History: 200, DeployTimeout: 10}},

		{name: "nothing", o: SetRolloutOptions{}, err: "nothing to set"},
		{name: "bad app", o: SetRolloutOptions{App: "Bad_Name", History: "3"}, err: "invalid app name"},
		{name: "both zero", o: SetRolloutOptions{MaxSurge: "0", MaxUnavailable: "0%"}, err: "cannot both be 0"},
		{name: "surge 0 against the default unavailable", o: SetRolloutOptions{MaxSurge: "0%"}, err: "cannot both be 0", applyErr: true},
		{name: "unavailable 0 against a surge of 0", o: SetRolloutOptions{MaxUnavailable: "0"}, base: Rollout{MaxSurge: "0", MaxUnavailable: "2"}, err: "cannot both be 0", applyErr: true},
		{name: "negative surge", o: SetRolloutOptions{MaxSurge: "-1"}, err: "must not be negative"},
		{name: "bad percent", o: SetRolloutOptions{MaxUnavailable: "150%"}, err: "from 0% to 100%"},
		{name: "history 0", o: SetRolloutOptions{History: "0"}, err: "--history must be from 1 to 200, not 0"},
		{name: "history huge", o: SetRolloutOptions{History: "201"}, err: "--history must be from 1 to 200, not 201"},
		{name: "history overflow", o: SetRolloutOptions{History: "99999999999999"}, err: "--history must be from 1 to 200"},
		{name: "history word", o: SetRolloutOptions{History: "many"}, err: "invalid --history"},
		{name: "grace unparsable", o: SetRolloutOptions{GracePeriod: "60"}, err: "invalid --grace-period \"60\": want a duration"},
		{name: "grace zero", o: SetRolloutOptions{GracePeriod: "0s"}, err: "must be more than zero"},
		{name: "grace fraction", o: SetRolloutOptions{GracePeriod: "1500ms"}, err: "whole seconds"},
		{name: "grace too long", o: SetRolloutOptions{GracePeriod: "2h"}, err: "--grace-period must be from 5s to 1h, not 2h"},
		{name: "timeout too short", o: SetRolloutOptions{DeployTimeout: "5s"}, err: "--deploy-timeout must be from 10s to 24h, not 5s"},
		{name: "timeout too long", o: SetRolloutOptions{DeployTimeout: "25h"}, err: "--deploy-timeout must be from"},
		{name: "timeout negative", o: SetRolloutOptions{DeployTimeout: "-1m"}, err: "must be more than zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.App == "" {
				tt.o.App = "shop"
			}
			err := tt.o.Validate()
			if tt.err != "" && !tt.applyErr {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !inputerr.Is(err) {
					t.Fatalf("Validate = %v; want usage error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			r := &Release{Rollout: tt.base}
			err = tt.o.Apply(&App{Name: "shop"}, r)
			if tt.applyErr {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !inputerr.Is(err) {
					t.Fatalf("Apply = %v; want usage error containing %q", err, tt.err)
				}
				if r.Rollout != tt.base {
					t.Errorf("a refused Apply changed the release: %+v", r.Rollout)
				}
				return
			}
			if err != nil || r.Rollout != tt.want {
				t.Errorf("Apply = %v, settings %+v; want %+v", err, r.Rollout, tt.want)
			}
		})
	}
}

func TestUnsetRolloutOptions(t *testing.T) {
	base := Rollout{MaxSurge: "0", MaxUnavailable: "1", GracePeriod: 5, History: 3, DeployTimeout: 20}
	r := &Release{Rollout: base}
	if err := (UnsetRolloutOptions{App: "shop", GracePeriod: true, History: true}).Apply(nil, r); err != nil {
		t.Fatal(err)
	}
	if want := (Rollout{MaxSurge: "0", MaxUnavailable: "1", DeployTimeout: 20}); r.Rollout != want {
		t.Errorf("after unset: %+v, want %+v", r.Rollout, want)
	}
	// unavailable back to its default 0 with a surge of 0 cannot roll
	err := (UnsetRolloutOptions{App: "shop", MaxUnavailable: true}).Apply(nil, r)
	if err == nil || !inputerr.Is(err) || r.Rollout.MaxUnavailable != "1" {
		t.Errorf("unset of unavailable under surge 0: %v, %+v", err, r.Rollout)
	}
	if err := (UnsetRolloutOptions{App: "shop"}).Validate(); err == nil || !inputerr.Is(err) {
		t.Errorf("unset of nothing: %v", err)
	}
}

func TestRolloutView(t *testing.T) {
	v := (Rollout{MaxSurge: "0", MaxUnavailable: "1", GracePeriod: 5}).View()
	if v.MaxSurge != "0" || v.MaxUnavailable != "1" || v.GracePeriod != "5s" || v.History != DefaultHistoryMax || v.DeployTimeout != "10m" || v.DeployTimeoutSeconds != 600 {
		t.Errorf("view: %+v", v)
	}
	if !slices.Equal(v.Defaults, []string{"history", "deploy-timeout"}) {
		t.Errorf("defaults: %v", v.Defaults)
	}
	if got, want := v.String(), "max-surge 0, max-unavailable 1, grace-period 5s, history 10, deploy-timeout 10m"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if d := (Rollout{}).DeployTimeoutDuration().String(); d != "10m0s" {
		t.Errorf("default deploy timeout %s", d)
	}
}

func TestReleasesToPrune(t *testing.T) {
	rel := func(v int, st Status) *Release { return &Release{Version: v, Status: st} }
	img := func(r *Release) *Release { r.Image = "shop:1"; return r }
	tests := []struct {
		name          string
		rels          []*Release // newest first
		keep, current int
		want          []int
	}{
		{"newest kept", []*Release{rel(5, StatusDeployed), rel(4, StatusSuperseded), rel(3, StatusSuperseded), rel(2, StatusSuperseded), rel(1, StatusSuperseded)}, 3, 5, []int{2, 1}},
		{"nothing beyond keep", []*Release{rel(2, StatusDeployed), rel(1, StatusSuperseded)}, 3, 2, nil},
		{"current older than failures takes a place", []*Release{rel(6, StatusFailed), rel(5, StatusFailed), rel(4, StatusFailed), rel(3, StatusDeployed), rel(2, StatusSuperseded)}, 3, 3, []int{4, 2}},
		{"pending never pruned", []*Release{rel(4, StatusPending), rel(3, StatusDeployed), rel(2, StatusSuperseded), rel(1, StatusSuperseded)}, 1, 3, []int{2, 1}},
		{"staged newer than current kept", []*Release{rel(4, StatusStaged), rel(3, StatusDeployed), rel(2, StatusSuperseded)}, 1, 3, []int{2}},
		{"staged older than current is history", []*Release{rel(4, StatusDeployed), rel(3, StatusStaged), rel(2, StatusSuperseded)}, 2, 4, []int{2}},
		{"history 1 keeps only current", []*Release{rel(3, StatusFailed), rel(2, StatusDeployed), rel(1, StatusSuperseded)}, 1, 2, []int{3, 1}},
		{"keep zero keeps current", []*Release{rel(2, StatusDeployed), rel(1, StatusSuperseded)}, 0, 2, []int{1}},
		// the release a rollback goes to outlives failures newer than it
		{"rollback target kept over a failure", []*Release{img(rel(8, StatusDeployed)), img(rel(7, StatusFailed)), img(rel(6, StatusSuperseded)), img(rel(5, StatusSuperseded))}, 2, 8, []int{7, 5}},
		{"history 1 asks for no rollback", []*Release{img(rel(3, StatusFailed)), img(rel(2, StatusDeployed)), img(rel(1, StatusSuperseded))}, 1, 2, []int{3, 1}},
		{"rollback target kept at history 2", []*Release{img(rel(4, StatusFailed)), img(rel(3, StatusFailed)), img(rel(2, StatusDeployed)), img(rel(1, StatusSuperseded))}, 2, 2, []int{4, 3}},
		{"a staged release is no rollback target", []*Release{img(rel(4, StatusDeployed)), rel(3, StatusSuperseded), img(rel(2, StatusSuperseded)), img(rel(1, StatusSuperseded))}, 2, 4, []int{3, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReleasesToPrune(tt.rels, tt.keep, tt.current); !slices.Equal(got, tt.want) {
				t.Errorf("ReleasesToPrune = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHistoryLimit(t *testing.T) {
	rels := []*Release{{Version: 3, Rollout: Rollout{History: 2}}, {Version: 2}}
	if got := HistoryLimit(&App{}, rels, 3); got != 2 {
		t.Errorf("the current release's setting: %d", got)
	}
	if got := HistoryLimit(&App{HistoryMax: 7}, rels, 2); got != 7 {
		t.Errorf("the app record's, when the release sets none: %d", got)
	}
	if got := HistoryLimit(&App{}, rels, 2); got != DefaultHistoryMax {
		t.Errorf("the default: %d", got)
	}
}

func TestNextCarriesRollout(t *testing.T) {
	base := &Release{Image: "x", Rollout: Rollout{MaxSurge: "1", History: 4}}
	if r := Next(&App{}, base, KindDeploy, ""); r.Rollout != base.Rollout {
		t.Errorf("Next dropped the rollout settings: %+v", r.Rollout)
	}
}
