package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/usage"
)

// `tug app pool` chooses the node pool an app runs on (node pools
// themselves are pool.go).

func newPoolSetCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "pool", Short: "Choose the pool of nodes an app runs on", Args: cli.GroupArgs, RunE: cli.GroupRunE}
	r := &rolloutFlags{}
	set := &cobra.Command{
		Use:     "set APP POOL",
		Short:   "Move an app's units to the nodes of a pool: a new release, rolled out",
		Example: `  tug app pool set shop gpu`,
		Long:    "Pools are the node label tug.dev/pool (see 'tug node update --pool').",
		Args:    cli.ExactArgs("APP", "POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			if err := kube.ValidateLabelValue("pool", args[1]); err != nil {
				return usage.Wrap(err)
			}
			if err := checkPoolContext(f, args[1]); err != nil {
				return err
			}
			return settingsRoll(cmd, f, args[0], app.KindPool, "pool "+args[1], r, func(_ *app.App, rel *app.Release) error {
				rel.Pool = args[1]
				return nil
			})
		},
	}
	r.add(set, true)
	cmd.AddCommand(set)
	return cmd
}
