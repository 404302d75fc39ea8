package main

import (
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

// Formation commands: scale, restart, stop and start change units, not the
// release (see reshape).

func newAppScaleCmd(f *cli.Factory) *cobra.Command {
	r := &rolloutFlags{}
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
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			ops, err := app.ParseScale(args[1:])
			if err != nil {
				return err
			}
			if err := r.validate(); err != nil {
				return err
			}
			return reshape(cmd, f, args[0], r, func(a *app.App) error { return a.ApplyScale(ops) })
		},
	}
	r.add(cmd, false)
	cmd.Flags().BoolVar(&r.NoRollback, "no-rollback", false, "On failure, keep the new unit counts for inspection instead of putting the previous ones back")
	return cmd
}

func newAppLifecycleCmd(f *cli.Factory, verb string) *cobra.Command {
	var proc string
	r := &rolloutFlags{}
	short := map[string]string{
		"restart": "Restart units, rolling, one batch at a time",
		"stop":    "Stop a process's units (scale to 0, remembering the count)",
		"start":   "Start stopped units again with their remembered count",
	}[verb]
	cmd := &cobra.Command{
		Use:         verb + " APP",
		Annotations: argsAre(argApp),
		Short:       short,
		Example:     "  tug app " + verb + " shop\n  tug app " + verb + " shop -p worker",
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateAppProcess(args[0], proc, false); err != nil {
				return err
			}
			if err := r.validate(); err != nil {
				return err
			}
			change := map[string]func(*app.App) error{
				"restart": func(a *app.App) error { return a.Restart(proc, time.Now()) },
				"stop":    func(a *app.App) error { return a.Stop(proc) },
				"start":   func(a *app.App) error { return a.Start(proc) },
			}[verb]
			return reshape(cmd, f, args[0], r, change)
		},
	}
	cmd.Flags().StringVarP(&proc, "process", "p", "", "Only this process type (default: all)")
	r.add(cmd, false)
	return cmd
}
