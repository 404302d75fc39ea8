package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
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
	cmd.AddCommand(newVolumeCreateCmd(f, nil), newVolumeBindCmd(f, nil), newVolumeUnbindCmd(f, nil), newVolumeListCmd(f, nil), newVolumeRemoveCmd(f, nil))
	return cmd
}
