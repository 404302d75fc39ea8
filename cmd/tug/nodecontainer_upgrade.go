package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/nodecontainer"
)

// ncUpgradeOptions are `tug node-container upgrade`.
type ncUpgradeOptions struct {
	IO       *cli.IOStreams
	Clusters ncClusters

	Name    string
	Pool    string
	Image   string
	Cluster string
	Wait    waitFlags
	Output  cli.OutputFormat
}

func newNodeContainerUpgradeCmd(f *cli.Factory, runF func(context.Context, *ncUpgradeOptions) error) *cobra.Command {
	o := &ncUpgradeOptions{IO: f.IOStreams, Clusters: ncClustersFor(f)}
	cmd := &cobra.Command{
		Use:         "upgrade NAME",
		Annotations: atLevel(levelClusterAdmin, argsAre(argNodeContainer)),
		Short:       "Roll a node container onto a new image, or restart it, node by node",
		Long: `Roll a node container's pods, one node at a time, and wait until every node
runs the new one. With --image, onto that image; without, onto the same spec
again, which pulls a moving tag (:latest, or no tag) afresh.`,
		Example: `  tug node-container upgrade agent --image registry.example.com/agent:1.5
  tug node-container upgrade agent --pool gpu`,
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
			return runNodeContainerUpgrade(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Only this pool's version")
	cmd.Flags().StringVar(&o.Image, "image", "", "New image (default: the same, pulled again if its tag moves)")
	addClusterFlag(cmd, &o.Cluster)
	o.Wait.add(cmd)
	cli.AddFormatFlag(cmd, &o.Output)
	return cmd
}

func runNodeContainerUpgrade(ctx context.Context, o *ncUpgradeOptions) error {
	ts, err := o.Clusters.targets(o.Pool, o.Cluster)
	if err != nil {
		return err
	}
	all, err := o.Wait.fleet(o.Clusters.Progress(), ts).Upgrade(ctx, o.Name, o.Pool, o.Image)
	if err != nil {
		return err
	}
	return cli.OutputOptions{Format: o.Output}.Print(o.IO, all, func() error { return printNodeContainers(o.IO, all, false) })
}
