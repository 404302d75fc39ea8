package move

import (
	"errors"
	"strings"
	"testing"

	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/rollout"
)

func TestResultRuns(t *testing.T) {
	if got := (&Result{Pool: "pa"}).Runs(); strings.Contains(got, "v0") || !strings.Contains(got, "never deployed") {
		t.Errorf("never-deployed app: %q", got)
	}
	if got := (&Result{Pool: "pa", Release: 3}).Runs(); got != "v3 runs on pool pa" {
		t.Errorf("deployed app: %q", got)
	}
}

func TestResultSummary(t *testing.T) {
	if got := (&Result{Status: "dry-run"}).Summary("shop"); got != "dry run: nothing changed" {
		t.Errorf("dry run: %q", got)
	}
	res := &Result{Status: "moved", Pool: "gpu", Release: 2, GaveUp: "edge", DurationMS: 1500,
		From: End{Cluster: "a", Namespace: "x"}, To: End{Cluster: "b", Namespace: "y"}}
	want := `moved shop from cluster "a" (namespace x) to cluster "b" (namespace y) (the unfinished move to cluster "edge" given up first): v2 runs on pool gpu in 1.5s`
	if got := res.Summary("shop"); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// What a pool set settled says so, and only a pool set that rolls nothing
// out has a result of its own to print.
func TestPoolSetOutcomeReport(t *testing.T) {
	r := PoolSetRequest{App: "shop", Pool: "gpu", Loc: &cluster.Location{Cluster: cluster.Cluster{Name: "b"}}}
	finish, kept := &Result{Status: "moved"}, &deploy.Result{App: "shop"}
	for _, c := range []struct {
		out      PoolSetOutcome
		line     string
		rollsOut bool
		printed  any
	}{
		{PoolSetOutcome{Finished: true, Finish: finish}, `the move of shop to cluster "b" is finished; it runs on pool gpu`, false, finish},
		{PoolSetOutcome{Finished: true, Rollout: true}, `the move of shop to cluster "b" is finished`, true, nil},
		{PoolSetOutcome{Abandoned: true, Result: kept}, `gave up the unfinished move of shop; it stays on pool gpu in cluster "b", nothing restarted`, false, kept},
		{PoolSetOutcome{Abandoned: true}, `gave up the unfinished move of shop; it stays on pool gpu in cluster "b", nothing restarted`, false, nil},
		{PoolSetOutcome{Abandoned: true, Rollout: true}, "gave up the unfinished move of shop", true, nil},
		{PoolSetOutcome{Reclaimed: true, Rollout: true}, `the copy of shop in cluster "b" is the app again; rolling its release out again`, true, nil},
		{PoolSetOutcome{Rollout: true}, "", true, nil},
	} {
		if got := c.out.Settled(r); got != c.line {
			t.Errorf("%+v: line %q, want %q", c.out, got, c.line)
		}
		if got := c.out.RollsOut(); got != c.rollsOut {
			t.Errorf("%+v: rolls out %v, want %v", c.out, got, c.rollsOut)
		}
		if got := c.out.Printed(); got != c.printed {
			t.Errorf("%+v: printed %v, want %v", c.out, got, c.printed)
		}
	}
}

// A failed target rollout is explained by its diagnosis alone; any other
// error has none, and a move that happened with leftovers is told apart.
func TestDiagnosis(t *testing.T) {
	failed := &deploy.Error{Result: &deploy.Result{App: "shop", Status: "failed", RolledBackTo: 3, Failure: &rollout.Failure{Class: "crash"}}}
	diag := Diagnosis(failed)
	if diag == nil || diag.Status != "" || diag.RolledBackTo != 0 || diag.Failure.Class != "crash" {
		t.Fatalf("diagnosis %+v", diag)
	}
	if failed.Result.Status != "failed" {
		t.Error("the diagnosis changed the error's result")
	}
	if Diagnosis(errors.New("boom")) != nil {
		t.Error("a plain error has a diagnosis")
	}
	if !MovedWithLeftovers(&Result{Status: "moved"}, errors.New("stuck")) || MovedWithLeftovers(&Result{Status: "failed"}, errors.New("x")) || MovedWithLeftovers(&Result{Status: "moved"}, nil) {
		t.Error("MovedWithLeftovers")
	}
}
