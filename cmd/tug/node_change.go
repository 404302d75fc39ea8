package main

// tug node add, tug node update.

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/node"
)

// ---------------------------------------------------------------- add

// nodeAddOptions are `tug node add`.
type nodeAddOptions struct {
	IO *cli.IOStreams
	// PoolTarget is the cluster of the pool, or the one named (poolTarget).
	PoolTarget func(pool, only string) (cluster.Target, error)

	node.AddOptions
	Metadata []string
	Cluster  string
	Output   cli.OutputFormat
}

func newNodeAddCmd(f *cli.Factory, runF func(context.Context, *nodeAddOptions) error) *cobra.Command {
	o := &nodeAddOptions{IO: f.IOStreams, PoolTarget: func(pool, only string) (cluster.Target, error) { return poolTarget(f, pool, only) }}
	cmd := &cobra.Command{
		Use:         "add ADDRESS --pool POOL",
		Annotations: atLevel(levelClusterAdmin, argsAre(argAddress)),
		Short:       "Put a node in a pool, or register a node whose kubelet will join",
		Long: `Put a node in a pool. ADDRESS is the node's name or one of its addresses.

When a Node has that name or address, tug adopts it: it sets the pool label
tug.dev/pool, the metadata (annotations under metadata.tug.dev/) and, with
--iaas-id, the annotation tug.dev/iaas-id and the Node's providerID if that is
still empty.

When none does, tug registers a Node object named ADDRESS (lower case, a URL's
scheme and port dropped) for a machine whose kubelet will join under that name
(kubelet --hostname-override=ADDRESS); the kubelet adopts the object, keeping
its pool and metadata. Until then the node is not-ready and nothing is
scheduled on it. See "Adding nodes" in docs/guide.md.

The cluster is the pool's (see 'tug cluster'), or --cluster. Adding twice
updates the node.`,
		Example: `  tug node add node7 --pool web
  tug node add 10.0.0.7 --pool gpu --iaas-id i-0abc123 --metadata rack=r12`,
		Args: cli.ExactArgs("ADDRESS"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Address = args[0]
			if err := o.AddOptions.Validate(); err != nil {
				return err
			}
			md, err := node.ParseMetadata(o.Metadata, false)
			if err != nil {
				return err
			}
			o.AddOptions.Metadata = md
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runNodeAdd(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Pool the node joins (required)")
	cmd.Flags().StringVar(&o.IaaSID, "iaas-id", "", "The machine's id at its provider")
	cmd.Flags().StringArrayVar(&o.Metadata, "metadata", nil, "Metadata KEY=VALUE to record on the node; repeat for several")
	addClusterFlag(cmd, &o.Cluster)
	cli.AddFormatFlag(cmd, &o.Output)
	return cmd
}

func runNodeAdd(ctx context.Context, o *nodeAddOptions) error {
	t, err := o.PoolTarget(o.Pool, o.Cluster)
	if err != nil {
		return err
	}
	res, err := node.Add(ctx, t, o.AddOptions)
	if err != nil {
		return err
	}
	return cli.OutputOptions{Format: o.Output}.Print(o.IO, res, func() error {
		n := res.Node
		var msg string
		switch {
		case res.Registered:
			msg = fmt.Sprintf("node %q registered in pool %q (cluster %s); it joins when its kubelet starts with --hostname-override=%s", n.Name, n.Pool, n.Cluster, n.Name)
		case !res.Changed:
			msg = fmt.Sprintf("node %q is already in pool %q (cluster %s); nothing changed", n.Name, n.Pool, n.Cluster)
		default:
			msg = fmt.Sprintf("node %q added to pool %q (cluster %s)", n.Name, n.Pool, n.Cluster)
		}
		_, err := fmt.Fprintln(o.IO.Out, msg)
		return err
	})
}

// ---------------------------------------------------------------- update

// nodeUpdateOptions are `tug node update`.
type nodeUpdateOptions struct {
	IO       *cli.IOStreams
	Targets  func(only string) ([]cluster.Target, error)
	Clusters func() (*cluster.Config, error)

	Node string
	node.UpdateOptions
	Metadata []string
	Cluster  string
	Output   cli.OutputFormat
}

func newNodeUpdateCmd(f *cli.Factory, runF func(context.Context, *nodeUpdateOptions) error) *cobra.Command {
	o := &nodeUpdateOptions{IO: f.IOStreams, Targets: targetsFor(f), Clusters: loadClusters}
	cmd := &cobra.Command{
		Use:         "update NODE",
		Annotations: atLevel(levelClusterAdmin, argsAre(argNode)),
		Short:       "Change a node's pool or metadata, or disable and enable it",
		Long: `Change a node. --disable adds the NoSchedule taint tug.dev/disabled: new
units go elsewhere, units already there keep running. --enable removes it, and
also undoes the cordon an interrupted 'tug node remove' leaves behind, so the
node takes units again. --metadata KEY= deletes KEY.`,
		Example: `  tug node update node7 --disable
  tug node update node7 --enable --metadata rack=r13 --metadata old=`,
		Args: cli.ExactArgs("NODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			md, err := node.ParseMetadata(o.Metadata, true)
			if err != nil {
				return err
			}
			o.UpdateOptions.Metadata = md
			if err := o.Validate(); err != nil {
				return err
			}
			o.Node = args[0]
			if err := node.ValidateRef(o.Node); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runNodeUpdate(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Move the node to this pool")
	cmd.Flags().BoolVar(&o.Enable, "enable", false, "Let the node take new units again")
	cmd.Flags().BoolVar(&o.Disable, "disable", false, "Keep new units off the node (units there keep running)")
	cmd.Flags().StringArrayVar(&o.Metadata, "metadata", nil, "Metadata KEY=VALUE to set, or KEY= to delete; repeat for several")
	addClusterFlag(cmd, &o.Cluster)
	cli.AddFormatFlag(cmd, &o.Output)
	return cmd
}

func runNodeUpdate(ctx context.Context, o *nodeUpdateOptions) error {
	found, err := findNode(ctx, o.Targets, o.Node, o.Cluster)
	if err != nil {
		return err
	}
	if o.Pool != "" {
		cfg, err := o.Clusters()
		if err != nil {
			return err
		}
		if err := cfg.CheckNodePool(o.Pool, found.Target.Cluster, found.Node.Name); err != nil {
			return err
		}
	}
	res, err := node.Update(ctx, found, o.UpdateOptions)
	if err != nil {
		return err
	}
	return cli.OutputOptions{Format: o.Output}.Print(o.IO, res, func() error {
		if !res.Changed {
			_, err := fmt.Fprintf(o.IO.Out, "node %q already as asked (%s); nothing changed\n", res.Node.Name, res.Node.Status)
			return err
		}
		msg := fmt.Sprintf("node %q updated: %s", res.Node.Name, res.Node.Status)
		if res.Node.Pool != "" {
			msg += fmt.Sprintf(", pool %q", res.Node.Pool)
		}
		switch {
		case o.Disable:
			msg += "; new units go elsewhere, units there keep running"
		case o.Enable:
			msg += "; it takes new units again"
		}
		_, err := fmt.Fprintln(o.IO.Out, msg)
		return err
	})
}
