package move

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
)

func TestPlanPoolSet(t *testing.T) {
	cfg := &cluster.Config{Clusters: []cluster.Cluster{
		{Name: "alpha", Context: "ctx-a", Pools: []string{"pa"}},
		{Name: "beta", Context: "ctx-b", Pools: []string{"pb"}},
	}}
	alpha, beta := cfg.Clusters[0], cfg.Clusters[1]
	at := func(cl cluster.Cluster, cp cluster.Copy, others ...cluster.Searched) *cluster.Location {
		cp.Found = true
		loc := &cluster.Location{App: "shop", Found: true, Cluster: cl, Copy: cp, Clusters: []cluster.Searched{{Cluster: cl, Copy: cp}}}
		loc.Clusters = append(loc.Clusters, others...)
		return loc
	}
	copyIn := func(cl cluster.Cluster, m cluster.MoveMark) cluster.Searched {
		return cluster.Searched{Cluster: cl, Copy: cluster.Copy{Found: true, Move: m, Describe: "a move"}}
	}
	down := cluster.Searched{Cluster: cluster.Cluster{Name: "gamma", Context: "ctx-c"}, Err: errors.New("down")}
	for _, c := range []struct {
		name   string
		req    PoolSetRequest
		steps  []PoolSetStep
		usage  bool
		target string
	}{
		{name: "in place, nothing looked up", req: PoolSetRequest{Pool: "pa", Here: "ctx-a"}, steps: []PoolSetStep{StepRollout}},
		{name: "to another cluster", req: PoolSetRequest{Pool: "pb", Here: "ctx-a", Loc: at(alpha, cluster.Copy{Pool: "pa"})}, steps: []PoolSetStep{StepMove}, target: "beta"},
		{name: "a move with --no-wait", req: PoolSetRequest{Pool: "pb", Here: "ctx-a", NoWait: true}, usage: true},
		{name: "a move with --no-rollback", req: PoolSetRequest{Pool: "pb", Here: "ctx-a", NoRollback: true}, usage: true},
		{name: "in place with --no-wait", req: PoolSetRequest{Pool: "pa", Here: "ctx-a", NoWait: true}, steps: []PoolSetStep{StepRollout}},
		{name: "--adopt with nothing looked up (--context)", req: PoolSetRequest{Pool: "pb", Here: "ctx-b", Adopt: true}, usage: true},
		{name: "--adopt on an ordinary app", req: PoolSetRequest{Pool: "pa", Here: "ctx-a", Adopt: true, Loc: at(alpha, cluster.Copy{Pool: "pa"})}, usage: true},
		{name: "past the switch, same pool: finish only",
			req:   PoolSetRequest{Pool: "pa", Here: "ctx-a", Loc: at(alpha, cluster.Copy{Pool: "pa", Move: cluster.MoveTarget}, copyIn(beta, cluster.MoveSuperseded))},
			steps: []PoolSetStep{StepFinish}},
		{name: "past the switch, another pool of the cluster: finish, then roll",
			req:   PoolSetRequest{Pool: "pa2", Here: "ctx-a", Loc: at(alpha, cluster.Copy{Pool: "pa"}, copyIn(beta, cluster.MoveSuperseded))},
			steps: []PoolSetStep{StepFinish, StepRollout}},
		{name: "past the switch, back to the old cluster: finish, then move",
			req:   PoolSetRequest{Pool: "pb", Here: "ctx-a", Loc: at(alpha, cluster.Copy{Pool: "pa"}, copyIn(beta, cluster.MoveSuperseded))},
			steps: []PoolSetStep{StepFinish, StepMove}, target: "beta"},
		{name: "a target whose source is gone",
			req:   PoolSetRequest{Pool: "pa", Here: "ctx-a", Loc: at(alpha, cluster.Copy{Pool: "pa", Move: cluster.MoveTarget, Describe: "new copy"})},
			steps: []PoolSetStep{StepAdopt}},
		{name: "cut short before the switch, staying on its pool: abandon only, no restart",
			req:   PoolSetRequest{Pool: "pb", Here: "ctx-b", Loc: at(beta, cluster.Copy{Pool: "pb", Describe: "still serves"}, copyIn(alpha, cluster.MoveTarget))},
			steps: []PoolSetStep{StepAbandon}},
		{name: "cut short before the switch, another pool of its cluster: abandon, then roll",
			req:   PoolSetRequest{Pool: "pb2", Here: "ctx-b", Loc: at(beta, cluster.Copy{Pool: "pb", Describe: "still serves"}, copyIn(alpha, cluster.MoveTarget))},
			steps: []PoolSetStep{StepAbandon, StepRollout}},
		{name: "cut short before the switch, a cluster silent: leave the move be",
			req:   PoolSetRequest{Pool: "pb", Here: "ctx-b", Loc: at(beta, cluster.Copy{Pool: "pb", Describe: "still serves"}, down)},
			steps: []PoolSetStep{StepRollout}},
		{name: "cut short before the switch, moving on: the move redoes it",
			req:   PoolSetRequest{Pool: "pa", Here: "ctx-b", Loc: at(beta, cluster.Copy{Pool: "pb", Describe: "still serves"}, copyIn(alpha, cluster.MoveTarget))},
			steps: []PoolSetStep{StepMove}, target: "alpha"},
		{name: "dry run settles nothing",
			req:   PoolSetRequest{Pool: "pa", Here: "ctx-a", DryRun: true, Loc: at(alpha, cluster.Copy{Pool: "pa"}, copyIn(beta, cluster.MoveSuperseded))},
			steps: []PoolSetStep{StepRollout}},
	} {
		c.req.App, c.req.Config = "shop", cfg
		p, err := PlanPoolSet(c.req)
		if c.usage {
			if !inputerr.Is(err) {
				t.Errorf("%s: %v; want a usage error", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(p.Steps, c.steps) || p.Target.Name != c.target {
			t.Errorf("%s: steps %v target %q; want %v %q", c.name, p.Steps, p.Target.Name, c.steps, c.target)
		}
		if p.Has(StepFinish) && len(p.Old) == 0 || p.Has(StepAbandon) && c.name != "" && len(p.Made) == 0 {
			t.Errorf("%s: finish with no old copy, or abandon with no made copy: %+v", c.name, p)
		}
	}
}

// --adopt on a command pinned to one context says why it cannot.
func TestPlanPoolSetAdoptPinned(t *testing.T) {
	cfg := &cluster.Config{Clusters: []cluster.Cluster{{Name: "alpha", Context: "ctx-a", Pools: []string{"pa"}}}}
	_, err := PlanPoolSet(PoolSetRequest{App: "shop", Pool: "pa", Here: "ctx-a", Config: cfg, Adopt: true})
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "run it without them") {
		t.Errorf("--adopt with --context: %v", err)
	}
}

// PoolSet on the new copy of a move whose old copy is gone changes nothing
// unless told (--adopt), and never makes a copy that did not roll out the app.
func TestPoolSetOrphanedCopy(t *testing.T) {
	ctx := context.Background()
	_, from := deployedSource(t)
	dst, to := newFake()
	if _, err := from.CopyTo(ctx, to, "shop", &app.Move{Role: app.MoveTarget, From: "beta", To: "alpha", Pool: "pa"}); err != nil {
		t.Fatal(err)
	}
	cfg := &cluster.Config{Clusters: []cluster.Cluster{{Name: "alpha", Context: "ctx-a", Pools: []string{"pa"}}}}
	cp := cluster.Copy{Found: true, Namespace: ns, Pool: "pb", Move: cluster.MoveTarget, Describe: "new copy"}
	loc := &cluster.Location{App: "shop", Found: true, Cluster: cfg.Clusters[0], Copy: cp, Clusters: []cluster.Searched{{Cluster: cfg.Clusters[0], Copy: cp}}}
	connect := func(string) (deploy.Deps, error) { return deps(dst), nil }
	for _, adopt := range []bool{false, true} {
		req := PoolSetRequest{App: "shop", Pool: "pb", Here: "ctx-a", Config: cfg, Loc: loc, Adopt: adopt}
		_, err := PoolSet(ctx, req, connect, Options{})
		if !inputerr.Is(err) || !strings.Contains(err.Error(), "never completed") {
			t.Errorf("adopt %v: %v; want a usage error saying its rollout never completed", adopt, err)
		}
		if a := getApp(t, to, "shop"); a.Move == nil {
			t.Errorf("adopt %v: the copy's mark was dropped", adopt)
		}
	}
}
