package move

import (
	"context"
	"fmt"
	"strings"
	"time"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
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
	// move up first (Options.GiveUpEarlier).
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
	target, moves := r.Config.MoveTo(r.Pool, r.Here)
	if err := refusedFlags(r, target, moves); err != nil {
		return nil, err
	}
	p := &PoolSetPlan{}
	loc := r.Loc
	found := loc != nil && loc.Found
	settle := found && !r.DryRun
	finished := settle && p.planFinish(loc)
	if finished && loc.Copy.Pool == r.Pool {
		return p, nil // finishing is all: the app has the pool
	}
	if settle && !finished && supersededAlone(loc) {
		return p.planReclaim(r, moves)
	}
	// the serving source of a move cut short before its switch
	cutShort := found && !finished && loc.Copy.Move == cluster.MoveNone && loc.Copy.Describe != ""
	if moves {
		return p.planMove(r, target, cutShort)
	}
	// a silent cluster may hold the half-made copy: then the move is left be
	if settle && cutShort && p.planAbandon(loc) && loc.Copy.Pool == r.Pool {
		return p, nil // giving up is all: the app has the pool, and no unit restarts
	}
	p.Steps = append(p.Steps, StepRollout)
	return p, nil
}

// supersededAlone reports whether the app is a superseded copy whose new
// copy is gone: every cluster answered, and none holds another copy.
func supersededAlone(loc *cluster.Location) bool {
	return loc.Copy.Move == cluster.MoveSuperseded && len(loc.Others()) == 0 && len(loc.Unreachable()) == 0
}

// planReclaim plans making a superseded copy whose new copy is gone the
// app again (its mark goes, then its release rolls out again). A pool in
// another cluster is refused: with its new copy gone there is no move to
// finish, so the copy must become the app again before it can move.
func (p *PoolSetPlan) planReclaim(r PoolSetRequest, moves bool) (*PoolSetPlan, error) {
	if loc := r.Loc; moves {
		return nil, inputerr.Errorf("app %q in cluster %q is the old copy of a move to cluster %q that switched over (%s), and no configured cluster holds the new copy any more, so there is no move to finish; 'tug app pool set %s %s' makes this copy the app again, then move it", r.App, loc.Name, loc.Copy.MoveTo, loc.Copy.Describe, r.App, r.Config.HomePool(loc))
	}
	p.Steps = append(p.Steps, StepReclaim, StepRollout)
	return p, nil
}

// refusedFlags refuses the flags a pool set cannot honour.
func refusedFlags(r PoolSetRequest, target cluster.Cluster, moves bool) error {
	if moves && (r.NoWait || r.NoRollback) {
		return inputerr.Errorf("--no-wait and --no-rollback do not apply when the app moves to another cluster (cluster %q holds pool %s): a move always waits until the new copy runs, and always removes a copy that fails", target.Name, r.Pool)
	}
	if r.Adopt && r.Loc == nil && len(r.Config.Clusters) > 0 {
		// Only the lookup across every configured cluster can tell that
		// no cluster holds the move's old copy any more.
		return inputerr.Errorf("--adopt needs tug to look for the move's old copy in every configured cluster, which a command pinned to one connection (--context, --server, --token, ...) does not do: run it without them")
	}
	if r.Adopt && (r.Loc == nil || !r.Loc.Found || !r.Loc.Orphaned()) {
		return inputerr.Errorf("--adopt is only for the new copy of a move whose old copy is gone, and app %q is not one", r.App)
	}
	return nil
}

// planFinish plans settling a move past its switch: adopting an orphaned
// new copy, or finishing the move (its superseded copies removed). It
// says whether it planned either.
func (p *PoolSetPlan) planFinish(loc *cluster.Location) bool {
	if loc.Orphaned() {
		p.Steps = append(p.Steps, StepAdopt)
		return true
	}
	for _, o := range loc.Others() {
		if o.Move == cluster.MoveSuperseded {
			p.Old = append(p.Old, o)
		}
	}
	if len(p.Old) == 0 {
		return false
	}
	p.Steps = append(p.Steps, StepFinish)
	return true
}

// planMove plans the move to target. Moving the serving source of a move
// cut short elsewhere would overwrite the only record of that move's
// half-made copy: the move gives that move up first (a dry run says so).
func (p *PoolSetPlan) planMove(r PoolSetRequest, target cluster.Cluster, cutShort bool) (*PoolSetPlan, error) {
	if loc := r.Loc; cutShort && loc.Copy.MoveTo != target.Name {
		made, answered := madeCopies(loc)
		if !answered {
			return nil, fmt.Errorf("app %q in cluster %q records an unfinished move to cluster %q (%s), and %s did not answer, so tug can neither remove the copy that move may have left there nor tell that there is none; moving the app now would erase the only record of it: try again when it answers (if it is gone for good, take it out of tug's map with 'tug cluster remove' first)", r.App, loc.Name, loc.Copy.MoveTo, loc.Copy.Describe, silentNames(loc))
		}
		p.Made, p.GiveUp = made, true
	}
	p.Steps, p.Target = append(p.Steps, StepMove), target
	return p, nil
}

// planAbandon plans giving up a move cut short, when the cluster that may
// hold its half-made copy answered; it says whether it did.
func (p *PoolSetPlan) planAbandon(loc *cluster.Location) bool {
	made, answered := madeCopies(loc)
	if !answered {
		return false
	}
	p.Made, p.Steps = made, append(p.Steps, StepAbandon)
	return true
}

// madeCopies are the copies a move cut short may have made (other
// clusters' copies marked as a move's new copy: Abandon removes only
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
type Connect func(kubeContext string) (deploy.Deps, error)

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
	Moved  *Result
	// Rollout: the caller rolls the pool change out now.
	Rollout bool
	// Finish: a move finished with nothing to roll out, as the move's
	// Result (status "moved", the release the app runs when known).
	Finish *Result
	// Result: a move given up with nothing rolled out (the app stays on
	// its pool) says what runs, UnitsRestarted false.
	Result *deploy.Result
}

// PoolSet does a pool set's plan but its rollout (Outcome.Rollout says
// the caller's turn). o tunes the move; its Pool, From and To are set here.
func PoolSet(ctx context.Context, r PoolSetRequest, connect Connect, o Options) (*PoolSetOutcome, error) {
	start := time.Now()
	plan, err := PlanPoolSet(r)
	if err != nil {
		return nil, err
	}
	out := &PoolSetOutcome{Plan: plan}
	ps := poolSetter{r: r, connect: connect, plan: plan, out: out, start: start}
	for _, step := range plan.Steps {
		if step == StepMove {
			out.Moving = true
			out.Moved, err = ps.move(ctx, o)
			return out, err
		}
		if err := ps.do(ctx, step); err != nil {
			return out, err
		}
	}
	if out.Finished && !out.Rollout {
		out.Finish = finishedResult(ctx, r, plan, connect, start)
	}
	return out, nil
}

// finishedResult is the Result of a move PoolSet finished, where the app
// now is (the cluster routing found it in) and where it came from.
func finishedResult(ctx context.Context, r PoolSetRequest, plan *PoolSetPlan, connect Connect, start time.Time) *Result {
	res := &Result{App: r.App, Pool: r.Pool, Status: "moved"}
	if r.Loc != nil {
		at := End{Cluster: r.Loc.Name, Namespace: r.Loc.Copy.Namespace}
		res.To, res.Serving = at, at
	}
	if len(plan.Old) > 0 {
		res.From = End{Cluster: plan.Old[0].Name, Namespace: plan.Old[0].Namespace}
	}
	if d, err := connect(""); err == nil {
		if a, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, r.App); err == nil {
			res.Release = a.Release
		}
	}
	res.DurationMS = time.Since(start).Milliseconds()
	return res
}

// poolSetter does the steps of one pool set's plan, recording them in out.
type poolSetter struct {
	r       PoolSetRequest
	connect Connect
	plan    *PoolSetPlan
	out     *PoolSetOutcome
	start   time.Time
}

// do does a step of the plan but the move.
func (ps *poolSetter) do(ctx context.Context, step PoolSetStep) error {
	switch step {
	case StepAdopt:
		if err := adoptStep(ctx, ps.r, ps.connect); err != nil {
			return err
		}
		ps.out.Finished = true
	case StepFinish:
		if err := ps.finish(ctx); err != nil {
			return err
		}
		ps.out.Finished = true
	case StepAbandon:
		return ps.abandon(ctx)
	case StepReclaim:
		d, err := ps.connect("")
		if err != nil {
			return err
		}
		d.Progress.Update(fmt.Sprintf("making the copy of %s in cluster %q the app again", ps.r.App, ps.r.Loc.Name))
		if err := Reclaim(ctx, d, ps.r.App); err != nil {
			return err
		}
		ps.out.Reclaimed = true
	case StepRollout:
		ps.out.Rollout = true
	}
	return nil
}

// finish finishes the move past its switch: each superseded copy goes.
func (ps *poolSetter) finish(ctx context.Context) error {
	serving, err := ps.connect("")
	if err != nil {
		return err
	}
	serving.Progress.Update(fmt.Sprintf("finishing the move of %s to cluster %q", ps.r.App, ps.r.Loc.Name))
	for _, old := range ps.plan.Old {
		d, err := ps.connect(old.Context)
		if err != nil {
			return err
		}
		if err := Finish(ctx, serving, d, ps.r.App); err != nil {
			return err
		}
	}
	return nil
}

// abandon gives up a move cut short; when that is all the plan does, the
// outcome says what runs.
func (ps *poolSetter) abandon(ctx context.Context) error {
	src, err := ps.connect("")
	if err != nil {
		return err
	}
	src.Progress.Update(fmt.Sprintf("giving up the unfinished move of %s", ps.r.App))
	made, err := ps.made()
	if err != nil {
		return err
	}
	if err := Abandon(ctx, src, made, ps.r.App); err != nil {
		return err
	}
	ps.out.Abandoned = true
	if len(ps.plan.Steps) == 1 {
		if ps.out.Result, err = keptResult(ctx, src, ps.r.App, ps.start); err != nil {
			return err
		}
	}
	return nil
}

// made connects to the clusters where the plan looks for a half-made copy.
func (ps *poolSetter) made() ([]deploy.Deps, error) {
	made := make([]deploy.Deps, len(ps.plan.Made))
	for i, m := range ps.plan.Made {
		var err error
		if made[i], err = ps.connect(m.Context); err != nil {
			return nil, fmt.Errorf("cluster %q (context %q): %w", m.Name, m.Context, err)
		}
	}
	return made, nil
}

// move moves the app to the plan's target, giving up an earlier move first
// when the plan says so.
func (ps *poolSetter) move(ctx context.Context, o Options) (*Result, error) {
	r, plan := ps.r, ps.plan
	src, err := ps.connect("")
	if err != nil {
		return nil, err
	}
	dst, err := ps.connect(plan.Target.Context)
	if err != nil {
		return nil, fmt.Errorf("cluster %q (context %q): %w", plan.Target.Name, plan.Target.Context, err)
	}
	o.Pool, o.From, o.To, o.DryRun = r.Pool, r.Config.NameOf(r.Here), plan.Target.Name, r.DryRun
	if plan.GiveUp {
		o.GiveUpEarlier = true
		earlier, err := ps.made()
		if err != nil {
			return nil, err
		}
		o.Earlier = append(o.Earlier, earlier...)
	}
	return App(ctx, src, dst, r.App, o)
}

// adoptStep makes an orphaned new copy the app, when asked and when its
// rollout had completed; otherwise it says what happened and what to do.
func adoptStep(ctx context.Context, r PoolSetRequest, connect Connect) error {
	d, err := connect("")
	if err != nil {
		return err
	}
	done, err := RolledOut(ctx, d, r.App)
	if err != nil {
		return err
	}
	loc := r.Loc
	what := fmt.Sprintf("app %q in cluster %q is the new copy of a move that never finished (%s), and no configured cluster holds its old copy any more (removed, or its cluster is no longer in tug's map)", r.App, loc.Name, loc.Copy.Describe)
	if !done {
		return inputerr.Errorf("%s; its rollout there never completed, so tug will not make it the app: remove it ('tug app remove %s') and deploy the app anew", what, r.App)
	}
	if !r.Adopt {
		return inputerr.Errorf("%s; its rollout there had completed: pass --adopt to make it the app, or remove it ('tug app remove %s')", what, r.App)
	}
	d.Progress.Update(fmt.Sprintf("making the copy of %s in cluster %q the app", r.App, loc.Name))
	return Adopt(ctx, d, r.App)
}

// keptResult is what runs once a move is given up with nothing rolled
// out: the app's deployed release (none before its first deploy), its
// units not restarted.
func keptResult(ctx context.Context, d deploy.Deps, appName string, start time.Time) (*deploy.Result, error) {
	store := &app.Store{Client: d.Client, Namespace: d.Namespace}
	a, err := store.GetApp(ctx, appName)
	if err != nil {
		return nil, err
	}
	res := &deploy.Result{App: a.Name, Namespace: a.Namespace, Processes: []deploy.ProcessResult{}}
	if a.Release > 0 {
		r, _, err := store.GetRelease(ctx, appName, a.Release)
		if err != nil {
			return nil, err
		}
		res = deploy.NewResult(a, r, r.Status, start)
	}
	res.UnitsRestarted = new(false)
	res.DurationMS = time.Since(start).Milliseconds()
	return res, nil
}
