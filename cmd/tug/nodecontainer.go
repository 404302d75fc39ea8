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
	cmd.AddCommand(newNodeContainerAddCmd(f), newNodeContainerListCmd(f), newNodeContainerUpgradeCmd(f), newNodeContainerRemoveCmd(f))
	return cmd
}

// ncTargets are the clusters a node container command acts on: the pool's
// cluster, or every cluster without --pool.
func ncTargets(f *cli.Factory, pool, only string) ([]cluster.Target, error) {
	if pool != "" {
		if err := kube.ValidateLabelValue("pool", pool); err != nil {
			return nil, inputerr.Wrap(err)
		}
		t, err := poolTarget(f, pool, only)
		if err != nil {
			return nil, err
		}
		return []cluster.Target{t}, nil
	}
	ts, err := clusterTargets(f, only)
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
func (w *waitFlags) fleet(f *cli.Factory, ts []cluster.Target) nodecontainer.Fleet {
	fl := nodecontainer.Fleet{Targets: ts, Progress: f.Progress()}
	if !w.NoWait {
		fl.Wait = w.Timeout
	}
	return fl
}

// ---------------------------------------------------------------- add

type ncAddOptions struct {
	nodecontainer.AddOptions
	Env     []string
	Cluster string
	Wait    waitFlags
	Output  cli.OutputFormat
}

func newNodeContainerAddCmd(f *cli.Factory) *cobra.Command {
	o := &ncAddOptions{}
	cmd := &cobra.Command{
		Use:         "add NAME --image IMAGE",
		Annotations: argsAre(argNewName),
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
			ts, err := ncTargets(f, o.Pool, o.Cluster)
			if err != nil {
				return err
			}
			all, err := o.Wait.fleet(f, ts).Add(cmd.Context(), o.AddOptions)
			if err != nil {
				return err
			}
			return cli.OutputOptions{Format: o.Output}.Print(f.IOStreams, all, func() error { return printNodeContainers(f, all, false) })
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

func printNodeContainers(f *cli.Factory, cts []nodecontainer.Container, noHeaders bool) error {
	t := cli.NewTable("name", "pool", "image", "ready", "up-to-date", "namespace", "cluster")
	for _, c := range cts {
		pool := c.Pool
		if pool == "" {
			pool = "(default)"
		}
		t.AddRow(c.Name, pool, c.Image, fmt.Sprintf("%d/%d", c.Ready, c.Desired), fmt.Sprint(c.UpToDate), c.Namespace, c.Cluster)
	}
	return t.Render(f.IOStreams, noHeaders)
}

// ---------------------------------------------------------------- list

func newNodeContainerListCmd(f *cli.Factory) *cobra.Command {
	var (
		o       cli.OutputOptions
		cluster string
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List node containers, per pool and cluster",
		Example: `  tug node-container list
  tug node-container list --cluster edge`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := clusterTargets(f, cluster)
			if err != nil {
				return err
			}
			all, failed, err := nodecontainer.Fleet{Targets: ts}.List(cmd.Context())
			if err != nil {
				return err
			}
			return o.Print(f.IOStreams, all, func() error {
				for _, err := range failed {
					defer fmt.Fprintf(f.IOStreams.ErrOut, "warning: %v\n", err)
				}
				if len(all) == 0 {
					fmt.Fprintf(f.IOStreams.ErrOut, "no node containers; add one with '%s node-container add NAME --image IMAGE'\n", f.CommandName)
					return nil
				}
				return printNodeContainers(f, all, o.NoHeaders)
			})
		},
	}
	addClusterFlag(cmd, &cluster)
	cli.AddOutputFlags(cmd, &o)
	return cmd
}

// ---------------------------------------------------------------- upgrade

func newNodeContainerUpgradeCmd(f *cli.Factory) *cobra.Command {
	var (
		pool, image, cluster string
		w                    waitFlags
		format               cli.OutputFormat
	)
	cmd := &cobra.Command{
		Use:         "upgrade NAME",
		Annotations: argsAre(argNodeContainer),
		Short:       "Roll a node container onto a new image, or restart it, node by node",
		Long: `Roll a node container's pods, one node at a time, and wait until every node
runs the new one. With --image, onto that image; without, onto the same spec
again, which pulls a moving tag (:latest, or no tag) afresh.`,
		Example: `  tug node-container upgrade agent --image registry.example.com/agent:1.5
  tug node-container upgrade agent --pool gpu`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nodecontainer.ValidateName(args[0]); err != nil {
				return err
			}
			ts, err := ncTargets(f, pool, cluster)
			if err != nil {
				return err
			}
			all, err := w.fleet(f, ts).Upgrade(cmd.Context(), args[0], pool, image)
			if err != nil {
				return err
			}
			return cli.OutputOptions{Format: format}.Print(f.IOStreams, all, func() error { return printNodeContainers(f, all, false) })
		},
	}
	cmd.Flags().StringVar(&pool, "pool", "", "Only this pool's version")
	cmd.Flags().StringVar(&image, "image", "", "New image (default: the same, pulled again if its tag moves)")
	addClusterFlag(cmd, &cluster)
	w.add(cmd)
	cli.AddFormatFlag(cmd, &format)
	return cmd
}

// ---------------------------------------------------------------- remove

func newNodeContainerRemoveCmd(f *cli.Factory) *cobra.Command {
	var (
		pool, cluster string
		yes           bool
	)
	cmd := &cobra.Command{
		Use:         "remove NAME",
		Annotations: argsAre(argNodeContainer),
		Aliases:     []string{"rm", "delete"},
		Short:       "Stop a node container on every node (only a pool's version with --pool)",
		Example: `  tug node-container remove log-shipper --yes
  tug node-container remove log-shipper --pool gpu --yes`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nodecontainer.ValidateName(args[0]); err != nil {
				return err
			}
			ts, err := ncTargets(f, pool, cluster)
			if err != nil {
				return err
			}
			action := fmt.Sprintf("remove node container %q from every node", args[0])
			if pool != "" {
				action = fmt.Sprintf("remove node container %q from the nodes of pool %q", args[0], pool)
			}
			if err := cli.ConfirmOrFlag(cmd.Context(), f.IOStreams, f.Prompter(), yes, cli.Confirmation{Action: action}); err != nil {
				return err
			}
			return nodecontainer.Fleet{Targets: ts, Progress: f.Progress()}.Remove(cmd.Context(), args[0], pool)
		},
	}
	cmd.Flags().StringVar(&pool, "pool", "", "Only this pool's version")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "Do not ask for confirmation")
	addClusterFlag(cmd, &cluster)
	return cmd
}
