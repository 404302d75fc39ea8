package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/usage"
)

// `tug app pool` chooses the node pool an app runs on (node pools
// themselves are pool.go).

func newPoolSetCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "pool", Short: "Choose the pool of nodes an app runs on", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	r := &rolloutFlags{}
	var dryRun, adopt bool
	set := &cobra.Command{
		Use:   "set APP POOL",
		Short: "Move an app's units to the nodes of a pool: a new release, rolled out",
		Example: `  tug app pool set shop gpu
  tug app pool set shop edge --dry-run`,
		Long: `Pools are the node label tug.dev/pool (see 'tug node update --pool').

Within one cluster this is a new release whose units run on the pool's
nodes, rolled out like any other.

When tug's cluster map ('tug cluster list') puts POOL in another cluster than
the one holding the app, the app moves there, and keeps serving throughout:
under its deploy lock, tug copies its record, release history, config and
registry credentials to the other cluster, rolls the current release out
there on POOL and waits until it runs; then it removes the app from the old
cluster. If anything fails before the new copy runs, the new copy is
removed and the app keeps serving where it was. An app that binds volumes
does not move (their data cannot), nor one with config staged by
'env set --no-restart' (a move moves what runs: roll that config out first). A move cut short (tug killed) leaves
copies that tug tells apart, so commands still reach the copy that serves
and 'tug app info' says the move is unfinished; running the same
'tug app pool set' again finishes or redoes it, and setting the pool the app
has where it serves gives up a move cut short before the new copy took over
(its half-made copy is removed). A move's new copy whose old copy no
configured cluster holds any more (removed, or its cluster left tug's map)
never becomes the app silently: commands reaching it warn, and this command
says whether its rollout had completed; --adopt then makes it the app, else
remove it ('tug app remove'). --no-wait and --no-rollback do not apply to a
move (it always waits, and a failed copy is always removed): they are refused
there. Addresses change with the cluster: see 'tug app address' afterwards.`,
		Args: cli.ExactArgs("APP", "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			if err := kube.ValidateLabelValue("pool", args[1]); err != nil {
				return usage.Wrap(err)
			}
			if err := r.validate(); err != nil {
				return err
			}
			return poolSet(cmd, f, args[0], args[1], r, dryRun, adopt)
		},
	}
	r.add(set, true)
	set.Flags().BoolVar(&dryRun, "dry-run", false, "Say what would change (and whether the app would move to another cluster); change nothing")
	set.Flags().BoolVar(&adopt, "adopt", false, "Make the new copy of a move whose old copy is gone the app (only if its rollout had completed)")
	cmd.AddCommand(set)
	return cmd
}

// poolSet changes an app's pool where it is, or moves it to the pool's
// cluster. f already points at the cluster that holds the app (route.go).
// One progress reporter serves every step, and every way out ends it.
func poolSet(cmd *cobra.Command, f *cli.Factory, name, pool string, r *rolloutFlags, dryRun, adopt bool) error {
	cfg, err := loadClusters()
	if err != nil {
		return err
	}
	here, err := f.ContextName()
	if err != nil {
		return err
	}
	target, move := cfg.MoveTo(pool, here)
	if move && (r.NoWait || r.NoRollback) {
		return usage.Errorf("--no-wait and --no-rollback do not apply when the app moves to another cluster (cluster %q holds pool %s): a move always waits until the new copy runs, and always removes a copy that fails", target.Name, pool)
	}
	loc := routedLocation(cmd)
	orphan := loc != nil && loc.Orphaned()
	if adopt && !orphan {
		return usage.Errorf("--adopt is only for the new copy of a move whose old copy is gone, and app %q is not one", name)
	}
	p := f.Progress()
	if loc != nil && loc.Found && !dryRun {
		start := time.Now()
		var finished bool
		var old []cluster.Searched
		if orphan {
			finished, err = adoptMove(cmd, f, p, loc, adopt)
		} else {
			finished, old, err = finishMove(cmd, f, p, cfg, loc)
		}
		if err != nil {
			p.Fail(fmt.Sprintf("finishing the move of %s", name))
			return err
		}
		if finished && loc.Copy.Pool == pool {
			p.Done(fmt.Sprintf("the move of %s to cluster %q is finished; it runs on pool %s", name, loc.Name, pool))
			if r.Output == cli.OutputTable {
				return nil
			}
			here := deploy.MoveEnd{Cluster: loc.Name, Namespace: loc.Copy.Namespace}
			res := &deploy.MoveResult{App: name, Pool: pool, To: here, Serving: here, Status: "moved"}
			if len(old) > 0 {
				res.From = deploy.MoveEnd{Cluster: old[0].Name, Namespace: old[0].Namespace}
			}
			if s, err := appStore(f); err == nil {
				if a, err := s.GetApp(cmd.Context(), name); err == nil {
					res.Release = a.Release
				}
			}
			res.DurationMS = time.Since(start).Milliseconds()
			return cli.OutputOptions{Format: r.Output}.Print(f.IOStreams, res, nil)
		}
		if finished {
			p.Done(fmt.Sprintf("the move of %s to cluster %q is finished", name, loc.Name))
			p = f.Progress()
		}
	}
	if !move {
		if loc != nil && loc.Found && !dryRun {
			gaveUp, err := abandonMove(cmd, f, p, loc)
			if err != nil {
				p.Fail(fmt.Sprintf("giving up the unfinished move of %s", name))
				return err
			}
			if gaveUp {
				p.Done(fmt.Sprintf("gave up the unfinished move of %s", name))
			}
		}
		opts := r.options()
		opts.DryRun = dryRun
		return roll(cmd, f, name, deploy.SettingsChange(app.KindPool, "pool "+pool, func(_ *app.App, rel *app.Release) error {
			rel.Pool = pool
			return nil
		}), opts, r.Output, rollVerb{app.KindPool + " changed", "changing the " + app.KindPool + " of"})
	}
	src, err := deployDeps(cmd, f)
	if err != nil {
		return err
	}
	dst, err := deployDeps(cmd, f.ForContext(target.Context))
	if err != nil {
		return fmt.Errorf("cluster %q (context %q): %w", target.Name, target.Context, err)
	}
	src.Progress, dst.Progress = p, p
	from := cfg.NameOf(here)
	res, err := deploy.Move(cmd.Context(), src, dst, name, deploy.MoveOptions{Pool: pool, From: from, To: target.Name, Timeout: r.Timeout, DryRun: dryRun})
	if err != nil && res != nil && res.Status == "moved" {
		// moved, but something of the old copy is left to report (stuck units)
		p.Done(fmt.Sprintf("moved %s to cluster %q: %s", name, target.Name, movedRuns(res)))
		if r.Output != cli.OutputTable {
			if perr := (cli.OutputOptions{Format: r.Output}).Print(f.IOStreams, res, nil); perr != nil {
				return perr
			}
		}
		return err
	}
	if err != nil {
		p.Fail(fmt.Sprintf("moving %s to cluster %q", name, target.Name))
		var failed *deploy.Error
		if errors.As(err, &failed) && failed.Result != nil && failed.Result.Failure != nil {
			// the diagnosis only: the failed release went with the copy
			diag := *failed.Result
			diag.Status, diag.RolledBackTo = "", 0
			printFailure(f.IOStreams, &diag)
		}
		if res != nil && r.Output != cli.OutputTable {
			if perr := (cli.OutputOptions{Format: r.Output}).Print(f.IOStreams, res, nil); perr != nil {
				return perr
			}
		}
		return err
	}
	if res.Status == "dry-run" {
		p.Done("dry run: nothing changed")
	} else {
		p.Done(fmt.Sprintf("moved %s from cluster %q (namespace %s) to cluster %q (namespace %s): %s in %.1fs",
			name, res.From.Cluster, res.From.Namespace, res.To.Cluster, res.To.Namespace, movedRuns(res), float64(res.DurationMS)/1000))
	}
	return cli.OutputOptions{Format: r.Output}.Print(f.IOStreams, res, func() error {
		if res.Status == "dry-run" {
			fmt.Fprintf(f.IOStreams.Out, "dry run: app %s would move from cluster %q to cluster %q:\n", name, res.From.Cluster, res.To.Cluster)
			for i, line := range res.Plan {
				fmt.Fprintf(f.IOStreams.Out, "  %d. %s\n", i+1, line)
			}
		}
		return nil
	})
}

// adoptMove handles the new copy of a move whose old copy no configured
// cluster holds: it becomes the app only when asked (--adopt) and only if
// its rollout had completed; otherwise the error says what happened and
// what to do.
func adoptMove(cmd *cobra.Command, f *cli.Factory, p cli.Progress, loc *cluster.Location, adopt bool) (bool, error) {
	d, err := deployDeps(cmd, f)
	if err != nil {
		return false, err
	}
	d.Progress = p
	done, err := deploy.MoveRolledOut(cmd.Context(), d, loc.App)
	if err != nil {
		return false, err
	}
	what := fmt.Sprintf("app %q in cluster %q is the new copy of a move that never finished (%s), and no configured cluster holds its old copy any more (removed, or its cluster is no longer in tug's map)", loc.App, loc.Name, loc.Copy.Describe)
	if !done {
		return false, usage.Errorf("%s; its rollout there never completed, so tug will not make it the app: remove it ('%s app remove %s') and deploy the app anew", what, f.CommandName, loc.App)
	}
	if !adopt {
		return false, usage.Errorf("%s; its rollout there had completed: pass --adopt to make it the app, or remove it ('%s app remove %s')", what, f.CommandName, loc.App)
	}
	p.Update(fmt.Sprintf("making the copy of %s in cluster %q the app", loc.App, loc.Name))
	return true, deploy.AdoptMove(cmd.Context(), d, loc.App)
}

// finishMove completes a move a killed tug left after its switch-over: the
// copy that serves drops its mark and superseded copies elsewhere go. It
// reports whether there was one to finish. A move cut short before the
// switch is redone by deploy.Move instead. old are the superseded copies
// it removed.
func finishMove(cmd *cobra.Command, f *cli.Factory, p cli.Progress, cfg *cluster.Config, loc *cluster.Location) (finished bool, old []cluster.Searched, err error) {
	for _, o := range loc.Others() {
		if o.Move == cluster.MoveSuperseded {
			old = append(old, o)
		}
	}
	if len(old) == 0 {
		return false, nil, nil // nothing superseded: no switch happened (an orphaned target is adoptMove's)
	}
	serving, err := deployDeps(cmd, f)
	if err != nil {
		return false, nil, err
	}
	serving.Progress = p
	p.Update(fmt.Sprintf("finishing the move of %s to cluster %q", loc.App, loc.Name))
	for _, o := range old {
		d, err := deployDeps(cmd, f.ForContext(o.Context))
		if err != nil {
			return false, nil, err
		}
		d.Progress = p
		if err := deploy.FinishMove(cmd.Context(), serving, d, loc.App); err != nil {
			return false, nil, err
		}
	}
	return true, old, nil
}

// abandonMove gives up a move cut short before its switch when the app is
// asked to stay in the cluster where it serves: the copy the move was
// making goes, and so does the mark that makes 'app info' call the move
// unfinished. Nothing happens (false) for an app with no unfinished move,
// or when a cluster that may hold the half-made copy does not answer.
func abandonMove(cmd *cobra.Command, f *cli.Factory, p cli.Progress, loc *cluster.Location) (bool, error) {
	if loc.Copy.Move != cluster.MoveNone || loc.Copy.Describe == "" {
		return false, nil
	}
	var made []cluster.Searched
	for _, o := range loc.Others() {
		if o.Move == cluster.MoveTarget {
			made = append(made, o)
		}
	}
	if len(made) == 0 && len(loc.Unreachable()) > 0 {
		return false, nil
	}
	src, err := deployDeps(cmd, f)
	if err != nil {
		return false, err
	}
	src.Progress = p
	p.Update(fmt.Sprintf("giving up the unfinished move of %s", loc.App))
	if len(made) == 0 {
		return true, deploy.AbandonMove(cmd.Context(), src, deploy.Deps{}, loc.App)
	}
	for _, o := range made {
		dst, err := deployDeps(cmd, f.ForContext(o.Context))
		if err != nil {
			return false, err
		}
		dst.Progress = p
		if err := deploy.AbandonMove(cmd.Context(), src, dst, loc.App); err != nil {
			return false, err
		}
	}
	return true, nil
}

// movedRuns says what runs where after a move.
func movedRuns(res *deploy.MoveResult) string {
	if res.Release == 0 {
		return fmt.Sprintf("pool %s (never deployed: nothing runs until its first deploy)", res.Pool)
	}
	return fmt.Sprintf("v%d runs on pool %s", res.Release, res.Pool)
}
