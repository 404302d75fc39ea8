package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/traffic"
)

func newAllowCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "allow",
		Short: "Admit only some source addresses to the app's web units",
		Long: `With allowed sources set, a NetworkPolicy admits traffic to the web units
only from those CIDRs; with none, all sources are admitted. The cluster's
network plugin enforces NetworkPolicies (not every plugin does).

The node port then keeps the client's address (externalTrafficPolicy Local:
a node answers only if it runs a web unit). Behind an ingress the units see
the controller's address: tug sets ingress-nginx's source-range annotations,
and the controller's own pods must be in the list (see docs/guide.md).`,
		Args: cli.GroupArgs,
		RunE: cli.GroupRunE,
	}
	cmd.AddCommand(takesLock(newAllowEditCmd(f, "add", "Admit these sources", false)),
		takesLock(newAllowEditCmd(f, "remove", "Stop admitting these sources", true)), newAllowListCmd(f))
	return cmd
}

func newAllowEditCmd(f *cli.Factory, use, short string, remove bool) *cobra.Command {
	var aliases []string
	if remove {
		aliases = []string{"rm", "delete"}
	}
	return &cobra.Command{
		Use:     use + " APP CIDR...",
		Aliases: aliases,
		Short:   short,
		Example: "  tug app allow " + use + " shop 10.0.0.0/8 192.168.1.7",
		Args:    cli.Args("APP", "CIDR..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := traffic.AllowOptions{App: args[0], Sources: args[1:], Remove: remove}
			if err := o.Validate(); err != nil {
				return err
			}
			return configure(cmd, f, o.App, "allowed sources changed", func(d deploy.Deps) (*deploy.Result, error) {
				return traffic.Allow(cmd.Context(), d, o, trafficOptions)
			})
		},
	}
}

func newAllowListCmd(f *cli.Factory) *cobra.Command {
	o := &cli.OutputOptions{}
	cmd := &cobra.Command{
		Use:     "list APP",
		Aliases: []string{"ls"},
		Short:   "List the allowed sources (none: everyone is admitted)",
		Example: "  tug app allow list shop",
		Args:    cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, a, err := loadApp(cmd, f, args[0])
			if err != nil {
				return err
			}
			allow := a.Allow
			if allow == nil {
				allow = []string{}
			}
			return o.Print(f.IOStreams, allow, func() error {
				if len(allow) == 0 {
					fmt.Fprintln(f.IOStreams.ErrOut, "no restriction: every source is admitted")
					return nil
				}
				t := cli.NewTable("cidr")
				for _, c := range allow {
					t.AddRow(c)
				}
				return t.Render(f.IOStreams, o.NoHeaders)
			})
		},
	}
	cli.AddOutputFlags(cmd, o)
	return cmd
}
