package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
)

func newUnitCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "unit",
		Short:   "List, add, remove and kill an app's units",
		Long:    "A unit is one running instance of a process type: a pod of the app.",
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newUnitListCmd(f, nil), newUnitTopCmd(f, nil), newUnitAddCmd(f, nil, true), newUnitAddCmd(f, nil, false), newUnitKillCmd(f, nil))
	return cmd
}
