package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
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
	cmd.AddCommand(newAllowEditCmd(f, nil, "add", "Admit these sources", false),
		newAllowEditCmd(f, nil, "remove", "Stop admitting these sources", true), newAllowListCmd(f, nil))
	return cmd
}

// allowEditOptions are `tug app allow add|remove`.
type allowEditOptions struct {
	Changer appChanger
	traffic.AllowOptions
}

func newAllowEditCmd(f *cli.Factory, runF func(context.Context, *allowEditOptions) error, use, short string, remove bool) *cobra.Command {
	o := &allowEditOptions{}
	var aliases []string
	annotations := argsAre(argApp)
	if remove {
		aliases, annotations = []string{"rm", "delete"}, deleting(argApp)
	}
	cmd := &cobra.Command{
		Use:         use + " APP CIDR...",
		Annotations: annotations,
		Aliases:     aliases,
		Short:       short,
		Example:     "  tug app allow " + use + " shop 10.0.0.0/8 192.168.1.7",
		Args:        cli.Args("APP", "CIDR..."),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.AllowOptions = traffic.AllowOptions{App: args[0], Sources: args[1:], Remove: remove}
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAllowEdit(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	takesLock(cmd, &o.Changer.WaitLock)
	return cmd
}

func runAllowEdit(ctx context.Context, o *allowEditOptions) error {
	return changeTraffic(ctx, o.Changer, o.App, "allowed sources changed", func(d deploy.Deps) (*deploy.Result, error) {
		return traffic.Allow(ctx, d, o.AllowOptions, trafficOptions)
	})
}

// allowListOptions are `tug app allow list`.
type allowListOptions struct {
	IO    *cli.IOStreams
	Store func() (*app.Store, error)

	App    string
	Output cli.OutputOptions
}

func newAllowListCmd(f *cli.Factory, runF func(context.Context, *allowListOptions) error) *cobra.Command {
	o := &allowListOptions{IO: f.IOStreams, Store: storeFor(f)}
	cmd := &cobra.Command{
		Use:         "list APP",
		Annotations: argsAre(argApp),
		Aliases:     []string{"ls"},
		Short:       "List the allowed sources (none: everyone is admitted)",
		Example:     "  tug app allow list shop",
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAllowList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runAllowList(ctx context.Context, o *allowListOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	a, err := s.GetApp(ctx, o.App)
	if err != nil {
		return err
	}
	allow := a.Allow
	if allow == nil {
		allow = []string{}
	}
	return o.Output.Print(o.IO, allow, func() error {
		if len(allow) == 0 {
			fmt.Fprintln(o.IO.ErrOut, "no restriction: every source is admitted")
			return nil
		}
		t := cli.NewTable("cidr")
		for _, c := range allow {
			t.AddRow(c)
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}
