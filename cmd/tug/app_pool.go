package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/move"
	"tug.dev/tug/pkg/progress"
)

// `tug app pool` chooses the node pool an app runs on (node pools
// themselves are pool.go).

func newAppPoolCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "pool", Short: "Choose the pool of nodes an app runs on", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	cmd.AddCommand(newPoolSetCmd(f, nil))
	return cmd
}

// poolSetOptions are `tug app pool set`.
type poolSetOptions struct {
	Changer appChanger
	Rollout rolloutFlags
	// Clusters is tug's cluster map (loadClusters).
	Clusters func() (*cluster.Config, error)
	// Here is the kubeconfig context the command runs in, as the pool's
	// cluster is decided against it.
	Here func(cfg *cluster.Config, pool string) (string, error)
	// Connect makes the deploy dependencies in a context ("" for the
	// command's own).
	Connect func(ctx context.Context, kubeContext string) (deploy.Deps, error)

	App   string
	Pool  string
	Adopt bool
}

func newPoolSetCmd(f *cli.Factory, runF func(context.Context, *poolSetOptions) error) *cobra.Command {
	o := &poolSetOptions{Clusters: loadClusters, Here: poolSetContext(f)}
	set := &cobra.Command{
		Use:         "set APP POOL",
		Annotations: atLevel(access.Operator, argsAre(argApp, argPool)),
		Short:       "Move an app's units to the nodes of a pool: a new release, rolled out",
		Example: `  tug app pool set shop gpu
  tug app pool set shop edge --dry-run`,
		Long: poolSetLong,
		Args: cli.ExactArgs("APP", "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(args); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runPoolSet(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Connect = func(ctx context.Context, kubeContext string) (deploy.Deps, error) {
		g := f
		if kubeContext != "" {
			g = f.ForContext(kubeContext)
		}
		d, err := deployDeps(ctx, g)
		d.WaitLock = o.Changer.WaitLock
		return d, err
	}
	o.Rollout.add(set, true, &o.Changer.WaitLock)
	o.Rollout.addDryRun(set, "Say what would change (and whether the app would move to another cluster); change nothing")
	set.Flags().BoolVar(&o.Adopt, "adopt", false, "Make the new copy of a move whose old copy is gone the app (only if its rollout had completed)")
	return set
}

// poolSetLong is pool set's help: a move between clusters has rules a
// reader of the help must know before running it.
const poolSetLong = `Pools are the node label tug.dev/pool (see 'tug node update --pool').

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
(its half-made copy is removed; nothing restarts). Moving the app to a third
cluster gives such a move up first. A superseded old copy whose new copy no
configured cluster holds any more (removed by hand) is made the app again by
setting a pool of its own cluster (its release is rolled out again). A move's
new copy whose old copy no configured cluster holds any more (removed, or its
cluster left tug's map)
never becomes the app silently: commands reaching it warn, and this command
says whether its rollout had completed; --adopt then makes it the app, else
remove it ('tug app remove'). --no-wait and --no-rollback do not apply to a
move (it always waits, and a failed copy is always removed): they are refused
there. Addresses change with the cluster: see 'tug app address' afterwards.
A connection given on the command line (--server, --token, --user,
--insecure-skip-tls-verify, ...) is never carried to another cluster: then
the app does not move, and a POOL that tug's map puts in another cluster than
that server's is refused.`

// complete takes the app and pool from the arguments, refusing what could
// never be a name or a pool before anything is asked of a cluster.
func (o *poolSetOptions) complete(args []string) error {
	o.App, o.Pool = args[0], args[1]
	if err := app.ValidateName(o.App); err != nil {
		return err
	}
	if err := kube.ValidateLabelValue("pool", o.Pool); err != nil {
		return inputerr.Wrap(err)
	}
	return o.Rollout.validate()
}

// poolSetContext is the context pool set decides the pool's cluster
// against.
func poolSetContext(f *cli.Factory) func(cfg *cluster.Config, pool string) (string, error) {
	return func(cfg *cluster.Config, pool string) (string, error) {
		if f.ConfigFlags.PinsCluster() {
			// Not routed (route.go): the connection is the command line's
			// own, not a context's. The pool decides only against it: in
			// place when the pool's cluster is that server's (or no
			// cluster's), else refused; it never moves the app (nor
			// settles a move).
			return pinnedPoolContext(f, cfg, pool)
		}
		return f.ContextName()
	}
}

// runPoolSet changes an app's pool where it is, or moves it to the pool's
// cluster (move.PoolSet decides and does it, but for a rollout in place).
// The options' connections already point at the cluster that holds the app
// (route.go). One progress reporter serves every step, and every way out
// ends it.
func runPoolSet(ctx context.Context, o *poolSetOptions) error {
	name, pool, r, ios := o.App, o.Pool, &o.Rollout, o.Changer.IO
	cfg, err := o.Clusters()
	if err != nil {
		return err
	}
	here, err := o.Here(cfg, pool)
	if err != nil {
		return err
	}
	loc := routedLocation(ctx)
	req := move.PoolSetRequest{App: name, Pool: pool, Here: here, Config: cfg, Loc: loc,
		Adopt: o.Adopt, DryRun: r.DryRun, NoWait: r.NoWait, NoRollback: r.NoRollback}
	p := o.Changer.Progress()
	connect := func(kubeContext string) (deploy.Deps, error) {
		d, err := o.Connect(ctx, kubeContext)
		d.Progress = p
		return d, err
	}
	out, err := move.PoolSet(ctx, req, connect, move.Options{Timeout: r.Timeout})
	if out != nil && out.Moving {
		return printMove(ios, p, r, name, out.Plan.Target.Name, out.Moved, err)
	}
	if err != nil {
		if out != nil {
			p.Fail(fmt.Sprintf("settling the unfinished move of %s", name))
		}
		return err
	}
	if line := out.Settled(req); line != "" {
		p.Done(line)
	}
	if !out.RollsOut() {
		if printed := out.Printed(); r.Output != cli.OutputTable && printed != nil {
			return cli.OutputOptions{Format: r.Output}.Print(ios, printed, nil)
		}
		return nil
	}
	return rollOutChange(ctx, o.Changer, name, move.PoolChange(pool), r.options(), r.Output,
		rollVerb{app.KindPool + " changed", "changing the " + app.KindPool + " of"})
}

// printMove reports a move (or its dry run) and returns its error.
func printMove(ios *cli.IOStreams, p progress.Reporter, r *rolloutFlags, name, target string, res *move.Result, err error) error {
	switch {
	case move.MovedWithLeftovers(res, err):
		p.Done(fmt.Sprintf("moved %s to cluster %q: %s", name, target, res.Runs()))
	case err != nil:
		p.Fail(fmt.Sprintf("moving %s to cluster %q", name, target))
		if diag := move.Diagnosis(err); diag != nil {
			printFailure(ios, diag)
		}
	default:
		p.Done(res.Summary(name))
	}
	if err != nil {
		if res != nil && r.Output != cli.OutputTable {
			if perr := (cli.OutputOptions{Format: r.Output}).Print(ios, res, nil); perr != nil {
				return perr
			}
		}
		return err
	}
	return cli.OutputOptions{Format: r.Output}.Print(ios, res, func() error {
		if res.Status == "dry-run" {
			fmt.Fprintf(ios.Out, "dry run: app %s would move from cluster %q to cluster %q:\n", name, res.From.Cluster, res.To.Cluster)
			for i, line := range res.Plan {
				fmt.Fprintf(ios.Out, "  %d. %s\n", i+1, line)
			}
		}
		return nil
	})
}
