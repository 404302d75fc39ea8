package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/kube/kubetest"
)

func TestDeployChange(t *testing.T) {
	procs := map[string]string{"web": "./server"}
	base := &app.Release{Image: "old", Processes: map[string]string{"web": "./old", "worker": "./w"}}
	cfg := app.ConfigMap{"A": "1"}
	r, next, err := DeployChange("shop:2", procs, "ship it")(&app.App{Name: "shop"}, base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Image != "shop:2" || r.Kind != app.KindDeploy || r.Message != "ship it" || !maps.Equal(r.Processes, procs) {
		t.Errorf("release = %+v", r)
	}
	if !maps.Equal(next, cfg) {
		t.Errorf("config = %v, want it carried over", next)
	}
	// the change owns copies: later edits by the caller or by Roll do not leak
	procs["web"] = "changed"
	next["A"] = "changed"
	if r.Processes["web"] != "./server" || cfg["A"] != "1" {
		t.Error("DeployChange shares maps with its inputs")
	}
}

func TestEnvChange(t *testing.T) {
	a := &app.App{Name: "shop"}
	base := &app.Release{Image: "shop:3", Processes: map[string]string{"web": "./server"}}
	cfg := app.ConfigMap{"A": "1", "B": "2"}
	tests := []struct {
		name    string
		base    *app.Release
		cfg     app.ConfigMap
		set     app.ConfigMap
		unset   []string
		message string
		want    app.ConfigMap
		wantMsg string
		wantErr string
		noDiff  bool
	}{
		{name: "add", base: base, cfg: cfg, set: app.ConfigMap{"C": "3"},
			want: app.ConfigMap{"A": "1", "B": "2", "C": "3"}, wantMsg: "env: +C"},
		{name: "change and unset", base: base, cfg: cfg, set: app.ConfigMap{"A": "9"}, unset: []string{"B"},
			want: app.ConfigMap{"A": "9"}, wantMsg: "env: ~A, -B"},
		{name: "own message", base: base, cfg: cfg, set: app.ConfigMap{"C": "3"}, message: "rotate",
			want: app.ConfigMap{"A": "1", "B": "2", "C": "3"}, wantMsg: "rotate"},
		{name: "unset then set again", base: base, cfg: cfg, set: app.ConfigMap{"B": "new"}, unset: []string{"B"},
			want: app.ConfigMap{"A": "1", "B": "new"}, wantMsg: "env: ~B"},
		{name: "before any release", base: nil, cfg: nil, set: app.ConfigMap{"A": "1"},
			want: app.ConfigMap{"A": "1"}, wantMsg: "env: +A"},
		{name: "unset unknown", base: base, cfg: cfg, unset: []string{"NOPE"},
			wantErr: `config "NOPE" is not set on app "shop"; see 'tug env get shop'`},
		{name: "same value is no change", base: base, cfg: cfg, set: app.ConfigMap{"A": "1"}, noDiff: true},
		{name: "nothing at all", base: nil, cfg: nil, noDiff: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.cfg)
			r, next, err := EnvChange(tt.set, tt.unset, tt.message)(a, tt.base, tt.cfg)
			if !maps.Equal(tt.cfg, before) {
				t.Errorf("EnvChange modified the base config: %v", tt.cfg)
			}
			switch {
			case tt.noDiff:
				if !errors.Is(err, ErrNoChange) {
					t.Fatalf("err = %v, want ErrNoChange", err)
				}
				return
			case tt.wantErr != "":
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !maps.Equal(next, tt.want) {
				t.Errorf("config = %v, want %v", next, tt.want)
			}
			if r.Message != tt.wantMsg || r.Kind != app.KindEnv {
				t.Errorf("message %q kind %q, want %q env", r.Message, r.Kind, tt.wantMsg)
			}
			for _, v := range next {
				if strings.Contains(r.Message, v) && v != "" {
					t.Errorf("message %q shows value %q", r.Message, v)
				}
			}
			if tt.base != nil {
				if r.Image != tt.base.Image || !maps.Equal(r.Processes, tt.base.Processes) {
					t.Errorf("release %+v does not keep the base's image and processes", r)
				}
				r.Processes["web"] = "changed"
				if tt.base.Processes["web"] != "./server" {
					t.Error("EnvChange shares the base's process map")
				}
			} else if r.Image != "" || r.Processes == nil || len(r.Processes) != 0 {
				t.Errorf("release before any deploy = %+v, want no image and no processes", r)
			}
		})
	}
}

func TestDescribeCommand(t *testing.T) {
	if got := describeCommand(""); got != "(image default)" {
		t.Errorf("describeCommand(\"\") = %q", got)
	}
	if got := describeCommand(`./x "y"`); got != `"./x \"y\""` {
		t.Errorf("describeCommand = %q", got)
	}
}

// rollbackFixture: v1 superseded, v2 staged config only (no image), v3
// superseded, v4 failed, v5 deployed (current).
func rollbackFixture(t *testing.T) (*app.Store, *app.App) {
	_, s := newFake()
	a := &app.App{Name: "shop", Release: 5, LastRelease: 5, Processes: map[string]app.Process{"web": {Replicas: 2}}}
	seedApp(t, s, a)
	seedRelease(t, s, &app.Release{Version: 1, Image: "shop:1", Status: app.StatusSuperseded, Processes: map[string]string{"web": "./v1"}}, app.ConfigMap{"V": "1"})
	seedRelease(t, s, &app.Release{Version: 2, Status: app.StatusStaged, Kind: app.KindEnv}, app.ConfigMap{"V": "2"})
	seedRelease(t, s, &app.Release{Version: 3, Image: "shop:3", Status: app.StatusSuperseded, Processes: map[string]string{"web": "./v3", "worker": "./w"}}, app.ConfigMap{"V": "3"})
	seedRelease(t, s, &app.Release{Version: 4, Image: "shop:4", Status: app.StatusFailed, Processes: map[string]string{"web": "./v4"}}, app.ConfigMap{"V": "4"})
	seedRelease(t, s, &app.Release{Version: 5, Image: "shop:5", Status: app.StatusDeployed, Processes: map[string]string{"web": "./v5"}}, app.ConfigMap{"V": "5"})
	return s, getApp(t, s, "shop")
}

func TestRollbackChange(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		target    int
		wantV     int
		wantImage string
		wantErr   string
	}{
		{name: "default: newest superseded below current", target: 0, wantV: 3, wantImage: "shop:3"},
		{name: "explicit", target: 1, wantV: 1, wantImage: "shop:1"},
		{name: "current", target: 5, wantErr: `v5 is already the deployed release of app "shop"`},
		{name: "no image", target: 2, wantErr: `release v2 of app "shop" has no image (it only staged config); choose another`},
		{name: "missing", target: 42, wantErr: `release v42 of app "shop" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, a := rollbackFixture(t)
			r, cfg, err := RollbackChange(ctx, s, tt.target)(a, nil, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Kind != app.KindRollback || r.RollbackOf != tt.wantV || r.Image != tt.wantImage {
				t.Errorf("release = %+v, want a rollback of v%d", r, tt.wantV)
			}
			if want := "rollback to v" + strconv.Itoa(tt.wantV); r.Message != want {
				t.Errorf("message = %q, want %q", r.Message, want)
			}
			if cfg["V"] != strconv.Itoa(tt.wantV) {
				t.Errorf("config = %v, want v%d's", cfg, tt.wantV)
			}
		})
	}
}

func TestRollbackChangeDefaultSkipsReleasesWithoutImage(t *testing.T) {
	_, s := newFake()
	seedApp(t, s, &app.App{Name: "shop", Release: 3, LastRelease: 3})
	seedRelease(t, s, &app.Release{Version: 1, Image: "shop:1", Status: app.StatusSuperseded}, nil)
	seedRelease(t, s, &app.Release{Version: 2, Status: app.StatusSuperseded}, nil) // no image
	seedRelease(t, s, &app.Release{Version: 3, Image: "shop:3", Status: app.StatusDeployed}, nil)
	r, _, err := RollbackChange(context.Background(), s, 0)(getApp(t, s, "shop"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.RollbackOf != 1 {
		t.Errorf("rolled back to v%d, want v1 (v2 has no image)", r.RollbackOf)
	}
}

func TestRollbackChangeNothingToRollBackTo(t *testing.T) {
	ctx := context.Background()
	t.Run("never deployed", func(t *testing.T) {
		_, s := newFake()
		seedApp(t, s, &app.App{Name: "shop"})
		_, _, err := RollbackChange(ctx, s, 0)(getApp(t, s, "shop"), nil, nil)
		if err == nil || err.Error() != `app "shop" has no deployed release to roll back from` {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("only failed and newer releases", func(t *testing.T) {
		_, s := newFake()
		seedApp(t, s, &app.App{Name: "shop", Release: 2, LastRelease: 3})
		seedRelease(t, s, &app.Release{Version: 1, Image: "shop:1", Status: app.StatusFailed}, nil)
		seedRelease(t, s, &app.Release{Version: 2, Image: "shop:2", Status: app.StatusDeployed}, nil)
		seedRelease(t, s, &app.Release{Version: 3, Image: "shop:3", Status: app.StatusSuperseded}, nil)
		_, _, err := RollbackChange(ctx, s, 0)(getApp(t, s, "shop"), nil, nil)
		if err == nil || !strings.Contains(err.Error(), `app "shop" has no earlier good release to roll back to; see 'tug release list shop'`) {
			t.Fatalf("err = %v", err)
		}
	})
}

// A deploy that names one process type keeps the others; one that removes
// a type with units is refused unless told it may, and then says what it
// removed.
func TestDeployProcessesCarriesOverAndGuardsRemovals(t *testing.T) {
	c, s := newFake()
	ctx := context.Background()
	seedApp(t, s, &app.App{Name: "shop"})
	if _, err := Roll(ctx, deps(c), "shop", DeployProcesses("shop:1", app.ProcessChange{}, nil, false, ""), Options{NoWait: true}); err != nil {
		t.Fatal(err)
	}
	worker := app.ProcessChange{Set: map[string]string{"worker": "sleep 3600"}, From: "--process"}
	res, err := Roll(ctx, deps(c), "shop", DeployProcesses("shop:2", worker, nil, false, ""), Options{NoWait: true})
	if err != nil || len(res.Processes) != 2 || len(res.RemovedProcesses) != 0 {
		t.Fatalf("--process worker: %+v, %v; want web and worker", res, err)
	}
	if r, _ := getRelease(t, s, 2); r.Processes["web"] != "" || r.Processes["worker"] != "sleep 3600" {
		t.Errorf("v2 processes %q", r.Processes)
	}
	// a plain deploy keeps both
	if res, err = Roll(ctx, deps(c), "shop", DeployProcesses("shop:3", app.ProcessChange{}, nil, false, ""), Options{NoWait: true}); err != nil || len(res.Processes) != 2 {
		t.Fatalf("plain deploy: %+v, %v", res, err)
	}
	// a Procfile without worker removes it only when allowed
	procfile := app.ProcessChange{Set: map[string]string{"web": "./serve"}, Complete: true, From: "Procfile ./Procfile"}
	before := kubetest.Objects(t, c, ns)
	_, err = Roll(ctx, deps(c), "shop", DeployProcesses("shop:4", procfile, nil, false, ""), Options{NoWait: true})
	var refused *RemovalError
	if !errors.As(err, &refused) || refused.ExitCode() != 2 || !strings.Contains(err.Error(), "remove process worker") {
		t.Fatalf("removal without consent: %v", err)
	}
	if diff := kubetest.Diff(before, kubetest.Objects(t, c, ns)); len(diff) > 0 {
		t.Errorf("a refused deploy changed %v", diff)
	}
	res, err = Roll(ctx, deps(c), "shop", DeployProcesses("shop:4", procfile, []string{"worker"}, false, ""), Options{NoWait: true})
	if err != nil || !slices.Equal(res.RemovedProcesses, []string{"worker"}) || len(res.Processes) != 1 {
		t.Fatalf("allowed removal: %+v, %v", res, err)
	}
	if _, ok := listDeployments(t, c)["shop-worker"]; ok {
		t.Error("worker's Deployment is still there")
	}
}

// After a rollout cut short (v6 interrupted), the units run a mix of v5
// and v6: the deployed v5 is what ran before, and both 'rollback v5' (the
// command the interruption prints) and a plain rollback restore it.
func TestRollbackChangeAfterAnInterruptedRollout(t *testing.T) {
	ctx := context.Background()
	for _, status := range []app.Status{app.StatusInterrupted, app.StatusPending} {
		for _, target := range []int{5, 0} {
			t.Run(fmt.Sprintf("%s/v%d", status, target), func(t *testing.T) {
				s, _ := rollbackFixture(t)
				seedRelease(t, s, &app.Release{Version: 6, Image: "shop:6", Status: status, Processes: map[string]string{"web": "./v6"}}, app.ConfigMap{"V": "6"})
				if _, err := s.UpdateApp(ctx, "shop", func(x *app.App) error { x.LastRelease = 6; return nil }); err != nil {
					t.Fatal(err)
				}
				r, cfg, err := RollbackChange(ctx, s, target)(getApp(t, s, "shop"), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if r.RollbackOf != 5 || r.Image != "shop:5" || cfg["V"] != "5" {
					t.Errorf("release = %+v, config %v: want a rollback to v5", r, cfg)
				}
			})
		}
	}
}

// A rollout cut short is still seen behind staged config made since (env
// set --no-restart rolls nothing), and not behind a later failed rollout.
func TestCutShortLooksPastStagedReleases(t *testing.T) {
	rels := []*app.Release{{Version: 7, Status: app.StatusStaged}, {Version: 6, Status: app.StatusInterrupted}, {Version: 5, Status: app.StatusDeployed}}
	if !cutShort(rels, 5) {
		t.Error("an interrupted v6 behind staged v7 was not seen")
	}
	rels = []*app.Release{{Version: 7, Status: app.StatusFailed}, {Version: 6, Status: app.StatusInterrupted}, {Version: 5, Status: app.StatusDeployed}}
	if cutShort(rels, 5) {
		t.Error("a failed v7 after the interrupted v6 is what the user last did")
	}
}
