package main

import (
	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
)

func newPipelineCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pipeline",
		Short: "Pipelines: apps in order, each promoted to the next (kept on the apps' records)",
		Long: `A pipeline is an ordered list of apps, NAMESPACE/APP each, in one cluster:
dev, staging, production. It is kept on the record of every stage (no server,
no object of its own). 'tug pipeline promote' runs 'tug app promote' from one
stage to the next.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newPipelineSetCmd(f, nil), newPipelineStatusCmd(f, nil), newPipelinePromoteCmd(f, nil))
	return cmd
}
