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

// volumeCreateOptions are `tug volume create`.
type volumeCreateOptions struct {
	IO          *cli.IOStreams
	Store       func() (*app.Store, error)
	CommandName string

	volume.CreateOptions
	Output cli.OutputOptions
}

func newVolumeCreateCmd(f *cli.Factory, runF func(context.Context, *volumeCreateOptions) error) *cobra.Command {
	o := &volumeCreateOptions{IO: f.IOStreams, Store: storeFor(f), CommandName: f.CommandName}
	cmd := &cobra.Command{
		Use:         "create NAME --size SIZE [--storage-class SC] [--access-mode RWO|RWX|ROX]",
		Annotations: atLevel(access.Operator, argsAre(argNewName)),
		Short:       "Create a volume",
		Long: `Create a volume of at least --size (a quantity: 500Mi, 1Gi, 10G). Its storage
comes from --storage-class (the cluster's default when not given): a
provisioner makes it, or it waits (Pending) for a PersistentVolume an admin
makes. --access-mode is RWO (read-write from one node at a time, the
default), RWX (read-write from many nodes) or ROX (read-only from many).`,
		Example: `  tug volume create uploads --size 10Gi
  tug volume create shared --size 1Gi --storage-class nfs --access-mode RWX`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runVolumeCreate(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Size, "size", "", "Storage to ask for, e.g. 1Gi (required)")
	cmd.Flags().StringVar(&o.StorageClass, "storage-class", "", "StorageClass to take it from (default: the cluster's default)")
	cmd.Flags().StringVar(&o.AccessMode, "access-mode", "RWO", "RWO, RWX or ROX")
	cli.AddFormatFlag(cmd, &o.Output.Format)
	return cmd
}

func runVolumeCreate(ctx context.Context, o *volumeCreateOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	v, err := volume.Create(ctx, s.Client, s.Namespace, o.CreateOptions)
	if err != nil {
		return err
	}
	if v.Warning != "" {
		fmt.Fprintf(o.IO.ErrOut, "warning: volume %q: %s\n", v.Name, v.Warning)
	}
	return o.Output.Print(o.IO, v, func() error {
		_, err := fmt.Fprintf(o.IO.Out, "volume %q created (%s, %s); mount it with '%s volume bind APP %s --mount-path /data'\n", v.Name, v.Size, v.AccessMode, o.CommandName, v.Name)
		return err
	})
}
