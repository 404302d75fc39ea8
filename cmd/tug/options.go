package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"tug.dev/tug/pkg/cli"
)

// optionsCmdOptions are `tug options`.
type optionsCmdOptions struct {
	IO *cli.IOStreams
	// Root is the command tree whose persistent flags are listed.
	Root func() *cobra.Command
}

func newOptionsCmd(f *cli.Factory, runF func(context.Context, *optionsCmdOptions) error) *cobra.Command {
	o := &optionsCmdOptions{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:         "options",
		Annotations: atLevel(levelNone, nil),
		Short:       "List the flags every command accepts (cluster connection, output)",
		Example:     `  tug options`,
		Args:        cli.NoArgs,
		GroupID:     "other",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runOptionsCmd(cmd.Context(), o)
		},
	}
	o.Root = cmd.Root
	return cmd
}

func runOptionsCmd(_ context.Context, o *optionsCmdOptions) error {
	// Show the hidden ones too: listing them is this command's job.
	all := pflag.NewFlagSet("global", pflag.ContinueOnError)
	o.Root().PersistentFlags().VisitAll(func(fl *pflag.Flag) {
		shown := *fl
		shown.Hidden = false
		all.AddFlag(&shown)
	})
	_, err := fmt.Fprintf(o.IO.Out, "These flags can be passed to any command:\n\n%s", all.FlagUsages())
	return err
}
