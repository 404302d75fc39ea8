package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/clustersettings"
)

// ---------------------------------------------------------------- cluster settings

func newClusterSettingsCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "settings",
		Short: "What this cluster offers every app: its Gateway, apps domain, certificate issuer, build images",
		Long: `Cluster settings are written once by an admin and read by every user of the
cluster from the cluster itself (ConfigMap kube-public/tug-cluster-settings,
readable by every authenticated user), never from one user's environment.
A setting applies to the whole cluster; with --pool it applies to that pool's
apps only, over the cluster's.

Keys:
` + settingKeysHelp(),
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		Example: "  tug cluster settings show\n  tug cluster settings set gateway=infra/public appsDomain=apps.example.com",
	}
	cmd.AddCommand(newClusterSettingsShowCmd(f, nil), newClusterSettingsSetCmd(f, nil, false), newClusterSettingsSetCmd(f, nil, true))
	return cmd
}

func settingKeysHelp() string {
	s := ""
	for _, k := range clustersettings.Keys {
		s += fmt.Sprintf("  %-16s %s\n", k.Key, k.About)
	}
	return s + "  " + clustersettings.ServiceImageAbout + "\n"
}

// clusterSettingsShowOptions are `tug cluster settings show`.
type clusterSettingsShowOptions struct {
	IO     *cli.IOStreams
	Output cli.OutputOptions
	Read   func(context.Context) (*clustersettings.Stored, error)
}

func newClusterSettingsShowCmd(f *cli.Factory, runF func(context.Context, *clusterSettingsShowOptions) error) *cobra.Command {
	o := &clusterSettingsShowOptions{IO: f.IOStreams, Read: settingsReader(f)}
	cmd := &cobra.Command{
		Use:         "show",
		Annotations: atLevel(levelNone, nil),
		Aliases:     []string{"list", "ls"},
		Short:       "Show the cluster's settings, and each pool's",
		Example:     "  tug cluster settings show\n  tug cluster settings show -o json",
		Args:        cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runClusterSettingsShow(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runClusterSettingsShow(ctx context.Context, o *clusterSettingsShowOptions) error {
	s, err := o.Read(ctx)
	if err != nil {
		return err
	}
	return o.Output.Print(o.IO, s, func() error {
		if s.Unreadable {
			fmt.Fprintf(o.IO.ErrOut, "you may not read this cluster's settings (ConfigMap %s/%s); tug goes on without them: ask its admin\n", clustersettings.Namespace, clustersettings.Name)
			return nil
		}
		t := cli.NewTable("scope", "key", "value")
		rows := 0
		for _, k := range clustersettings.Keys {
			if v := s.Cluster[k.Key]; v != "" {
				t.AddRow("cluster", k.Key, v)
				rows++
			}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Cluster)) {
			if clustersettings.ServiceImageKey(k) {
				t.AddRow("cluster", k, s.Cluster[k])
				rows++
			}
		}
		pools := make([]string, 0, len(s.Pools))
		for p := range s.Pools {
			pools = append(pools, p)
		}
		sort.Strings(pools)
		for _, p := range pools {
			for _, k := range clustersettings.Keys {
				if v := s.Pools[p][k.Key]; v != "" {
					t.AddRow("pool "+p, k.Key, v)
					rows++
				}
			}
		}
		if rows == 0 {
			fmt.Fprintln(o.IO.ErrOut, "this cluster has no tug settings: apps route through Ingresses only, and builds use tug's default images; an admin sets them with 'tug cluster settings set KEY=VALUE'")
			return nil
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}

// clusterSettingsSetOptions are `tug cluster settings set|unset`.
type clusterSettingsSetOptions struct {
	IO     *cli.IOStreams
	Change clustersettings.Change
	Write  func(context.Context, clustersettings.Change) (*clustersettings.Stored, error)
}

func newClusterSettingsSetCmd(f *cli.Factory, runF func(context.Context, *clusterSettingsSetOptions) error, unset bool) *cobra.Command {
	o := &clusterSettingsSetOptions{IO: f.IOStreams, Write: settingsWriter(f)}
	use, short, example := "set KEY=VALUE...", "Set cluster settings (admins)", "  tug cluster settings set gateway=infra/public appsDomain=apps.example.com\n  tug cluster settings set ingressClass=nginx --pool gpu"
	if unset {
		use, short, example = "unset KEY...", "Remove cluster settings (admins)", "  tug cluster settings unset certIssuer\n  tug cluster settings unset gateway --pool gpu"
	}
	cmd := &cobra.Command{
		Use:         use,
		Annotations: atLevel(levelClusterAdmin, nil),
		Short:       short,
		Example:     example,
		Args:        cli.Args(map[bool]string{false: "KEY=VALUE...", true: "KEY..."}[unset]),
		RunE: func(cmd *cobra.Command, args []string) error {
			if unset {
				o.Change.Unset = args
			} else {
				set, err := clustersettings.ParseAssignments(args)
				if err != nil {
					return err
				}
				o.Change.Set = set
			}
			if err := o.Change.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runClusterSettingsSet(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Change.Pool, "pool", "", "Apply to this pool's apps only, over the cluster's setting")
	return cmd
}

func runClusterSettingsSet(ctx context.Context, o *clusterSettingsSetOptions) error {
	s, err := o.Write(ctx, o.Change)
	if err != nil {
		return err
	}
	scope := "the cluster"
	values := s.Cluster
	if o.Change.Pool != "" {
		scope, values = "pool "+o.Change.Pool, s.Pools[o.Change.Pool]
	}
	keys := make([]string, 0, len(o.Change.Set)+len(o.Change.Unset))
	for k := range o.Change.Set {
		keys = append(keys, k)
	}
	keys = append(keys, o.Change.Unset...)
	slices.Sort(keys)
	for _, k := range keys {
		if v, ok := values[k]; ok {
			fmt.Fprintf(o.IO.Out, "%s: %s=%s\n", scope, k, v)
		} else {
			fmt.Fprintf(o.IO.Out, "%s: %s unset\n", scope, k)
		}
	}
	fmt.Fprintln(o.IO.ErrOut, "apps pick the change up at their next deploy or traffic change")
	return nil
}

func settingsReader(f *cli.Factory) func(context.Context) (*clustersettings.Stored, error) {
	return func(ctx context.Context) (*clustersettings.Stored, error) {
		client, err := f.KubeClient()
		if err != nil {
			return nil, err
		}
		return clustersettings.Read(ctx, client)
	}
}

func settingsWriter(f *cli.Factory) func(context.Context, clustersettings.Change) (*clustersettings.Stored, error) {
	return func(ctx context.Context, c clustersettings.Change) (*clustersettings.Stored, error) {
		client, err := f.KubeClient()
		if err != nil {
			return nil, err
		}
		return clustersettings.Write(ctx, client, c)
	}
}
