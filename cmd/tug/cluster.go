package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/cluster"
)

func newClusterCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Map pools to clusters (kubeconfig contexts)",
		Long: `A cluster is a kubeconfig context that holds some pools. Node commands span
every configured cluster; app commands go to the cluster that holds the app
(found by asking each), 'app create --pool P' to P's cluster, and
'app pool set APP P' moves the app to P's cluster.
The map lives in tug's config file ($TUG_CONFIG, else tug/config.yaml in your
config directory); credentials stay in the kubeconfig. With no cluster
configured, tug uses the kubeconfig's current context for everything.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "cluster",
	}
	cmd.AddCommand(newClusterAddCmd(f, nil), newClusterListCmd(f, nil), newClusterRemoveCmd(f, nil), newClusterSettingsCmd(f), newClusterPlansCmd(f))
	return cmd
}

// ---------------------------------------------------------------- helpers

// clusterAddOptions are `tug cluster add`.
type clusterAddOptions struct {
	IO *cli.IOStreams
	// Clusters loads tug's cluster map (loadClusters).
	Clusters func() (*cluster.Config, error)
	// HasContext says whether the kubeconfig has a context of that name.
	HasContext func(kubeContext string) (bool, error)

	cluster.Cluster
	Output cli.OutputFormat
}

func newClusterAddCmd(f *cli.Factory, runF func(context.Context, *clusterAddOptions) error) *cobra.Command {
	o := &clusterAddOptions{IO: f.IOStreams, Clusters: loadClusters, HasContext: func(kubeContext string) (bool, error) {
		raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
		_, ok := raw.Contexts[kubeContext]
		return ok, err
	}}
	cmd := &cobra.Command{
		Use:         "add NAME --context CONTEXT",
		Annotations: atLevel(levelNone, argsAre(argNewName)),
		Short:       "Add a cluster, or change one: which kubeconfig context holds which pools",
		Long: `Add a cluster to tug's map: a name, the kubeconfig context that reaches it,
and the pools it holds. Adding a name again replaces its entry. A pool
belongs to one cluster; the --default cluster holds the pools no cluster
names. Nothing is sent to the cluster: only the kubeconfig is read, to check
that the context exists.`,
		Example: `  tug cluster add prod --context prod-admin --pool web,worker --default
  tug cluster add gpu --context gpu-admin --pool gpu`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := o.CheckNew(o.HasContext); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runClusterAdd(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Context, "context", "", "Kubeconfig context that reaches the cluster (required)")
	cmd.Flags().StringSliceVar(&o.Pools, "pool", nil, "Pools the cluster holds (comma-separated, or repeat the flag)")
	// the pools of the cluster being added, not of the current one
	_ = cmd.RegisterFlagCompletionFunc("pool", cobra.NoFileCompletions)
	cmd.Flags().BoolVar(&o.Default, "default", false, "Hold the pools no cluster names")
	cli.AddFormatFlag(cmd, &o.Output)
	return cmd
}

func runClusterAdd(_ context.Context, o *clusterAddOptions) error {
	cfg, err := o.Clusters()
	if err != nil {
		return err
	}
	replaced, err := cfg.Add(o.Cluster)
	if err != nil {
		return err
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	saved, _ := cfg.Get(o.Name)
	return cli.OutputOptions{Format: o.Output}.Print(o.IO, saved, func() error {
		verb := "added"
		if replaced {
			verb = "updated"
		}
		_, err := fmt.Fprintf(o.IO.Out, "cluster %q %s: context %q, %s\n", saved.Name, verb, saved.Context, describePools(saved))
		return err
	})
}

func describePools(c cluster.Cluster) string {
	var parts []string
	if len(c.Pools) > 0 {
		parts = append(parts, "pools "+strings.Join(c.Pools, ", "))
	}
	if c.Default {
		parts = append(parts, "the default for other pools")
	}
	if len(parts) == 0 {
		return "no pools yet (add some with --pool, or --default)"
	}
	return strings.Join(parts, "; ")
}

// ---------------------------------------------------------------- list

// clusterListOptions are `tug cluster list`.
type clusterListOptions struct {
	IO          *cli.IOStreams
	Clusters    func() (*cluster.Config, error)
	CommandName string
	// Contexts are the kubeconfig's contexts, to warn of a cluster whose
	// context is missing.
	Contexts func() (map[string]bool, error)

	Output cli.OutputOptions
}

func newClusterListCmd(f *cli.Factory, runF func(context.Context, *clusterListOptions) error) *cobra.Command {
	o := &clusterListOptions{IO: f.IOStreams, Clusters: loadClusters, CommandName: f.CommandName, Contexts: func() (map[string]bool, error) {
		raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, err
		}
		names := map[string]bool{}
		for name := range raw.Contexts {
			names[name] = true
		}
		return names, nil
	}}
	cmd := &cobra.Command{
		Use:         "list",
		Annotations: atLevel(levelNone, nil),
		Aliases:     []string{"ls"},
		Short:       "List the configured clusters and their pools",
		Example: `  tug cluster list
  tug cluster list -o json`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runClusterList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runClusterList(_ context.Context, o *clusterListOptions) error {
	cfg, err := o.Clusters()
	if err != nil {
		return err
	}
	clusters := cfg.Clusters
	if clusters == nil {
		clusters = []cluster.Cluster{}
	}
	contexts, ctxErr := o.Contexts()
	return o.Output.Print(o.IO, clusters, func() error {
		if len(clusters) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "no cluster configured: tug uses the kubeconfig's current context; add one with '%s cluster add NAME --context CONTEXT'\n", o.CommandName)
			return nil
		}
		t := cli.NewTable("name", "context", "pools", "default")
		for _, c := range clusters {
			def := ""
			if c.Default {
				def = "yes"
			}
			t.AddRow(c.Name, c.Context, strings.Join(c.Pools, ","), def)
		}
		if err := t.Render(o.IO, o.Output.NoHeaders); err != nil {
			return err
		}
		if ctxErr == nil {
			for _, c := range clusters {
				if !contexts[c.Context] {
					fmt.Fprintf(o.IO.ErrOut, "warning: cluster %q: context %q is not in the kubeconfig\n", c.Name, c.Context)
				}
			}
		}
		return nil
	})
}

// ---------------------------------------------------------------- remove

// clusterRemoveOptions are `tug cluster remove`.
type clusterRemoveOptions struct {
	IO       *cli.IOStreams
	Clusters func() (*cluster.Config, error)

	Name string
}

func newClusterRemoveCmd(f *cli.Factory, runF func(context.Context, *clusterRemoveOptions) error) *cobra.Command {
	o := &clusterRemoveOptions{IO: f.IOStreams, Clusters: loadClusters}
	cmd := &cobra.Command{
		Use:         "remove NAME",
		Annotations: atLevel(levelNone, argsAre(argCluster)),
		Aliases:     []string{"rm", "delete"},
		Short:       "Remove a cluster from tug's map (the cluster itself is untouched)",
		Example:     `  tug cluster remove edge`,
		Args:        cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runClusterRemove(cmd.Context(), o)
		},
	}
	return cmd
}

func runClusterRemove(_ context.Context, o *clusterRemoveOptions) error {
	cfg, err := o.Clusters()
	if err != nil {
		return err
	}
	removed, err := cfg.Remove(o.Name)
	if err != nil {
		return err
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	msg := fmt.Sprintf("cluster %q removed from tug's map", removed.Name)
	if len(removed.Pools) > 0 {
		if def, ok := cfg.Default(); ok {
			msg += fmt.Sprintf("; its pools (%s) now go to the default cluster %q", strings.Join(removed.Pools, ", "), def.Name)
		} else if len(cfg.Clusters) == 0 {
			msg += fmt.Sprintf("; its pools (%s) now go to the kubeconfig's current context", strings.Join(removed.Pools, ", "))
		} else {
			msg += fmt.Sprintf("; its pools (%s) belong to no cluster now", strings.Join(removed.Pools, ", "))
		}
	}
	_, err = fmt.Fprintln(o.IO.Out, msg)
	return err
}
