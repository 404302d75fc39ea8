package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/volume"
)

// volumeBindOptions are `tug volume bind`.
type volumeBindOptions struct {
	Changer appChanger
	Store   func() (*app.Store, error)
	Rollout rolloutFlags

	App     string
	Binding app.VolumeBinding
}

func newVolumeBindCmd(f *cli.Factory, runF func(context.Context, *volumeBindOptions) error) *cobra.Command {
	o := &volumeBindOptions{Store: storeFor(f)}
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
			o.App, o.Binding.Volume = args[0], args[1]
			if err := volume.ValidateBind(o.App, o.Binding); err != nil {
				return err
			}
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runVolumeBind(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	cmd.Flags().StringVar(&o.Binding.MountPath, "mount-path", "", "Where the volume appears in the units, e.g. /data (required)")
	cmd.Flags().StringVarP(&o.Binding.Process, "process", "p", "", "Only this process type's units (default: all)")
	cmd.Flags().BoolVar(&o.Binding.ReadOnly, "read-only", false, "Mount read-only")
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	return cmd
}

func runVolumeBind(ctx context.Context, o *volumeBindOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	b := o.Binding
	change := volume.BindChange(ctx, s.Client, s.Namespace, b)
	return rollOutChange(ctx, o.Changer, o.App, change, o.Rollout.options(), o.Rollout.Output, rollVerb{"volume " + b.Volume + " bound", "binding volume " + b.Volume + " to"})
}

// volumeUnbindOptions are `tug volume unbind`.
type volumeUnbindOptions struct {
	Changer appChanger
	Rollout rolloutFlags

	App    string
	Volume string
}

func newVolumeUnbindCmd(f *cli.Factory, runF func(context.Context, *volumeUnbindOptions) error) *cobra.Command {
	o := &volumeUnbindOptions{}
	cmd := &cobra.Command{
		Use:         "unbind APP NAME",
		Annotations: deleting(argApp, argVolume),
		Short:       "Unmount a volume from an app's units: a new release, rolled out",
		Example:     `  tug volume unbind shop uploads`,
		Long:        "Unmount a volume from an app's units. Its data stays in the volume.",
		Args:        cli.ExactArgs("APP", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Volume = args[0], args[1]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if err := volume.ValidateName(o.Volume); err != nil {
				return err
			}
			if err := o.Rollout.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runVolumeUnbind(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	o.Rollout.add(cmd, true, &o.Changer.WaitLock)
	return cmd
}

func runVolumeUnbind(ctx context.Context, o *volumeUnbindOptions) error {
	return rollOutChange(ctx, o.Changer, o.App, volume.UnbindChange(o.Volume), o.Rollout.options(), o.Rollout.Output, rollVerb{"volume " + o.Volume + " unbound", "unbinding volume " + o.Volume + " from"})
}
