package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/traffic"
)

func newDomainCmd(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "domain",
		Short: "Route host names to an app",
		Long: `Domains send traffic for a host (and path) to the app's web Service: through
the app's HTTPRoute where the cluster has a Gateway for the app (named by the
cluster settings, or the one Gateway that admits routes from the namespace),
else through one Ingress per app, which an ingress controller in the cluster
serves. A domain with a certificate of its own always goes through the Ingress.`,
		Args:    cli.GroupArgs,
		RunE:    cli.GroupRunE,
		GroupID: "apps",
	}
	cmd.AddCommand(newDomainAddCmd(f, nil), newDomainRemoveCmd(f, nil), newDomainListCmd(f, nil))
	return cmd
}

// domainAddOptions are `tug domain add`.
type domainAddOptions struct {
	Changer appChanger
	traffic.DomainAddOptions
	Format cli.OutputFormat
}

func newDomainAddCmd(f *cli.Factory, runF func(context.Context, *domainAddOptions) error) *cobra.Command {
	o := &domainAddOptions{}
	cmd := &cobra.Command{
		Use:         "add APP HOST",
		Annotations: argsAre(argApp, argHost),
		Short:       "Route a host (and path) to the app",
		Example:     "  tug domain add shop shop.example.com\n  tug domain add shop example.com --path /shop --ingress-class nginx\n  tug domain add shop shop.example.com -o json",
		Args:        cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Host = args[0], args[1]
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runDomainAdd(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	takesLock(cmd, &o.Changer.WaitLock)
	cli.AddFormatFlag(cmd, &o.Format)
	cmd.Flags().StringVar(&o.IngressClass, "ingress-class", "", "IngressClass to use (default: the cluster's default class)")
	cmd.Flags().StringVar(&o.Path, "path", "/", "URL path prefix that routes to the app")
	return cmd
}

func runDomainAdd(ctx context.Context, o *domainAddOptions) error {
	return changeDomain(ctx, o.Changer, o.App, fmt.Sprintf("%s%s routes to %s", o.Host, o.Path, o.App), o.Format, func(d deploy.Deps) (*traffic.DomainResult, error) {
		return traffic.DomainAdd(ctx, d, o.DomainAddOptions, trafficOptions)
	})
}

// domainRemoveOptions are `tug domain remove`.
type domainRemoveOptions struct {
	Changer appChanger

	App    string
	Host   string
	Format cli.OutputFormat
}

func newDomainRemoveCmd(f *cli.Factory, runF func(context.Context, *domainRemoveOptions) error) *cobra.Command {
	o := &domainRemoveOptions{}
	cmd := &cobra.Command{
		Use:         "remove APP HOST",
		Annotations: deleting(argApp, argHost),
		Aliases:     []string{"rm", "delete"},
		Short:       "Stop routing a host to the app (its certificate goes too)",
		Example:     `  tug domain remove shop shop.example.com`,
		Args:        cli.ExactArgs("APP", "HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Host = args[0], args[1]
			if err := checkApp(o.App); err != nil {
				return err
			}
			if err := traffic.ValidateHost(o.Host); err != nil {
				return inputerr.Wrap(err)
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runDomainRemove(cmd.Context(), o)
		},
	}
	o.Changer = changerFor(f)
	takesLock(cmd, &o.Changer.WaitLock)
	cli.AddFormatFlag(cmd, &o.Format)
	return cmd
}

func runDomainRemove(ctx context.Context, o *domainRemoveOptions) error {
	return changeDomain(ctx, o.Changer, o.App, strings.ToLower(o.Host)+" removed", o.Format, func(d deploy.Deps) (*traffic.DomainResult, error) {
		return traffic.DomainRemove(ctx, d, o.App, o.Host, trafficOptions)
	})
}

// changeDomain is changeTraffic for a domain change: with -o json|yaml its
// result goes to stdout (docs/output.md), the done line to stderr as ever.
func changeDomain(ctx context.Context, c appChanger, appName, done string, format cli.OutputFormat, action func(d deploy.Deps) (*traffic.DomainResult, error)) error {
	var out *traffic.DomainResult
	err := changeTraffic(ctx, c, appName, done, func(d deploy.Deps) (*deploy.Result, error) {
		var err error
		if out, err = action(d); err != nil {
			return nil, err
		}
		return out.Rollout, nil
	})
	if err != nil || format == cli.OutputTable {
		return err
	}
	return (cli.OutputOptions{Format: format}).Print(c.IO, out, nil)
}

// domainListOptions are `tug domain list`.
type domainListOptions struct {
	IO          *cli.IOStreams
	Store       func() (*app.Store, error)
	CommandName string

	App    string
	Output cli.OutputOptions
}

func newDomainListCmd(f *cli.Factory, runF func(context.Context, *domainListOptions) error) *cobra.Command {
	o := &domainListOptions{IO: f.IOStreams, Store: storeFor(f), CommandName: f.CommandName}
	cmd := &cobra.Command{
		Use:         "list APP",
		Annotations: argsAre(argApp),
		Aliases:     []string{"ls"},
		Short:       "List the app's domains",
		Example:     `  tug domain list shop`,
		Args:        cli.ExactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App = args[0]
			if err := app.ValidateName(o.App); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runDomainList(cmd.Context(), o)
		},
	}
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runDomainList(ctx context.Context, o *domainListOptions) error {
	s, err := o.Store()
	if err != nil {
		return err
	}
	a, err := s.GetApp(ctx, o.App)
	if err != nil {
		return err
	}
	domains := a.Domains
	if domains == nil {
		domains = []app.Domain{}
	}
	return o.Output.Print(o.IO, domains, func() error {
		if len(domains) == 0 {
			fmt.Fprintf(o.IO.ErrOut, "app %q has no domains; add one with '%s domain add %s HOST'\n", a.Name, o.CommandName, a.Name)
			return nil
		}
		t := cli.NewTable("host", "path", "tls", "ingress-class")
		for _, d := range domains {
			t.AddRow(d.Host, d.Path, dash(d.TLSSecret), dash(d.IngressClass))
		}
		return t.Render(o.IO, o.Output.NoHeaders)
	})
}
