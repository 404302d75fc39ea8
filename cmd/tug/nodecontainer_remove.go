package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/nodecontainer"
)

// ncRemoveOptions are `tug node-container remove`.
type ncRemoveOptions struct {
	IO       *cli.IOStreams
	Clusters ncClusters
	Prompter func() cli.Prompter

	Name    string
	Pool    string
	Cluster string
	Yes     bool
}

func newNodeContainerRemoveCmd(f *cli.Factory, runF func(context.Context, *ncRemoveOptions) error) *cobra.Command {
	o := &ncRemoveOptions{IO: f.IOStreams, Clusters: ncClustersFor(f), Prompter: f.Prompter}
	cmd := &cobra.Command{
		Use:         "remove NAME",
		Annotations: atLevel(levelClusterAdmin, argsAre(argNodeContainer)),
		Aliases:     []string{"rm", "delete"},
		Short:       "Stop a node container on every node (only a pool's version with --pool)",
		Example: `  tug node-container remove log-shipper --yes
  tug node-container remove log-shipper --pool gpu --yes`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := nodecontainer.ValidateName(o.Name); err != nil {
				return err
			}
			if err := validateNCPool(o.Pool); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runNodeContainerRemove(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Only this pool's version")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation")
	addClusterFlag(cmd, &o.Cluster)
	return cmd
}

func runNodeContainerRemove(ctx context.Context, o *ncRemoveOptions) error {
	ts, err := o.Clusters.targets(o.Pool, o.Cluster)
	if err != nil {
		return err
	}
	action := fmt.Sprintf("remove node container %q from every node", o.Name)
	if o.Pool != "" {
		action = fmt.Sprintf("remove node container %q from the nodes of pool %q", o.Name, o.Pool)
	}
	if err := cli.ConfirmOrFlag(ctx, o.IO, o.Prompter(), o.Yes, cli.Confirmation{Action: action}); err != nil {
		return err
	}
	return nodecontainer.Fleet{Targets: ts, Progress: o.Clusters.Progress()}.Remove(ctx, o.Name, o.Pool)
}
