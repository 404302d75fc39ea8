package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/node"
	"tug.dev/tug/pkg/text"
)

func newNodeCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "List, add, enable, disable and remove the nodes apps run on",
		Long: `Nodes of every configured cluster (see 'tug cluster'), grouped in pools by
the node label tug.dev/pool. These commands need cluster-wide permissions
(the tug-cluster-admin ClusterRole), and 'node remove' also needs
tug-cluster-admin-apps bound in each namespace that holds tug apps (see
'tug doctor --all' and docs/rbac/).`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "cluster",
	}
	cmd.AddCommand(newNodeListCmd(f, nil), newNodeInfoCmd(f, nil), newNodeAddCmd(f, nil), newNodeUpdateCmd(f, nil), newNodeRemoveCmd(f, nil))
	return cmd
}

// findNode looks a node up by name or address (checked by the command:
// node.ValidateRef) in the clusters selected.
func findNode(ctx context.Context, targets func(only string) ([]cluster.Target, error), name, only string) (*node.Found, error) {
	ts, err := targets(only)
	if err != nil {
		return nil, err
	}
	return node.Find(ctx, ts, name)
}

// ---------------------------------------------------------------- list

// nodeListOptions are `tug node list`.
type nodeListOptions struct {
	IO      *cli.IOStreams
	Targets func(only string) ([]cluster.Target, error)

	node.ListOptions
	Cluster string
	Output  cli.OutputOptions
}

func newNodeListCmd(f *cli.Factory, runF func(context.Context, *nodeListOptions) error) *cobra.Command {
	o := &nodeListOptions{IO: f.IOStreams, Targets: targetsFor(f)}
	cmd := &cobra.Command{
		Use:         "list",
		Annotations: atLevel(levelClusterAdmin, nil),
		Aliases:     []string{"ls"},
		Short:       "List the nodes of every cluster",
		Long: `List the nodes of every configured cluster: address, pool, status, the tug
units on each, taints and cluster. Status is ready, not-ready, cordoned
(being removed, or left so by an interrupted removal) or disabled (no new
units). A cluster that does not answer gets a warning; the others are listed.`,
		Example: `  tug node list
  tug node list --pool web -o json`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.ListOptions.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runNodeList(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Only nodes of this pool")
	addClusterFlag(cmd, &o.Cluster)
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runNodeList(ctx context.Context, o *nodeListOptions) error {
	ts, err := o.Targets(o.Cluster)
	if err != nil {
		return err
	}
	res, err := node.List(ctx, ts, o.ListOptions)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, res, func() error {
		defer warnClusters(o.IO, res.Unreachable, res.Warnings)
		if len(res.Nodes) == 0 {
			what := "no nodes"
			if o.Pool != "" {
				what = fmt.Sprintf("no nodes in pool %q", o.Pool)
			}
			fmt.Fprintln(o.IO.ErrOut, what)
			return nil
		}
		t := cli.NewTable("name", "address", "pool", "status", "units", "taints", "cluster")
		for _, n := range res.Nodes {
			units := "?"
			if n.Units != nil {
				units = fmt.Sprint(*n.Units)
			}
			t.AddRow(n.Name, n.Address, dash(n.Pool), n.Status, units, node.ShortTaints(n.Taints), n.Cluster)
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}

// warnClusters reports clusters that did not answer, after the table.
func warnClusters(ios *cli.IOStreams, unreachable []node.ClusterError, warnings []string) {
	for _, u := range unreachable {
		fmt.Fprintf(ios.ErrOut, "warning: cluster %s (context %q) is unreachable: %s\n", u.Cluster, u.Context, u.Error)
	}
	for _, w := range warnings {
		fmt.Fprintf(ios.ErrOut, "warning: %s\n", w)
	}
}

// ---------------------------------------------------------------- info

// nodeInfoOptions are `tug node info`.
type nodeInfoOptions struct {
	IO      *cli.IOStreams
	Targets func(only string) ([]cluster.Target, error)

	Node    string
	Cluster string
	Format  cli.OutputFormat
}

func newNodeInfoCmd(f *cli.Factory, runF func(context.Context, *nodeInfoOptions) error) *cobra.Command {
	o := &nodeInfoOptions{IO: f.IOStreams, Targets: targetsFor(f)}
	cmd := &cobra.Command{
		Use:         "info NODE",
		Annotations: atLevel(levelClusterAdmin, argsAre(argNode)),
		Short:       "Show a node: addresses, pool, capacity, conditions, taints and its units",
		Example: `  tug node info worker-1
  tug node info worker-1 --cluster edge -o yaml`,
		Long: "NODE is a node's name or one of its addresses.",
		Args: cli.ExactArgs("NODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Node = args[0]
			if err := node.ValidateRef(o.Node); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runNodeInfo(cmd.Context(), o)
		},
	}
	addClusterFlag(cmd, &o.Cluster)
	cli.AddFormatFlag(cmd, &o.Format)
	return cmd
}

func runNodeInfo(ctx context.Context, o *nodeInfoOptions) error {
	found, err := findNode(ctx, o.Targets, o.Node, o.Cluster)
	if err != nil {
		return err
	}
	info, err := node.GetInfo(ctx, found)
	if err != nil {
		return err
	}
	return cli.OutputOptions{Format: o.Format}.Print(o.IO, info, func() error { return printNodeInfo(o.IO, info) })
}

func printNodeInfo(ios *cli.IOStreams, in *node.Info) error {
	w := ios.Out
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%-13s%s\n", k+":", v)
		}
	}
	line("Node", in.Name)
	line("Cluster", in.Cluster)
	line("Pool", dash(in.Pool))
	line("Status", nodeStatus(in))
	addrs := make([]string, len(in.Addresses))
	for i, a := range in.Addresses {
		addrs[i] = a.Address + " (" + a.Type + ")"
	}
	line("Addresses", strings.Join(addrs, ", "))
	line("Provider ID", in.ProviderID)
	line("IaaS ID", in.IaaSID)
	line("Metadata", joinMap(in.Metadata, "="))
	line("Capacity", joinMap(in.Capacity, " "))
	line("Allocatable", joinMap(in.Allocatable, " "))
	line("System", nodeSystem(in.System))
	line("Created", fmt.Sprintf("%s ago (%s)", text.Age(in.CreatedAt), in.CreatedAt.Local().Format(time.RFC3339)))
	if len(in.Taints) > 0 {
		line("Taints", node.ShortTaints(in.Taints))
	}

	fmt.Fprintln(w)
	if len(in.Conditions) == 0 {
		fmt.Fprintln(w, "No conditions: no kubelet has reported for this node yet (see 'tug node add').")
	} else {
		t := cli.NewTable("condition", "status", "reason", "since", "message")
		for _, c := range in.Conditions {
			t.AddRow(c.Type, c.Status, c.Reason, text.Age(c.Since), c.Message)
		}
		if err := t.Render(ios, false); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	switch {
	case in.Warning != "":
		fmt.Fprintf(w, "Units: unknown (%s)\n", in.Warning)
	case len(in.Units) == 0:
		fmt.Fprintln(w, "No tug units on this node.")
	default:
		t := cli.NewTable("namespace", "app", "process", "unit", "ready", "ip")
		for _, u := range in.Units {
			t.AddRow(u.Namespace, u.App, u.Process, u.Name, fmt.Sprint(u.Ready), u.IP)
		}
		return t.Render(ios, false)
	}
	return nil
}

// nodeStatus is the node's status with what else holds it that the
// status does not already say: "Ready (also cordoned, disabled)".
func nodeStatus(in *node.Info) string {
	status := in.Status
	var also []string
	if in.Cordoned && status != node.StatusCordoned {
		also = append(also, "cordoned")
	}
	if in.Disabled && status != node.StatusDisabled {
		also = append(also, "disabled")
	}
	if len(also) > 0 {
		status += " (also " + strings.Join(also, ", ") + ")"
	}
	return status
}

// nodeSystem is what the kubelet reports of the machine, the parts it
// reported, comma-separated.
func nodeSystem(s node.System) string {
	var sys []string
	for _, v := range []string{s.KubeletVersion, s.OSImage, s.Architecture, s.ContainerRuntime} {
		if v != "" {
			sys = append(sys, v)
		}
	}
	return strings.Join(sys, ", ")
}

func joinMap(m map[string]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + sep + m[k]
	}
	return strings.Join(parts, ", ")
}
