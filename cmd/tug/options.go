package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"tug.dev/tug/pkg/cli"
)

func newOptionsCmd(f *cli.Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "options",
		Short:   "List the flags every command accepts (cluster connection, output)",
		Example: `  tug options`,
		Args:    cli.NoArgs,
		GroupID: "other",
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Show the hidden ones too: listing them is this command's job.
			all := pflag.NewFlagSet("global", pflag.ContinueOnError)
			cmd.Root().PersistentFlags().VisitAll(func(fl *pflag.Flag) {
				shown := *fl
				shown.Hidden = false
				all.AddFlag(&shown)
			})
			_, err := fmt.Fprintf(f.IOStreams.Out, "These flags can be passed to any command:\n\n%s", all.FlagUsages())
			return err
		},
	}
}
