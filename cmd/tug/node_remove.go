package main

// tug node remove.

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/lock"
	"tug.dev/tug/pkg/node"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/text"
)

// ---------------------------------------------------------------- remove

// nodeRemoveOptions are `tug node remove`.
type nodeRemoveOptions struct {
	IO       *cli.IOStreams
	Targets  func(only string) ([]cluster.Target, error)
	Prompter func() cli.Prompter
	Reporter func() progress.Reporter

	Node string
	node.RemoveOptions
	Yes     bool
	Cluster string
	Output  cli.OutputFormat
}

func newNodeRemoveCmd(f *cli.Factory, runF func(context.Context, *nodeRemoveOptions) error) *cobra.Command {
	o := &nodeRemoveOptions{IO: f.IOStreams, Targets: targetsFor(f), Prompter: f.Prompter, Reporter: f.Progress}
	cmd := &cobra.Command{
		Use:         "remove NODE",
		Annotations: atLevel(levelClusterAdmin, argsAre(argNode)),
		Aliases:     []string{"rm", "delete"},
		Short:       "Move a node's units elsewhere and remove it from its cluster",
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

Surging a process takes its app's deploy lock, a Lease in the app's
namespace: that needs the tug-cluster-admin-apps ClusterRole bound there. A
namespace without it stops the removal before anything changes, with the
kubectl command that binds it.

--no-rebalance deletes only the Node object: its pods are left to Kubernetes'
garbage collection. A machine whose kubelet still runs registers again when
the kubelet restarts: stop it first.`,
		Example: `  tug node remove node7
  tug node remove node7 --dry-run
  tug node remove node7 --timeout 10m --yes`,
		Args: cli.ExactArgs("NODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Node = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			if err := node.ValidateRef(o.Node); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runNodeRemove(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.NoRebalance, "no-rebalance", false, "Only delete the Node object; move no pods")
	fl.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long moving the pods may take (0: no limit); after it the node stays cordoned")
	fl.BoolVar(&o.Force, "force", false, "Also evict pods no controller will recreate (they are lost)")
	fl.BoolVar(&o.DeleteEmptyDirData, "delete-emptydir-data", false, "Also evict pods with emptyDir volumes (their data is lost)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "Show what would be moved, surged and skipped; change nothing")
	fl.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation")
	addDrainTestFlags(fl, &o.RemoveOptions)
	addClusterFlag(cmd, &o.Cluster)
	cli.AddFormatFlag(cmd, &o.Output)
	return cmd
}

// runNodeRemove removes the node as o says, after asking (unless --yes
// or --dry-run).
func runNodeRemove(ctx context.Context, o *nodeRemoveOptions) error {
	found, err := findNode(ctx, o.Targets, o.Node, o.Cluster)
	if err != nil {
		return err
	}
	if !o.DryRun {
		if err := cli.ConfirmOrFlag(ctx, o.IO, o.Prompter(), o.Yes, cli.Confirmation{Action: o.action(found)}); err != nil {
			return err
		}
		o.User = kube.WhoAmI(ctx, found.Target.Client, "")
		o.Holder = lock.Self(o.User)
	}
	p := o.Reporter()
	o.Progress = p
	res, err := node.Remove(ctx, found, o.RemoveOptions)
	if err != nil {
		if res != nil && ctx.Err() == nil {
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
	return cli.OutputOptions{Format: o.Output}.Print(o.IO, res, func() error { return printRemoveResult(o.IO, res) })
}

// action is what the confirmation asks to do.
func (o *nodeRemoveOptions) action(found *node.Found) string {
	switch {
	case o.NoRebalance:
		return fmt.Sprintf("delete node %q from cluster %s without moving its pods", found.Node.Name, found.Target.Name)
	case o.KeepNode:
		return fmt.Sprintf("move every pod off node %q (cluster %s)", found.Node.Name, found.Target.Name)
	}
	return fmt.Sprintf("remove node %q from cluster %s", found.Node.Name, found.Target.Name)
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
