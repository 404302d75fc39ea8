package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/lifecycle"
)

func newAppRemoveCmd(f *cli.Factory) *cobra.Command {
	var yes, moveCopy bool
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
			name := args[0]
			if err := app.ValidateName(name); err != nil {
				return err
			}
			d, err := deployDeps(cmd, f)
			if err != nil {
				return err
			}
			// fail on a missing app before asking about it
			if _, err := (&app.Store{Client: d.Client, Namespace: d.Namespace}).GetApp(cmd.Context(), name); err != nil {
				return err
			}
			if err := cli.ConfirmOrFlag(cmd.Context(), f.IOStreams, f.Prompter(), yes, cli.Confirmation{
				Action: fmt.Sprintf("remove app %q and all its units, releases and config", name),
			}); err != nil {
				return err
			}
			p := f.Progress()
			d.Progress = p
			if err := lifecycle.Remove(cmd.Context(), d, name, lifecycle.RemoveOptions{MoveCopy: moveCopy}); err != nil {
				p.Fail("removing app " + name)
				return err
			}
			p.Done(fmt.Sprintf("app %q removed", name))
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "Remove without asking")
	takesLock(cmd)
	cmd.Flags().BoolVar(&moveCopy, "move-copy", false, "Remove the app although this copy is a move's new copy (only a leftover whose old copy no cluster holds)")
	return cmd
}
