package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/node"
	"tug.dev/tug/pkg/text"
	"tug.dev/tug/pkg/usage"
)

func newNodeCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "List, add, enable, disable and remove the nodes apps run on",
		Long: `Nodes of every configured cluster (see 'tug cluster'), grouped in pools by
the node label tug.dev/pool. These commands need cluster-wide permissions
(see 'tug doctor' and docs/rbac/).`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "cluster",
	}
	cmd.AddCommand(newNodeListCmd(f), newNodeInfoCmd(f), newNodeAddCmd(f), newNodeUpdateCmd(f), newNodeRemoveCmd(f))
	return cmd
}

// findNode looks a node up by name or address in the clusters selected.
func findNode(cmd *cobra.Command, f *cli.Factory, name, only string) (*node.Found, error) {
	ts, err := clusterTargets(f, only)
	if err != nil {
		return nil, err
	}
	found, err := node.Find(cmd.Context(), ts, name)
	return found, err
}

// ---------------------------------------------------------------- list

type nodeListOptions struct {
	node.ListOptions
	Cluster string
	Output  cli.OutputOptions
}

func newNodeListCmd(f *cli.Factory) *cobra.Command {
	o := &nodeListOptions{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the nodes of every cluster",
		Long: `List the nodes of every configured cluster: address, pool, status, the tug
units on each, taints and cluster. Status is ready, not-ready, cordoned
(being removed, or left so by an interrupted removal) or disabled (no new
units). A cluster that does not answer gets a warning; the others are listed.`,
		Example: `  tug node list
  tug node list --pool web -o json`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Pool != "" {
				if err := kube.ValidateLabelValue("pool", o.Pool); err != nil {
					return usage.Wrap(err)
				}
			}
			ts, err := clusterTargets(f, o.Cluster)
			if err != nil {
				return err
			}
			res, err := node.List(cmd.Context(), ts, o.ListOptions)
			if err != nil {
				return err
			}
			return o.Output.Print(f.IOStreams, res, func() error {
				defer warnClusters(f, res.Unreachable, res.Warnings)
				if len(res.Nodes) == 0 {
					what := "no nodes"
					if o.Pool != "" {
						what = fmt.Sprintf("no nodes in pool %q", o.Pool)
					}
					fmt.Fprintln(f.IOStreams.ErrOut, what)
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
				return t.Render(f.IOStreams, o.Output.NoHeaders)
			})
		},
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Only nodes of this pool")
	addClusterFlag(cmd, &o.Cluster)
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

// warnClusters reports clusters that did not answer, after the table.
func warnClusters(f *cli.Factory, unreachable []node.ClusterError, warnings []string) {
	for _, u := range unreachable {
		fmt.Fprintf(f.IOStreams.ErrOut, "warning: cluster %s (context %q) is unreachable: %s\n", u.Cluster, u.Context, u.Error)
	}
	for _, w := range warnings {
		fmt.Fprintf(f.IOStreams.ErrOut, "warning: %s\n", w)
	}
}

// ---------------------------------------------------------------- info

func newNodeInfoCmd(f *cli.Factory) *cobra.Command {
	var (
		format  cli.OutputFormat
		cluster string
	)
	cmd := &cobra.Command{
		Use:   "info NODE",
		Short: "Show a node: addresses, pool, capacity, conditions, taints and its units",
		Long:  "NODE is a node's name or one of its addresses.",
		Args:  cli.ExactArgs("NODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			found, err := findNode(cmd, f, args[0], cluster)
			if err != nil {
				return err
			}
			info, err := node.GetInfo(cmd.Context(), found)
			if err != nil {
				return err
			}
			return cli.OutputOptions{Format: format}.Print(f.IOStreams, info, func() error { return printNodeInfo(f.IOStreams, info) })
		},
	}
	addClusterFlag(cmd, &cluster)
	cli.AddFormatFlag(cmd, &format)
	return cmd
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
	line("Status", status)
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
	var sys []string
	for _, s := range []string{in.System.KubeletVersion, in.System.OSImage, in.System.Architecture, in.System.ContainerRuntime} {
		if s != "" {
			sys = append(sys, s)
		}
	}
	line("System", strings.Join(sys, ", "))
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

// ---------------------------------------------------------------- add

type nodeAddOptions struct {
	node.AddOptions
	Metadata []string
	Cluster  string
	Output   cli.OutputFormat
}

func newNodeAddCmd(f *cli.Factory) *cobra.Command {
	o := &nodeAddOptions{}
	cmd := &cobra.Command{
		Use:   "add ADDRESS --pool POOL",
		Short: "Put a node in a pool, or register a node whose kubelet will join",
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
			if o.Pool == "" {
				return usage.Errorf("missing --pool: the pool the node joins")
			}
			if err := kube.ValidateLabelValue("pool", o.Pool); err != nil {
				return usage.Wrap(err)
			}
			if _, err := node.NodeName(o.Address); err != nil {
				return usage.Wrap(err)
			}
			md, err := node.ParseMetadata(o.Metadata, false)
			if err != nil {
				return usage.Wrap(err)
			}
			o.AddOptions.Metadata = md
			t, err := poolTarget(f, o.Pool, o.Cluster)
			if err != nil {
				return err
			}
			res, err := node.Add(cmd.Context(), t, o.AddOptions)
			if err != nil {
				return err
			}
			return cli.OutputOptions{Format: o.Output}.Print(f.IOStreams, res, func() error {
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
				_, err := fmt.Fprintln(f.IOStreams.Out, msg)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "Pool the node joins (required)")
	cmd.Flags().StringVar(&o.IaaSID, "iaas-id", "", "The machine's id at its provider")
	cmd.Flags().StringArrayVar(&o.Metadata, "metadata", nil, "Metadata KEY=VALUE to record on the node; repeat for several")
	addClusterFlag(cmd, &o.Cluster)
	cli.AddFormatFlag(cmd, &o.Output)
	return cmd
}

// ---------------------------------------------------------------- update

type nodeUpdateOptions struct {
	node.UpdateOptions
	Metadata []string
	Cluster  string
	Output   cli.OutputFormat
}

func newNodeUpdateCmd(f *cli.Factory) *cobra.Command {
	o := &nodeUpdateOptions{}
	cmd := &cobra.Command{
		Use:   "update NODE",
		Short: "Change a node's pool or metadata, or disable and enable it",
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
				return usage.Wrap(err)
			}
			o.UpdateOptions.Metadata = md
			if err := o.Validate(); err != nil {
				return usage.Wrap(err)
			}
			found, err := findNode(cmd, f, args[0], o.Cluster)
			if err != nil {
				return err
			}
			if o.Pool != "" {
				if err := checkPoolCluster(f, o.Pool, found); err != nil {
					return err
				}
			}
			res, err := node.Update(cmd.Context(), found, o.UpdateOptions)
			if err != nil {
				return err
			}
			return cli.OutputOptions{Format: o.Output}.Print(f.IOStreams, res, func() error {
				if !res.Changed {
					_, err := fmt.Fprintf(f.IOStreams.Out, "node %q already as asked (%s); nothing changed\n", res.Node.Name, res.Node.Status)
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
				_, err := fmt.Fprintln(f.IOStreams.Out, msg)
				return err
			})
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

// checkPoolCluster refuses to move a node into a pool that another cluster
// holds: its apps would never be scheduled there.
func checkPoolCluster(f *cli.Factory, pool string, found *node.Found) error {
	cfg, err := loadClusters()
	if err != nil {
		return err
	}
	if owner, ok := cfg.OwnerOfPool(pool); ok && owner.Name != found.Target.Name && owner.Context != found.Target.Context {
		return usage.Errorf("pool %q belongs to cluster %q, but node %q is in cluster %q; see 'tug cluster list'", pool, owner.Name, found.Node.Name, found.Target.Name)
	}
	return nil
}

// ---------------------------------------------------------------- remove

type nodeRemoveOptions struct {
	node.RemoveOptions
	Yes     bool
	Cluster string
	Output  cli.OutputFormat
}

func newNodeRemoveCmd(f *cli.Factory) *cobra.Command {
	o := &nodeRemoveOptions{}
	cmd := &cobra.Command{
		Use:     "remove NODE",
		Aliases: []string{"rm"},
		Short:   "Move a node's units elsewhere and remove it from its cluster",
		Long: `Remove a node. First it is cordoned and its pods are evicted through the
Eviction API, so PodDisruptionBudgets are respected: while a budget refuses,
tug retries and says which budget blocks. Units move app-aware: before the
last ready unit of a process leaves, the process gets one more unit on
another node and tug waits for it to be ready, then restores the count, so
even a single-unit app keeps serving. DaemonSet and static pods stay (they go
with the node). Pods no controller would recreate, or with emptyDir data,
stop the removal before anything changes unless --force or
--delete-emptydir-data allow them. Once the pods are gone the Node is
deleted.

If moving the pods fails or --timeout passes, the node stays cordoned and is
not deleted: run the command again, or 'tug node update NODE --enable'.

--no-rebalance deletes only the Node object: its pods are left to Kubernetes'
garbage collection. A machine whose kubelet still runs registers again when
the kubelet restarts: stop it first.`,
		Example: `  tug node remove node7
  tug node remove node7 --dry-run
  tug node remove node7 --timeout 10m --yes`,
		Args: cli.ExactArgs("NODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.NoRebalance && (o.Force || o.DeleteEmptyDirData || o.KeepNode || o.PodSelector != "" || o.PodNamespace != "") {
				return usage.Errorf("--no-rebalance moves nothing; it cannot be combined with --force, --delete-emptydir-data, --keep-node, --pod-selector or --pod-namespace")
			}
			if (o.PodSelector != "" || o.PodNamespace != "") && !o.KeepNode {
				return usage.Errorf("--pod-selector and --pod-namespace need --keep-node: deleting the node would strand the pods they leave")
			}
			if o.Timeout < 0 {
				return usage.Errorf("invalid --timeout %s: must not be negative", o.Timeout)
			}
			found, err := findNode(cmd, f, args[0], o.Cluster)
			if err != nil {
				return err
			}
			if !o.DryRun {
				action := fmt.Sprintf("remove node %q from cluster %s", found.Node.Name, found.Target.Name)
				if o.NoRebalance {
					action = fmt.Sprintf("delete node %q from cluster %s without moving its pods", found.Node.Name, found.Target.Name)
				} else if o.KeepNode {
					action = fmt.Sprintf("move every pod off node %q (cluster %s)", found.Node.Name, found.Target.Name)
				}
				if err := cli.ConfirmOrFlag(cmd.Context(), f.IOStreams, f.Prompter(), o.Yes, cli.Confirmation{Action: action}); err != nil {
					return err
				}
				o.Holder = kube.Holder(kube.WhoAmI(cmd.Context(), found.Target.Client, ""))
			}
			p := f.Progress()
			o.Progress = p
			res, err := node.Remove(cmd.Context(), found, o.RemoveOptions)
			if err != nil {
				if res != nil && cmd.Context().Err() == nil {
					p.Fail(fmt.Sprintf("node %s not removed", found.Node.Name))
				} else if res != nil {
					p.Fail(fmt.Sprintf("interrupted: node %s stays cordoned and was not deleted; 'tug node update %s --enable' puts it back in service", found.Node.Name, found.Node.Name))
				}
				return err
			}
			switch {
			case o.DryRun:
			case res.Deleted:
				p.Done(fmt.Sprintf("node %s removed", res.Node))
			default:
				p.Done(fmt.Sprintf("node %s drained; it stays cordoned", res.Node))
			}
			return cli.OutputOptions{Format: o.Output}.Print(f.IOStreams, res, func() error { return printRemoveResult(f.IOStreams, res) })
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.NoRebalance, "no-rebalance", false, "Only delete the Node object; move no pods")
	fl.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long moving the pods may take (0: no limit); after it the node stays cordoned")
	fl.BoolVar(&o.Force, "force", false, "Also evict pods no controller will recreate (they are lost)")
	fl.BoolVar(&o.DeleteEmptyDirData, "delete-emptydir-data", false, "Also evict pods with emptyDir volumes (their data is lost)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "Show what would be moved, surged and skipped; change nothing")
	fl.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation")
	// A drain that keeps the Node, optionally limited to some pods: what
	// the end-to-end tests use on a shared cluster's real nodes.
	fl.BoolVar(&o.KeepNode, "keep-node", false, "Move the pods but keep the Node object, cordoned")
	fl.StringVar(&o.PodSelector, "pod-selector", "", "With --keep-node: only move pods matching this label selector")
	fl.StringVar(&o.PodNamespace, "pod-namespace", "", "With --keep-node: only move pods of this namespace")
	_ = fl.MarkHidden("keep-node")
	_ = fl.MarkHidden("pod-selector")
	_ = fl.MarkHidden("pod-namespace")
	addClusterFlag(cmd, &o.Cluster)
	cli.AddFormatFlag(cmd, &o.Output)
	return cmd
}

func printRemoveResult(ios *cli.IOStreams, r *node.RemoveResult) error {
	w := ios.Out
	verb := map[bool]string{true: "would move", false: "moved"}[r.DryRun]
	fmt.Fprintf(w, "node %s (cluster %s): %s %d %s\n", r.Node, r.Cluster, verb, len(r.Evicted), text.Plural(len(r.Evicted), "pod", "pods"))
	for _, s := range r.Surges {
		state := ""
		switch {
		case r.DryRun:
			state = " (would surge first)"
		case s.Restored:
			state = fmt.Sprintf(" (surged to %d while moving, restored)", s.To)
		default:
			state = fmt.Sprintf(" (surged to %d while moving; count changed since, left as is)", s.To)
		}
		fmt.Fprintf(w, "  %s/%s %s: %d %s%s\n", s.Namespace, s.App, s.Process, s.From, text.Plural(int(s.From), "unit", "units"), state)
	}
	for _, p := range r.Evicted {
		what := ""
		if p.App != "" {
			what = fmt.Sprintf(" (unit of %s, %s)", p.App, p.Process)
		}
		fmt.Fprintf(w, "  %s %s%s\n", map[bool]string{true: "evict", false: "evicted"}[r.DryRun], p, what)
	}
	for _, p := range r.Skipped {
		fmt.Fprintf(w, "  left %s: %s\n", p, p.Reason)
	}
	switch {
	case r.DryRun && r.Deleted:
		fmt.Fprintln(w, "then the node would be deleted")
	case r.DryRun:
		fmt.Fprintln(w, "the node would stay, cordoned")
	case r.Deleted:
		fmt.Fprintln(w, "node deleted")
	default:
		fmt.Fprintln(w, "the node stays, cordoned; 'tug node update "+r.Node+" --enable' puts it back in service")
	}
	return nil
}
