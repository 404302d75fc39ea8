package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/volume"
)

// volumeListOptions are `tug volume list`.
type volumeListOptions struct {
	IO          *cli.IOStreams
	Store       func() (*app.Store, error)
	CommandName string

	Output cli.OutputOptions
}

func newVolumeListCmd(f *cli.Factory, runF func(context.Context, *volumeListOptions) error) *cobra.Command {
	o := &volumeListOptions{IO: f.IOStreams, Store: storeFor(f), CommandName: f.CommandName}
	cmd := &cobra.Command{
		Use:         "list",
		Annotations: atLevel(access.Viewer, nil),
		Aliases:     []string{"ls"},
		Short:       "List the namespace's volumes and the apps that mount them",
		Example:     `  tug volume list`,
		Long: `List volumes with their size, access mode, storage class, status and the apps
whose deployed release mounts them. Status is Pending until storage is found
for the volume (a provisioner, or a PersistentVolume an admin made), then Bound.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runVolumeList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runVolumeList(ctx context.Context, o *volumeListOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	vols, err := volume.List(ctx, s)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, vols, func() error {
		if len(vols) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "no volumes in namespace %q; create one with '%s volume create NAME --size 1Gi'\n", s.Namespace, o.CommandName)
			return nil
		}
		t := cli.NewTable("name", "size", "access", "storage-class", "status", "apps")
		for _, v := range vols {
			size := v.Size
			if v.Capacity != "" && v.Capacity != v.Size {
				size += " (" + v.Capacity + ")"
			}
			t.AddRow(v.Name, size, v.AccessMode, dash(v.StorageClass), v.Status, dash(strings.Join(v.Apps, ",")))
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}
