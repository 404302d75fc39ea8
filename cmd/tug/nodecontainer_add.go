package main

import (
	"context"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/nodecontainer"
)

// ncAddOptions are `tug node-container add`.
type ncAddOptions struct {
	IO       *cli.IOStreams
	Clusters ncClusters

	nodecontainer.AddOptions
	Env     []string
	Cluster string
	Wait    waitFlags
	Output  cli.OutputFormat
}

func newNodeContainerAddCmd(f *cli.Factory, runF func(context.Context, *ncAddOptions) error) *cobra.Command {
	o := &ncAddOptions{IO: f.IOStreams, Clusters: ncClustersFor(f)}
	cmd := &cobra.Command{
		Use:         "add NAME --image IMAGE",
		Annotations: atLevel(levelClusterAdmin, argsAre(argNewName)),
		Short:       "Run a container on every node of a pool, or change one",
		Long: `Run a container on every node of --pool (or, without it, of every pool that
has no version of its own), and wait until it runs on each. Adding again
updates it, rolling node by node.`,
		Example: `  tug node-container add agent --image registry.example.com/agent:1.4
  tug node-container add agent --image registry.example.com/agent:1.5-gpu --pool gpu --env MODE=gpu --privileged`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if o.Image == "" {
				return inputerr.Errorf("missing --image: the image to run on every node")
			}
			env, err := nodecontainer.ParseEnv(o.Env)
			if err != nil {
				return inputerr.Wrap(err)
			}
			o.AddOptions.Env = env
			if err := o.Validate(); err != nil {
				return err
			}
			if err := validateNCPool(o.Pool); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runNodeContainerAdd(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Image, "image", "", "Image to run (required)")
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Only on the nodes of this pool")
	cmd.Flags().StringArrayVar(&o.Env, "env", nil, "Environment variable NAME=VALUE; repeat for several")
	cmd.Flags().BoolVar(&o.Privileged, "privileged", false, "Run the container privileged (full access to the node)")
	addClusterFlag(cmd, &o.Cluster)
	o.Wait.add(cmd)
	cli.AddFormatFlag(cmd, &o.Output)
	return cmd
}

func runNodeContainerAdd(ctx context.Context, o *ncAddOptions) error {
	ts, err := o.Clusters.targets(o.Pool, o.Cluster)
	if err != nil {
		return err
	}
	all, err := o.Wait.fleet(o.Clusters.Progress(), ts).Add(ctx, o.AddOptions)
	if err != nil {
		return err
	}
	return cli.OutputOptions{Format: o.Output}.Print(o.IO, all, func() error { return printNodeContainers(o.IO, all, false) })
}
