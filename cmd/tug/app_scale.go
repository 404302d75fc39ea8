package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
)

// Formation commands: scale, restart, stop and start change units, not the
// release (see changeUnits).

// appScaleOptions are `tug app scale`.
type appScaleOptions struct {
	Changer appChanger
	Rollout rolloutFlags

	App string
	Ops []app.ScaleOp
}

func newAppScaleCmd(f *cli.Factory, runF func(context.Context, *appScaleOptions) error) *cobra.Command {
	o := &appScaleOptions{}
	cmd := &cobra.Command{
		Use:         "scale APP PROCESS=N|PROCESS+N|PROCESS-N...",
		Annotations: argsAre(argApp),
		Short:       "Set how many units each process runs",
		Long: `Set how many units each process runs, and wait until they do.

A scale is all or nothing: when the new units cannot start (no node has room
for them, they crash), the previous counts are put back and tug says so,
exiting with the failure's code (13 when no node can take them; see
docs/exit-codes.md). --no-rollback keeps the new counts for inspection.`,
		Example: `  tug app scale shop web=3 worker=1
  tug app scale shop web+1`,
		Args: cli.Args("APP", "PROCESS=N..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			ops, err := app.ParseScale(args[1:])
			if err != nil {
				return err
			}
			o.Ops = ops
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppScale(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Rollout.add(cmd, false, &o.Changer.WaitLock)
	cmd.Flags().BoolVar(&o.Rollout.NoRollback, "no-rollback", false, "On failure, keep the new unit counts for inspection instead of putting the previous ones back")
	return cmd
}

func runAppScale(ctx context.Context, o *appScaleOptions) error {
	return changeUnits(ctx, o.Changer, o.App, &o.Rollout, func(a *app.App) error { return a.ApplyScale(o.Ops) })
}

// appLifecycleOptions are `tug app restart|stop|start`.
type appLifecycleOptions struct {
	Changer appChanger
	// Store reads what config is staged, which a restart does not apply.
	Store       func() (*app.Store, error)
	CommandName string
	Rollout     rolloutFlags
	// Now is when a restart asks for new units.
	Now func() time.Time

	Verb    string
	App     string
	Process string
}

func newAppLifecycleCmd(f *cli.Factory, runF func(context.Context, *appLifecycleOptions) error, verb string) *cobra.Command {
	o := &appLifecycleOptions{Verb: verb, Now: time.Now, Store: storeFor(f), CommandName: f.CommandName}
	short := map[string]string{
		"restart": "Restart units, rolling, one batch at a time",
		"stop":    "Stop a process's units (scale to 0, remembering the count)",
		"start":   "Start stopped units again with their remembered count",
	}[verb]
	cmd := &cobra.Command{
		Use:         verb + " APP",
		Annotations: argsAre(argApp),
		Short:       short,
		Long: map[string]string{"restart": `Restart units, rolling, one batch at a time: new units of the same release,
with the same config. Config staged with 'env set|unset --no-restart' is not
applied (a restart makes no new release and runs no release phase); the next
rollout applies it: 'tug app deploy', or 'tug env set|unset' without
--no-restart. 'tug env get' marks staged keys.`}[verb],
		Example: "  tug app " + verb + " shop\n  tug app " + verb + " shop -p worker",
		Args:    cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateAppProcess(o.App, o.Process, false); err != nil {
				return err
			}
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppLifecycle(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVarP(&o.Process, "process", "p", "", "Only this process type (default: all)")
	o.Rollout.add(cmd, false, &o.Changer.WaitLock)
	return cmd
}

func runAppLifecycle(ctx context.Context, o *appLifecycleOptions) error {
	change := map[string]func(*app.App) error{
		"restart": func(a *app.App) error { return a.Restart(o.Process, o.Now()) },
		"stop":    func(a *app.App) error { return a.Stop(o.Process) },
		"start":   func(a *app.App) error { return a.Start(o.Process) },
	}[o.Verb]
	if err := changeUnits(ctx, o.Changer, o.App, &o.Rollout, change); err != nil {
		return err
	}
	if o.Verb == "restart" && o.Store != nil {
		noteStaged(ctx, o.Changer.IO, o.Store, o.CommandName, o.App)
	}
	return nil
}

// noteStaged says, after a restart, that config staged with --no-restart
// is still not applied: a restart brings back the same release.
func noteStaged(ctx context.Context, ios *cli.IOStreams, store func() (*app.Store, error), cmdName, appName string) {
	s, err := store()
	if err != nil {
		return
	}
	a, err := s.GetApp(ctx, appName)
	if err != nil {
		return
	}
	if st, err := deploy.Staged(ctx, s, a); err == nil && st.Any() {
		fmt.Fprintf(ios.ErrOut, "note: the restart brought back the same release; it did not apply %s\n", stagedNote(cmdName, appName, st))
	}
}
