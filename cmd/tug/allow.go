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
a node answers only if it runs a web unit). Behind a router the units see the
router's address, so the router enforces the list, as the cluster setting
router names it: through Traefik an ipAllowList Middleware on the app's
routes and Ingresses (refused requests get 403), through ingress-nginx its
source-range annotations on the app's Ingresses; through any other router the
list is not enforced there, and tug warns. Where the NetworkPolicy is
enforced, the router's own pods must be in the list too (see docs/guide.md).

The command returns once the router serves the change, where a request from
tug's own address can tell: refused when the list leaves it out, answered
when it lets it in.`,
		Args: cli.GroupArgs,
		RunE: cli.GroupRunE,
	}
	cmd.AddCommand(takesLock(newAllowEditCmd(f, "add", "Admit these sources", false)),
		takesLock(newAllowEditCmd(f, "remove", "Stop admitting these sources", true)), newAllowListCmd(f))
	return cmd
}

func newAllowEditCmd(f *cli.Factory, use, short string, remove bool) *cobra.Command {
	var aliases []string
	annotations := argsAre(argApp)
	if remove {
		aliases, annotations = []string{"rm", "delete"}, deleting(argApp)
	}
	return &cobra.Command{
		Use:         use + " APP CIDR...",
		Annotations: annotations,
		Aliases:     aliases,
		Short:       short,
		Example:     "  tug app allow " + use + " shop 10.0.0.0/8 192.168.1.7",
		Args:        cli.Args("APP", "CIDR..."),
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
		Use:         "list APP",
		Annotations: argsAre(argApp),
		Aliases:     []string{"ls"},
		Short:       "List the allowed sources (none: everyone is admitted)",
		Example:     "  tug app allow list shop",
		Args:        cli.ExactArgs("APP"),
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
