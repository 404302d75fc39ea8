package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/nodecontainer"
)

// ncListOptions are `tug node-container list`.
type ncListOptions struct {
	IO          *cli.IOStreams
	Targets     func(only string) ([]cluster.Target, error)
	CommandName string

	Cluster string
	Output  cli.OutputOptions
}

func newNodeContainerListCmd(f *cli.Factory, runF func(context.Context, *ncListOptions) error) *cobra.Command {
	o := &ncListOptions{IO: f.IOStreams, Targets: targetsFor(f), CommandName: f.CommandName}
	cmd := &cobra.Command{
		Use:         "list",
		Annotations: atLevel(levelClusterAdmin, nil),
		Aliases:     []string{"ls"},
		Short:       "List node containers, per pool and cluster",
		Example: `  tug node-container list
  tug node-container list --cluster edge`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runNodeContainerList(cmd.Context(), o)
		},
	}
	addClusterFlag(cmd, &o.Cluster)
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runNodeContainerList(ctx context.Context, o *ncListOptions) error {
	ts, err := o.Targets(o.Cluster)
	if err != nil {
		return err
	}
	all, failed, err := nodecontainer.Fleet{Targets: ts}.List(ctx)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, all, func() error {
		for _, err := range failed {
			defer fmt.Fprintf(o.IO.ErrOut, "warning: %v\n", err)
		}
		if len(all) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "no node containers; add one with '%s node-container add NAME --image IMAGE'\n", o.CommandName)
			return nil
		}
		return printNodeContainers(o.IO, all, o.Output.NoHeaders)
	})
}
