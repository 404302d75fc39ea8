package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/lifecycle"
)

// appRemoveOptions are `tug app remove`.
type appRemoveOptions struct {
	Changer  appChanger
	Prompter func() cli.Prompter

	App      string
	Yes      bool
	MoveCopy bool
}

func newAppRemoveCmd(f *cli.Factory, runF func(context.Context, *appRemoveOptions) error) *cobra.Command {
	o := &appRemoveOptions{Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:         "remove APP",
		Annotations: deleting(argApp),
		Aliases:     []string{"rm", "delete"},
		Short:       "Remove an app and everything it runs",
		Example:     `  tug app remove shop --yes`,
		Long: `Remove an app: its units, Deployments, Service, release history and config.
Waits until its units are gone. Asks first on a terminal; elsewhere needs --yes.`,
		Args: cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAppRemove(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Remove without asking")
	takesLock(cmd, &o.Changer.WaitLock)
	cmd.Flags().BoolVar(&o.MoveCopy, "move-copy", false, "Remove the app although this copy is a move's new copy (only a leftover whose old copy no cluster holds)")
	return cmd
}

func runAppRemove(ctx context.Context, o *appRemoveOptions) error {
	d, err := o.Changer.Deps(ctx)
	if err != nil {
		return err
	}
	// fail on a missing app before asking about it
	if _, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(ctx, o.App); err != nil {
		return err
	}
	if err := cli.ConfirmOrFlag(ctx, o.Changer.IO, o.Prompter(), o.Yes, cli.Confirmation{
		Action: fmt.Sprintf("remove app %q and all its units, releases and config", o.App),
	}); err != nil {
		return err
	}
	p := o.Changer.Progress()
	d.Progress = p
	if err := lifecycle.Remove(ctx, d, o.App, lifecycle.RemoveOptions{MoveCopy: o.MoveCopy}); err != nil {
		p.Fail("removing app " + o.App)
		return err
	}
	p.Done(fmt.Sprintf("app %q removed", o.App))
	return nil
}
