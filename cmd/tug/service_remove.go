package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/service"
)

// serviceRemoveOptions are `tug service remove`.
type serviceRemoveOptions struct {
	IO       *cli.IOStreams
	Deps     func(context.Context) (service.Deps, error)
	Prompter func() cli.Prompter

	Name       string
	DeleteData bool
	Yes        bool
	Output     cli.OutputOptions
}

func newServiceRemoveCmd(f *cli.Factory, runF func(context.Context, *serviceRemoveOptions) error) *cobra.Command {
	o := &serviceRemoveOptions{IO: f.IOStreams, Deps: serviceDepsFor(f), Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:         "remove NAME [--delete-data]",
		Annotations: atLevel(access.Operator, argsAre(argService)),
		Aliases:     []string{"rm", "delete"},
		Short:       "Remove a service (refused while bound); its data stays unless --delete-data",
		Long: `Remove a service's objects. Refused while an app is bound to it: unbind it
first. Its volume, and the credentials its data was made with, stay unless
--delete-data: a create of the same name and plan later runs on that data.
Asks first on a terminal; elsewhere needs --yes.`,
		Example: "  tug service remove db --yes\n  tug service remove db --delete-data --yes",
		Args:    cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := service.ValidateName(o.Name); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runServiceRemove(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.DeleteData, "delete-data", false, "Delete its volume and credentials too: the data is gone")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Remove without asking")
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

func runServiceRemove(ctx context.Context, o *serviceRemoveOptions) error {
	d, err := o.Deps(ctx)
	if err != nil {
		return err
	}
	// a missing or bound service fails before anyone is asked
	if err := service.CheckRemovable(ctx, d, o.Name); err != nil {
		return err
	}
	action := fmt.Sprintf("remove service %q (its volume stays; --delete-data deletes it)", o.Name)
	if o.DeleteData {
		action = fmt.Sprintf("remove service %q and DELETE ITS DATA", o.Name)
	}
	if err := cli.ConfirmOrFlag(ctx, o.IO, o.Prompter(), o.Yes, cli.Confirmation{Action: action}); err != nil {
		return err
	}
	res, err := service.Remove(ctx, d, o.Name, o.DeleteData)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, res, func() error {
		if len(res.Kept) == 0 {
			_, err := fmt.Fprintf(o.IO.ErrOut, "service %q removed with its data\n", o.Name)
			return err
		}
		_, err := fmt.Fprintf(o.IO.ErrOut, "service %q removed; kept: %s (a create of the same name and plan uses them again; delete them with 'kubectl delete pvc,secret -l tug.dev/service=%s')\n", o.Name, strings.Join(res.Kept, ", "), o.Name)
		return err
	})
}
