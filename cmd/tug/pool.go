package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/node"
)

func newPoolCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pool",
		Short: "List pools: groups of nodes that apps are placed on",
		Long: `A pool is the node label tug.dev/pool: 'tug node add|update --pool' puts nodes
in one, 'tug app create --pool' and 'tug app pool set' place apps in one.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "cluster",
	}
	cmd.AddCommand(newPoolListCmd(f, nil))
	return cmd
}

// poolListOptions are `tug pool list`.
type poolListOptions struct {
	IO          *cli.IOStreams
	Targets     func(only string) ([]cluster.Target, error)
	CommandName string

	Cluster string
	Output  cli.OutputOptions
}

func newPoolListCmd(f *cli.Factory, runF func(context.Context, *poolListOptions) error) *cobra.Command {
	o := &poolListOptions{IO: f.IOStreams, Targets: targetsFor(f), CommandName: f.CommandName}
	cmd := &cobra.Command{
		Use:         "list",
		Annotations: atLevel(levelClusterAdmin, nil),
		Aliases:     []string{"ls"},
		Short:       "List the pools of every cluster, with their nodes and apps",
		Example: `  tug pool list
  tug pool list --cluster edge -o json`,
		Long: `List the pools of every configured cluster: the pools its nodes are labelled
with, the pools its apps are placed in, and the pools the cluster is
configured to hold. READY counts the nodes that can take new units (ready,
not cordoned, not disabled): a pool with apps and no ready node cannot run
new units.

The apps come from their records where you may list ConfigMaps in every
namespace; with the tug-cluster-admin role alone, from tug's Deployments
(their node selector names the pool), which leaves out apps never deployed.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runPoolList(cmd.Context(), o)
		},
	}
	addClusterFlag(cmd, &o.Cluster)
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runPoolList(ctx context.Context, o *poolListOptions) error {
	ts, err := o.Targets(o.Cluster)
	if err != nil {
		return err
	}
	res, err := node.ListPools(ctx, ts)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, res, func() error {
		defer warnClusters(o.IO, res.Unreachable, res.Warnings)
		if len(res.Pools) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "no pools: put nodes in one with '%s node update NODE --pool POOL'\n", o.CommandName)
			return nil
		}
		t := cli.NewTable("pool", "cluster", "nodes", "ready", "apps")
		for _, p := range res.Pools {
			t.AddRow(p.Name, p.Cluster, dash(strings.Join(p.Nodes, ",")), fmt.Sprint(p.Ready), dash(strings.Join(p.Apps, ",")))
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}
