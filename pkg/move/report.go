package move

import (
	"errors"
	"fmt"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
)

// What a pool set's outcome says to the person who ran it. The words live
// with the outcome they describe, so a caller (the CLI, or any Go program)
// only binds its flags, calls PoolSet and prints what these return.

// PoolChange is the release a pool set rolls out where the app is
// (Outcome.Rollout): the same release on the other pool.
func PoolChange(pool string) deploy.Change {
	return deploy.SettingsChange(app.KindPool, "pool "+pool, func(_ *app.App, rel *app.Release) error {
		rel.Pool = pool
		return nil
	})
}

// Settled is the line that says what PoolSet settled of an unfinished move
// before (or instead of) its rollout; "" when it settled nothing. r is the
// request PoolSet was given.
func (o *PoolSetOutcome) Settled(r PoolSetRequest) string {
	name, pool := r.App, r.Pool
	switch {
	case o.Finished && !o.Rollout:
		return fmt.Sprintf("the move of %s to cluster %q is finished; it runs on pool %s", name, r.Loc.Name, pool)
	case o.Finished:
		return fmt.Sprintf("the move of %s to cluster %q is finished", name, r.Loc.Name)
	case o.Abandoned && !o.Rollout:
		return fmt.Sprintf("gave up the unfinished move of %s; it stays on pool %s in cluster %q, nothing restarted", name, pool, r.Loc.Name)
	case o.Abandoned:
		return fmt.Sprintf("gave up the unfinished move of %s", name)
	case o.Reclaimed:
		return fmt.Sprintf("the copy of %s in cluster %q is the app again; rolling its release out again", name, r.Loc.Name)
	}
	return ""
}

// RollsOut reports whether the caller's rollout of PoolChange follows:
// it does unless settling a move was all the pool set had to do.
func (o *PoolSetOutcome) RollsOut() bool {
	return o.Rollout || !(o.Finished || o.Abandoned)
}

// Printed is the result a pool set that rolls nothing out prints for a
// script (-o json|yaml): the finished move's, or what runs after a move
// given up; nil when there is none.
func (o *PoolSetOutcome) Printed() any {
	switch {
	case o.RollsOut():
		return nil
	case o.Finished && o.Finish != nil:
		return o.Finish
	case !o.Finished && o.Result != nil:
		return o.Result
	}
	return nil
}

// Runs says what runs where after a move.
func (r *Result) Runs() string {
	if r.Release == 0 {
		return fmt.Sprintf("pool %s (never deployed: nothing runs until its first deploy)", r.Pool)
	}
	return fmt.Sprintf("v%d runs on pool %s", r.Release, r.Pool)
}

// Summary is the line that ends a move (or its dry run) that succeeded.
func (r *Result) Summary(name string) string {
	if r.Status == "dry-run" {
		return "dry run: nothing changed"
	}
	gaveUp := ""
	if r.GaveUp != "" {
		gaveUp = fmt.Sprintf(" (the unfinished move to cluster %q given up first)", r.GaveUp)
	}
	return fmt.Sprintf("moved %s from cluster %q (namespace %s) to cluster %q (namespace %s)%s: %s in %.1fs",
		name, r.From.Cluster, r.From.Namespace, r.To.Cluster, r.To.Namespace, gaveUp, r.Runs(), float64(r.DurationMS)/1000)
}

// MovedWithLeftovers reports whether err came with a move that did
// happen: the app serves in the target, and something of its old copy is
// left to report (units stuck terminating).
func MovedWithLeftovers(res *Result, err error) bool {
	return err != nil && res != nil && res.Status == "moved"
}

// Diagnosis is what to explain of a move whose target rollout failed: that
// rollout's diagnosis only, since the failed release went with the copy
// (nil when err is not a failed rollout).
func Diagnosis(err error) *deploy.Result {
	var failed *deploy.Error
	if !errors.As(err, &failed) || failed.Result == nil || failed.Result.Failure == nil {
		return nil
	}
	diag := *failed.Result
	diag.Status, diag.RolledBackTo = "", 0
	return &diag
}
