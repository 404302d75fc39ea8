package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/nodecontainer"
	"tug.dev/tug/pkg/progress"
)

func newNodeContainerCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "node-container",
		Aliases: []string{"nc"},
		Short:   "Run a container on every node of a pool (agents, log shippers)",
		Long: `A node container runs once on every node of a pool: a DaemonSet in the
namespace (-n, else the context's) of the pool's cluster. Without --pool it
runs on every node except those of pools that have their own version of it.
It also runs on disabled nodes: disabling keeps only app units away.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "cluster",
	}
	cmd.AddCommand(newNodeContainerAddCmd(f, nil), newNodeContainerListCmd(f, nil), newNodeContainerUpgradeCmd(f, nil), newNodeContainerRemoveCmd(f, nil))
	return cmd
}

// ncClusters reach the clusters a node container command acts on, and
// report its progress.
type ncClusters struct {
	Targets    func(only string) ([]cluster.Target, error)
	PoolTarget func(pool, only string) (cluster.Target, error)
	Progress   func() progress.Reporter
}

func ncClustersFor(f *cli.Factory) ncClusters {
	return ncClusters{Targets: targetsFor(f), Progress: f.Progress,
		PoolTarget: func(pool, only string) (cluster.Target, error) { return poolTarget(f, pool, only) }}
}

// validateNCPool checks --pool before anything is asked of a cluster.
func validateNCPool(pool string) error {
	if pool == "" {
		return nil
	}
	if err := kube.ValidateLabelValue("pool", pool); err != nil {
		return inputerr.Wrap(err)
	}
	return nil
}

// targets are the clusters a node container command acts on: the pool's
// cluster (the pool checked by validateNCPool), or every cluster without
// --pool.
func (c ncClusters) targets(pool, only string) ([]cluster.Target, error) {
	if pool != "" {
		t, err := c.PoolTarget(pool, only)
		if err != nil {
			return nil, err
		}
		return []cluster.Target{t}, nil
	}
	ts, err := c.Targets(only)
	if err != nil {
		return nil, err
	}
	if len(ts) == 1 && ts[0].Err != nil {
		return nil, ts[0].Err
	}
	return ts, nil
}

// waitFlags are the flags of commands that roll node containers out.
type waitFlags struct {
	NoWait  bool
	Timeout time.Duration
}

func (w *waitFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&w.NoWait, "no-wait", false, "Return once the change is stored; do not wait for the pods")
	cmd.Flags().DurationVar(&w.Timeout, "timeout", 5*time.Minute, "How long to wait for the pods")
}

// fleet is the node container command's clusters, with its wait flags.
func (w *waitFlags) fleet(p progress.Reporter, ts []cluster.Target) nodecontainer.Fleet {
	fl := nodecontainer.Fleet{Targets: ts, Progress: p}
	if !w.NoWait {
		fl.Wait = w.Timeout
	}
	return fl
}

func printNodeContainers(ios *cli.IOStreams, cts []nodecontainer.Container, noHeaders bool) error {
	t := cli.NewTable("name", "pool", "image", "ready", "up-to-date", "namespace", "cluster")
	for _, c := range cts {
		pool := c.Pool
		if pool == "" {
			pool = "(default)"
		}
		t.AddRow(c.Name, pool, c.Image, fmt.Sprintf("%d/%d", c.Ready, c.Desired), fmt.Sprint(c.UpToDate), c.Namespace, c.Cluster)
	}
	return t.Render(ios, noHeaders)
}
