package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/volume"
)

func newVolumeCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "volume",
		Short: "Create persistent volumes and mount them into apps",
		Long: `A volume is persistent storage in the namespace: a PersistentVolumeClaim
(tug-volume-NAME). It outlives the apps that mount it; binding it to an app, or
unbinding it, is app configuration, so it makes a new release that is rolled out.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newVolumeCreateCmd(f), newVolumeBindCmd(f), newVolumeUnbindCmd(f), newVolumeListCmd(f), newVolumeRemoveCmd(f))
	return cmd
}

func newVolumeCreateCmd(f *cli.Factory) *cobra.Command {
	o := volume.CreateOptions{}
	var out cli.OutputOptions
	cmd := &cobra.Command{
		Use:         "create NAME --size SIZE [--storage-class SC] [--access-mode RWO|RWX|ROX]",
		Annotations: argsAre(argNewName),
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
			s, err := appStore(f)
			if err != nil {
				return err
			}
			v, err := volume.Create(cmd.Context(), s.Client, s.Namespace, o)
			if err != nil {
				return err
			}
			return out.Print(f.IOStreams, v, func() error {
				_, err := fmt.Fprintf(f.IOStreams.Out, "volume %q created (%s, %s); mount it with '%s volume bind APP %s --mount-path /data'\n", v.Name, v.Size, v.AccessMode, f.CommandName, v.Name)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&o.Size, "size", "", "Storage to ask for, e.g. 1Gi (required)")
	cmd.Flags().StringVar(&o.StorageClass, "storage-class", "", "StorageClass to take it from (default: the cluster's default)")
	cmd.Flags().StringVar(&o.AccessMode, "access-mode", "RWO", "RWO, RWX or ROX")
	cli.AddFormatFlag(cmd, &out.Format)
	return cmd
}

func newVolumeBindCmd(f *cli.Factory) *cobra.Command {
	var b app.VolumeBinding
	r := &rolloutFlags{}
	cmd := &cobra.Command{
		Use:         "bind APP NAME --mount-path PATH [-p PROCESS] [--read-only]",
		Annotations: argsAre(argApp, argVolume),
		Short:       "Mount a volume into an app's units: a new release, rolled out",
		Long: `Mount a volume at --mount-path in the units of every process of the app, or
of one with -p. This makes a new release, rolled out and watched like a
deploy; a rollback to an earlier release restores that release's volumes.
An RWO volume can be used from one node at a time: keep such a process to
units on one node, or use an RWX volume.`,
		Example: `  tug volume bind shop uploads --mount-path /data
  tug volume bind shop reports --mount-path /reports -p worker --read-only`,
		Args: cli.ExactArgs("APP", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b.Volume = args[1]
			if err := volume.ValidateBind(args[0], b); err != nil {
				return err
			}
			if err := r.validate(); err != nil {
				return err
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			change := volume.BindChange(cmd.Context(), s.Client, s.Namespace, b)
			return roll(cmd.Context(), changerFor(cmd, f), args[0], change, r.options(), r.Output, rollVerb{"volume " + b.Volume + " bound", "binding volume " + b.Volume + " to"})
		},
	}
	cmd.Flags().StringVar(&b.MountPath, "mount-path", "", "Where the volume appears in the units, e.g. /data (required)")
	cmd.Flags().StringVarP(&b.Process, "process", "p", "", "Only this process type's units (default: all)")
	cmd.Flags().BoolVar(&b.ReadOnly, "read-only", false, "Mount read-only")
	r.add(cmd, true)
	return cmd
}

func newVolumeUnbindCmd(f *cli.Factory) *cobra.Command {
	r := &rolloutFlags{}
	cmd := &cobra.Command{
		Use:         "unbind APP NAME",
		Annotations: deleting(argApp, argVolume),
		Short:       "Unmount a volume from an app's units: a new release, rolled out",
		Example:     `  tug volume unbind shop uploads`,
		Long:        "Unmount a volume from an app's units. Its data stays in the volume.",
		Args:        cli.ExactArgs("APP", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := app.ValidateName(args[0]); err != nil {
				return err
			}
			if err := volume.ValidateName(args[1]); err != nil {
				return err
			}
			if err := r.validate(); err != nil {
				return err
			}
			return roll(cmd.Context(), changerFor(cmd, f), args[0], volume.UnbindChange(args[1]), r.options(), r.Output, rollVerb{"volume " + args[1] + " unbound", "unbinding volume " + args[1] + " from"})
		},
	}
	r.add(cmd, true)
	return cmd
}

func newVolumeListCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the namespace's volumes and the apps that mount them",
		Example: `  tug volume list`,
		Long: `List volumes with their size, access mode, storage class, status and the apps
whose deployed release mounts them. Status is Pending until storage is found
for the volume (a provisioner, or a PersistentVolume an admin made), then Bound.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := appStore(f)
			if err != nil {
				return err
			}
			vols, err := volume.List(cmd.Context(), s)
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, vols, func() error {
				if len(vols) == 0 {
					fmt.Fprintf(f.IOStreams.ErrOut, "no volumes in namespace %q; create one with '%s volume create NAME --size 1Gi'\n", s.Namespace, f.CommandName)
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
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}

func newVolumeRemoveCmd(f *cli.Factory) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:         "remove NAME",
		Annotations: argsAre(argVolume),
		Aliases:     []string{"rm", "delete"},
		Short:       "Remove a volume and its data (refused while an app mounts it)",
		Example:     `  tug volume remove uploads --yes`,
		Long: `Remove a volume. Its data is deleted or kept as its StorageClass's reclaim
policy says. Refused while an app's deployed release mounts it: unbind it
first. Asks first on a terminal; elsewhere needs --yes.`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := volume.ValidateName(name); err != nil {
				return err
			}
			s, err := appStore(f)
			if err != nil {
				return err
			}
			// a missing or bound volume fails before anyone is asked
			v, err := volume.Get(cmd.Context(), s, name)
			if err != nil {
				return err
			}
			if len(v.Apps) > 0 {
				return &volume.InUseError{Volume: name, Apps: v.Apps}
			}
			if err := cli.ConfirmOrFlag(cmd.Context(), f.IOStreams, f.Prompter(), yes, cli.Confirmation{
				Action: fmt.Sprintf("remove volume %q and its data", name),
			}); err != nil {
				return err
			}
			if err := volume.Remove(cmd.Context(), s, name); err != nil {
				return err
			}
			_, err = fmt.Fprintf(f.IOStreams.ErrOut, "volume %q removed\n", name)
			return err
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "Remove without asking")
	return cmd
}
