package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/volume"
)

// volumeRemoveOptions are `tug volume remove`.
type volumeRemoveOptions struct {
	IO       *cli.IOStreams
	Store    func() (*app.Store, error)
	Prompter func() cli.Prompter

	Name string
	Yes  bool
}

func newVolumeRemoveCmd(f *cli.Factory, runF func(context.Context, *volumeRemoveOptions) error) *cobra.Command {
	o := &volumeRemoveOptions{IO: f.IOStreams, Store: storeFor(f), Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:         "remove NAME",
		Annotations: atLevel(access.Operator, argsAre(argVolume)),
		Aliases:     []string{"rm", "delete"},
		Short:       "Remove a volume and its data (refused while an app mounts it)",
		Example:     `  tug volume remove uploads --yes`,
		Long: `Remove a volume. Its data is deleted or kept as its StorageClass's reclaim
policy says. Refused while an app's deployed release mounts it: unbind it
first. Asks first on a terminal; elsewhere needs --yes.`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := volume.ValidateName(o.Name); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runVolumeRemove(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Remove without asking")
	return cmd
}

func runVolumeRemove(ctx context.Context, o *volumeRemoveOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	// a missing or bound volume fails before anyone is asked
	v, err := volume.Get(ctx, s, o.Name)
	if err != nil {
		return err
	}
	if len(v.Apps) > 0 {
		return &volume.InUseError{Volume: o.Name, Apps: v.Apps}
	}
	if err := cli.ConfirmOrFlag(ctx, o.IO, o.Prompter(), o.Yes, cli.Confirmation{
		Action: fmt.Sprintf("remove volume %q and its data", o.Name),
	}); err != nil {
		return err
	}
	if err := volume.Remove(ctx, s, o.Name); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.IO.ErrOut, "volume %q removed\n", o.Name)
	return err
}
