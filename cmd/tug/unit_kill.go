package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
)

// unitKillOptions are `tug unit kill`.
type unitKillOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	App   string
	Unit  string
	Force bool
}

func newUnitKillCmd(f *cli.Factory, runF func(context.Context, *unitKillOptions) error) *cobra.Command {
	o := &unitKillOptions{IO: f.IOStreams, Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "kill APP UNIT",
		Annotations: atLevel(access.Developer, deleting(argApp, argUnit)),
		Short:       "Kill a unit; its process starts a replacement (a one-off run just stops)",
		Long: `Kill a unit: its process starts a replacement. A one-off run's pod (process
"run" in 'tug unit list', such as one left by 'tug run --detach') is stopped
and removed for good, with the Secret of its --env.`,
		Example: `  tug unit kill shop shop-web-7d9f-b2
  tug unit kill shop shop-run-x7k2q`,
		Args: cli.ExactArgs("APP", "UNIT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Unit = args[0], args[1]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if err := app.ValidateUnitName(o.Unit); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runUnitKill(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.Force, "force", false, "Kill at once, without the grace period")
	return cmd
}

func runUnitKill(ctx context.Context, o *unitKillOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	if _, err := s.GetApp(ctx, o.App); err != nil {
		return err
	}
	u, err := app.KillUnit(ctx, s.Client, s.Namespace, o.App, o.Unit, o.Force)
	if err != nil {
		return err
	}
	if u.Process == app.RunProcess {
		fmt.Fprintf(o.IO.ErrOut, "run %s stopped and removed\n", o.Unit)
		return nil
	}
	fmt.Fprintf(o.IO.ErrOut, "unit %s killed; a replacement is starting\n", o.Unit)
	return nil
}
