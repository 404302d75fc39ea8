package deploy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/usage"
)

// 'tug app pool set APP POOL' with clusters configured: before it changes
// the pool it settles what an unfinished move left (finishes a move past
// its switch; gives up one cut short when the app stays in its cluster or
// moves to a third; makes a superseded copy whose new copy is gone the app
// again; or explains a new copy whose old copy is gone), then moves the
// app to POOL's cluster or rolls the pool change out where the app is.
// PlanPoolSet decides, PoolSet does it.

// PoolSetStep is one thing a pool set does, in the order of Steps.
type PoolSetStep string

const (
	// StepFinish finishes a move past its switch: the copy that serves
	// drops its mark, and the superseded copies (Old) are removed.
	StepFinish PoolSetStep = "finish"
	// StepAdopt: the app is the new copy of a move whose old copy no
	// configured cluster holds. It becomes the app only with Adopt, and
	// only if its rollout had completed; otherwise the step fails saying so.
	StepAdopt PoolSetStep = "adopt"
	// StepAbandon gives up a move cut short before its switch, the app
	// staying where it serves or moving to a third cluster: the half-made
	// copy (looked for in Made) goes, and the source's mark. When the app
	// stays on the pool it has, nothing is rolled out.
	StepAbandon PoolSetStep = "abandon"
	// StepReclaim makes a superseded copy the app again when no
	// configured cluster holds its move's new copy (every cluster
	// answered): its mark goes, then a rollout (its removal may have
	// begun).
	StepReclaim PoolSetStep = "reclaim"
	// StepRollout: a new release on the pool, where the app is (the
	// caller rolls it out: it prints the rollout).
	StepRollout PoolSetStep = "rollout"
	// StepMove moves the app to Target; with GiveUp, the move first gives
	// up the app's unfinished move to another cluster.
	StepMove PoolSetStep = "move"
)

// PoolSetRequest is a pool set as asked.
type PoolSetRequest struct {
	App, Pool string
	// Here is the kubeconfig context that holds the app (routing's pick).
	Here   string
	Config *cluster.Config
	// Loc is where the lookup found the app (nil: it did not look).
	Loc *cluster.Location
	// Adopt: make an orphaned new copy the app (--adopt).
	Adopt, DryRun bool
	// NoWait, NoRollback: the rollout flags, which a move cannot honour.
	NoWait, NoRollback bool
}

// PoolSetPlan is what a pool set does.
type PoolSetPlan struct {
	Steps []PoolSetStep
	// Old are the superseded copies StepFinish removes; Made where
	// StepAbandon, or StepMove with GiveUp, looks for the half-made copy of
	// the move it gives up (none: only the source's mark to drop).
	Old, Made []cluster.Searched
	// GiveUp: the app is the serving source of a move cut short before
	// its switch, to another cluster than Target; StepMove gives that
	// move up first (Move's GiveUpEarlier).
	GiveUp bool
	// Target is StepMove's cluster.
	Target cluster.Cluster
}

// Has reports whether the plan has step s.
func (p *PoolSetPlan) Has(s PoolSetStep) bool {
	for _, x := range p.Steps {
		if x == s {
			return true
		}
	}
	return false
}

// PlanPoolSet decides what a pool set does; it asks nothing of a cluster.
// Flags that do not apply are usage errors, before anything changes.
func PlanPoolSet(r PoolSetRequest) (*PoolSetPlan, error) {
	p := &PoolSetPlan{}
	target, move := r.Config.MoveTo(r.Pool, r.Here)
	if move && (r.NoWait || r.NoRollback) {
		return nil, usage.Errorf("--no-wait and --no-rollback do not apply when the app moves to another cluster (cluster %q holds pool %s): a move always waits until the new copy runs, and always removes a copy that fails", target.Name, r.Pool)
	}
	loc := r.Loc
	found := loc != nil && loc.Found
	orphan := found && loc.Orphaned()
	if r.Adopt && loc == nil && len(r.Config.Clusters) > 0 {
		// Only the lookup across every configured cluster can tell that
		// no cluster holds the move's old copy any more.
		return nil, usage.Errorf("--adopt needs tug to look for the move's old copy in every configured cluster, which a command pinned to one connection (--context, --server, --token, ...) does not do: run it without them")
	}
	if r.Adopt && !orphan {
		return nil, usage.Errorf("--adopt is only for the new copy of a move whose old copy is gone, and app %q is not one", r.App)
	}
	settle := found && !r.DryRun
	finished := false
	if settle {
		switch {
		case orphan:
			p.Steps, finished = append(p.Steps, StepAdopt), true
		default:
			for _, o := range loc.Others() {
				if o.Move == cluster.MoveSuperseded {
					p.Old = append(p.Old, o)
				}
			}
			if len(p.Old) > 0 {
				p.Steps, finished = append(p.Steps, StepFinish), true
			}
		}
	}
	if finished && loc.Copy.Pool == r.Pool {
		return p, nil // finishing is all: the app has the pool
	}
	// a superseded copy alone: its new copy is gone (every cluster answered)
	reclaim := settle && !finished && loc.Copy.Move == cluster.MoveSuperseded && len(loc.Others()) == 0 && len(loc.Unreachable()) == 0
	if reclaim && move {
		return nil, usage.Errorf("app %q in cluster %q is the old copy of a move to cluster %q that switched over (%s), and no configured cluster holds the new copy any more, so there is no move to finish; 'tug app pool set %s %s' makes this copy the app again, then move it", r.App, loc.Name, loc.Copy.MoveTo, loc.Copy.Describe, r.App, r.Config.HomePool(loc))
	}
	if reclaim {
		p.Steps = append(p.Steps, StepReclaim, StepRollout)
		return p, nil
	}
	// the serving source of a move cut short before its switch
	cutShort := found && !finished && loc.Copy.Move == cluster.MoveNone && loc.Copy.Describe != ""
	if move {
		if cutShort && loc.Copy.MoveTo != target.Name {
			// Moving elsewhere would overwrite the only record of the
			// earlier move's half-made copy: the move gives that move up
			// first (a dry run says so).
			made, answered := madeCopies(loc)
			if !answered {
				return nil, fmt.Errorf("app %q in cluster %q records an unfinished move to cluster %q (%s), and %s did not answer, so tug can neither remove the copy that move may have left there nor tell that there is none; moving the app now would erase the only record of it: try again when it answers (if it is gone for good, take it out of tug's map with 'tug cluster remove' first)", r.App, loc.Name, loc.Copy.MoveTo, loc.Copy.Describe, silentNames(loc))
			}
			p.Made, p.GiveUp = made, true
		}
		p.Steps, p.Target = append(p.Steps, StepMove), target
		return p, nil
	}
	if settle && cutShort {
		// a silent cluster may hold the half-made copy: leave the move be
		if made, answered := madeCopies(loc); answered {
			p.Made, p.Steps = made, append(p.Steps, StepAbandon)
			if loc.Copy.Pool == r.Pool {
				return p, nil // giving up is all: the app has the pool, and no unit restarts
			}
		}
	}
	p.Steps = append(p.Steps, StepRollout)
	return p, nil
}

// madeCopies are the copies a move cut short may have made (other
// clusters' copies marked as a move's new copy: AbandonMove removes only
// the one its move's mark names), and whether the cluster that may hold
// it answered: the cluster the move was to, or every cluster when that one
// is not in tug's map (any of them may be it, renamed).
func madeCopies(loc *cluster.Location) (made []cluster.Searched, answered bool) {
	for _, o := range loc.Others() {
		if o.Move == cluster.MoveTarget {
			made = append(made, o)
		}
	}
	for _, s := range loc.Clusters {
		if s.Name != "" && s.Name == loc.Copy.MoveTo {
			return made, s.Err == nil
		}
	}
	return made, len(loc.Unreachable()) == 0
}

// silentNames names the clusters that did not answer the lookup.
func silentNames(loc *cluster.Location) string {
	var names []string
	for _, s := range loc.Unreachable() {
		names = append(names, fmt.Sprintf("cluster %q", s.Name))
	}
	return strings.Join(names, ", ")
}

// Connect gives the Deps for a kubeconfig context ("": the app's, Here).
type Connect func(kubeContext string) (Deps, error)

// PoolSetOutcome is what PoolSet did.
type PoolSetOutcome struct {
	Plan *PoolSetPlan
	// Finished: a move was finished (or its new copy adopted); Abandoned:
	// an unfinished move was given up; Reclaimed: a superseded copy whose
	// new copy is gone was made the app again.
	Finished, Abandoned, Reclaimed bool
	// Moving: StepMove was reached; Moved is its result (also with a
	// failed move's error; nil when the move did not start).
	Moving bool
	Moved  *MoveResult
	// Rollout: the caller rolls the pool change out now.
	Rollout bool
	// Release the app runs once a move is finished (0: unknown or none).
	Release int
	// Result: a move given up with nothing rolled out (the app stays on
	// its pool) says what runs, UnitsRestarted false.
	Result *Result
}

// PoolSet does a pool set's plan but its rollout (Outcome.Rollout says
// the caller's turn). o tunes the move; its Pool, From and To are set here.
func PoolSet(ctx context.Context, r PoolSetRequest, connect Connect, o MoveOptions) (*PoolSetOutcome, error) {
	start := time.Now()
	plan, err := PlanPoolSet(r)
	if err != nil {
		return nil, err
	}
	out := &PoolSetOutcome{Plan: plan}
	for _, step := range plan.Steps {
		switch step {
		case StepAdopt:
			if err := adoptStep(ctx, r, connect); err != nil {
				return out, err
			}
			out.Finished = true
		case StepFinish:
			serving, err := connect("")
			if err != nil {
				return out, err
			}
			serving.Progress.Update(fmt.Sprintf("finishing the move of %s to cluster %q", r.App, r.Loc.Name))
			for _, old := range plan.Old {
				d, err := connect(old.Context)
				if err != nil {
					return out, err
				}
				if err := FinishMove(ctx, serving, d, r.App); err != nil {
					return out, err
				}
			}
			out.Finished = true
		case StepAbandon:
			src, err := connect("")
			if err != nil {
				return out, err
			}
			src.Progress.Update(fmt.Sprintf("giving up the unfinished move of %s", r.App))
			made := make([]Deps, len(plan.Made))
			for i, m := range plan.Made {
				if made[i], err = connect(m.Context); err != nil {
					return out, fmt.Errorf("cluster %q (context %q): %w", m.Name, m.Context, err)
				}
			}
			if err := AbandonMove(ctx, src, made, r.App); err != nil {
				return out, err
			}
			out.Abandoned = true
			if len(plan.Steps) == 1 {
				if out.Result, err = keptResult(ctx, src, r.App, start); err != nil {
					return out, err
				}
			}
		case StepReclaim:
			d, err := connect("")
			if err != nil {
				return out, err
			}
			d.Progress.Update(fmt.Sprintf("making the copy of %s in cluster %q the app again", r.App, r.Loc.Name))
			if err := ReclaimMove(ctx, d, r.App); err != nil {
				return out, err
			}
			out.Reclaimed = true
		case StepRollout:
			out.Rollout = true
		case StepMove:
			out.Moving = true
			src, err := connect("")
			if err != nil {
				return out, err
			}
			dst, err := connect(plan.Target.Context)
			if err != nil {
				return out, fmt.Errorf("cluster %q (context %q): %w", plan.Target.Name, plan.Target.Context, err)
			}
			o.Pool, o.From, o.To, o.DryRun = r.Pool, r.Config.NameOf(r.Here), plan.Target.Name, r.DryRun
			if plan.GiveUp {
				o.GiveUpEarlier = true
				for _, m := range plan.Made {
					d, err := connect(m.Context)
					if err != nil {
						return out, fmt.Errorf("cluster %q (context %q): %w", m.Name, m.Context, err)
					}
					o.Earlier = append(o.Earlier, d)
				}
			}
			out.Moved, err = Move(ctx, src, dst, r.App, o)
			return out, err
		}
	}
	if out.Finished && !out.Rollout {
		if d, err := connect(""); err == nil {
			if a, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, r.App); err == nil {
				out.Release = a.Release
			}
		}
	}
	return out, nil
}

// adoptStep makes an orphaned new copy the app, when asked and when its
// rollout had completed; otherwise it says what happened and what to do.
func adoptStep(ctx context.Context, r PoolSetRequest, connect Connect) error {
	d, err := connect("")
	if err != nil {
		return err
	}
	done, err := MoveRolledOut(ctx, d, r.App)
	if err != nil {
		return err
	}
	loc := r.Loc
	what := fmt.Sprintf("app %q in cluster %q is the new copy of a move that never finished (%s), and no configured cluster holds its old copy any more (removed, or its cluster is no longer in tug's map)", r.App, loc.Name, loc.Copy.Describe)
	if !done {
		return usage.Errorf("%s; its rollout there never completed, so tug will not make it the app: remove it ('tug app remove %s') and deploy the app anew", what, r.App)
	}
	if !r.Adopt {
		return usage.Errorf("%s; its rollout there had completed: pass --adopt to make it the app, or remove it ('tug app remove %s')", what, r.App)
	}
	d.Progress.Update(fmt.Sprintf("making the copy of %s in cluster %q the app", r.App, loc.Name))
	return AdoptMove(ctx, d, r.App)
}

// keptResult is what runs once a move is given up with nothing rolled
// out: the app's deployed release (none before its first deploy), its
// units not restarted.
func keptResult(ctx context.Context, d Deps, appName string, start time.Time) (*Result, error) {
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	a, err := store.GetApp(ctx, appName)
	if err != nil {
		return nil, err
	}
	res := &Result{App: a.Name, Namespace: a.Namespace, Processes: []ProcessResult{}}
	if a.Release > 0 {
		r, _, err := store.GetRelease(ctx, appName, a.Release)
		if err != nil {
			return nil, err
		}
		res = result(a, r, r.Status, start)
	}
	res.UnitsRestarted = new(false)
	res.DurationMS = time.Since(start).Milliseconds()
	return res, nil
}
